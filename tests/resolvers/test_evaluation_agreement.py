"""Tables of agreement between evaluations: a unit per agent of each episode, an evaluation's
score of it where it scored it, a panel's runs only when more than one gave scores, and the
dimensions any evaluation scored, in the order first met, then the overall score."""

from parley.engine.types import OVERALL_SCORE, JudgeRun
from parley.resolvers.evaluation_agreement import agreement, tables
from parley.storage.studies import ScoredEpisode, ScoredEvaluation
from tests.support.scores import reward


def episode(own: float, *evaluations: ScoredEvaluation) -> ScoredEpisode:
    return ScoredEpisode(
        agents=["a", "b"],
        models=["judge", "m1", "m2"],
        rewards=[reward(own), reward(own + 1)],
        evaluations=list(evaluations),
    )


def test_a_lone_run_is_no_panel() -> None:
    lone = [JudgeRun(model="x", repeat=0, rewards=[reward(5), reward(5)])]
    rejudged = ScoredEvaluation(id="r", rewards=[reward(5), reward(5)], judge_runs=lone)
    (goal, _) = tables([None, "r"], {"e1": episode(1, rejudged)})
    assert goal.runs == [{}, {}]
    assert agreement("key", [None, "r"], goal).panels == []


def test_each_evaluation_scores_the_units_it_judged() -> None:
    panel = [
        JudgeRun(model="x", repeat=0, rewards=[reward(1, tact=2), reward(2)]),
        JudgeRun(model="x", repeat=1, rewards=[reward(3), reward(4)]),
        JudgeRun(model="y", repeat=0, error="timed out"),
    ]
    lone = [JudgeRun(model="x", repeat=0, rewards=[reward(5), reward(5)])]
    episodes = {
        "e1": episode(
            1, ScoredEvaluation(id="r", rewards=[reward(2), reward(3)], judge_runs=panel)
        ),
        "e2": episode(5, ScoredEvaluation(id="r", rewards=[reward(5), reward(5)], judge_runs=lone)),
        "e3": episode(7),  # not re-judged
    }
    goal, tact, overall = tables([None, "r"], episodes)
    assert [goal.dimension, tact.dimension, overall.dimension] == ["goal", "tact", OVERALL_SCORE]
    assert goal.units == [("e1", 0), ("e1", 1), ("e2", 0), ("e2", 1), ("e3", 0), ("e3", 1)]
    assert goal.models == ["m1", "m2"] * 3
    assert goal.scores == [[1, 2, 5, 6, 7, 8], [2, 3, 5, 5, None, None]]
    assert goal.runs[0] == {}  # the episodes' own judge had no panel
    assert goal.runs[1] == {  # a failed run is no rater; x#0 is one run across episodes
        "x#0": [1, 2, 5, 5, None, None],
        "x#1": [3, 4, None, None, None, None],
    }
    assert tact.runs[1]["x#0"] == [2, None, None, None, None, None]

    figures = agreement("key", [None, "r"], goal)
    assert figures.units == 6
    assert [p.evaluation for p in figures.panels] == ["r"]
    assert figures.panels[0].alpha.n == 2  # units with two runs' scores
    (pair,) = figures.pairs
    assert (pair.first, pair.second, pair.pearson.n) == (None, "r", 4)
    assert agreement("key", [None, "r"], goal) == figures  # seeded by the key
