"""A study's rating tables: a unit per agent of each stored episode, a column per rater who
rated, the episodes' judge and each run of a panel beside them; a judge that gave no scores,
a failed run or a deleted episode adds no score."""

from parley.engine.types import OVERALL_SCORE, DimensionSpec, JudgeRun
from parley.resolvers.study_agreement import JUDGE, tables
from parley.resolvers.study_status import StudyRating
from parley.storage.models import AnnotationForEpisode, RatingStudy
from parley.storage.studies import ScoredEpisode
from tests.support.scores import reward

GOAL = DimensionSpec(name="goal", description="", range_low=0, range_high=10)


def episode(
    rewards: list[tuple[float, dict[str, float]] | float], runs: list[JudgeRun]
) -> ScoredEpisode:
    return ScoredEpisode(
        agents=["a", "b"],
        models=["judge", "model-a", "model-b"],
        rewards=rewards,
        judge_runs=runs,
    )


def rating(rater: int, pk: str, goals: tuple[float, float]) -> StudyRating:
    annotation = AnnotationForEpisode(
        pk=f"{rater}-{pk}",
        episode=pk,
        annotator_id=str(rater),
        rewards=[reward(g) for g in goals],
        reasoning="",
    )
    return StudyRating(rater, pk, annotation)


def test_the_tables_hold_each_source_by_unit() -> None:
    study = RatingStudy(pk="study", name="s", episode_ids=["e1", "e2", "gone", "e3"], rubric=[GOAL])
    panel = [
        JudgeRun(model="j", repeat=0, rewards=[reward(1), reward(2)]),
        JudgeRun(model="j", repeat=1, rewards=[reward(3), reward(4)]),
        JudgeRun(model="k", repeat=0, error="timed out"),
    ]
    single = [JudgeRun(model="j", repeat=0, rewards=[reward(9), reward(9)])]
    alone = episode([reward(5), reward(5)], single)
    episodes = {
        "e1": episode([reward(2), reward(3)], panel),
        "e2": episode([0.0, 0.0], single),  # the judge gave no scores
    }
    assert list(tables(study, [], {"e3": alone})[0].judges) == [JUDGE]  # no panel anywhere
    ratings = [rating(0, "e1", (5, 6)), rating(2, "e1", (7, 8)), rating(2, "e2", (1, 2))]

    goal, overall = tables(study, ratings, episodes)
    assert goal.dimension == "goal" and overall.dimension == OVERALL_SCORE
    assert goal.units == [("e1", 0), ("e1", 1), ("e2", 0), ("e2", 1)]  # "gone" is not stored
    assert goal.raters == [0, 2]  # rater 1 has rated nothing
    assert goal.humans == [[5, 7], [6, 8], [None, 1], [None, 2]]
    assert goal.human_mean() == [6, 7, 1, 2]
    # A run is a judge of its own once some episode had a panel of more than one; a failed run
    # is no judge.
    assert goal.judges == {
        JUDGE: [2, 3, None, None],
        "j#0": [1, 2, 9, 9],
        "j#1": [3, 4, None, None],
    }
    assert goal.models == ["model-a", "model-b", "model-a", "model-b"]
    assert overall.humans == goal.humans
