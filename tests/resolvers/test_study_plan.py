"""A study's arithmetic: a balanced assignment, an order of each rater's own, a rating as
Sotopia's rewards, and a gold check."""

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from parley.engine.types import OVERALL_SCORE, SOTOPIA_DIMENSIONS
from parley.resolvers import study_plan
from parley.storage.models import ExpectedScore, GoldEpisode
from parley.storage.studies import GoldMiss


@given(st.integers(0, 60), st.integers(1, 12), st.data())
def test_every_episode_gets_its_raters_and_every_rater_as_many_as_another(
    episodes: int, raters: int, data: st.DataObject
) -> None:
    per_episode = data.draw(st.integers(1, raters))
    given_to = study_plan.assign(episodes, raters, per_episode)
    assert len(given_to) == raters
    for rater in given_to:
        assert len(rater) == len(set(rater))  # no episode twice to one rater
    counts = Counter(e for rater in given_to for e in rater)
    assert counts == dict.fromkeys(range(episodes), per_episode) or episodes == 0
    loads = [len(rater) for rater in given_to]
    assert max(loads) - min(loads) <= 1


def test_gold_episodes_go_to_every_rater_once() -> None:
    assert study_plan.with_gold([0, 3], [3, 5]) == [0, 3, 5]


def test_each_rater_has_an_order_of_their_own_that_stays() -> None:
    episodes = list(range(30))
    first = study_plan.shuffled(episodes, "study-a", 0)
    assert sorted(first) == episodes and first != episodes
    assert study_plan.shuffled(episodes, "study-a", 0) == first  # a reload sees the same order
    assert study_plan.shuffled(episodes, "study-a", 1) != first
    assert study_plan.shuffled(episodes, "study-b", 0) != first


def test_a_rating_becomes_sotopias_rewards_and_reads_back() -> None:
    scores = {(a, d.name): d.range_low + 3 * a for a in range(2) for d in SOTOPIA_DIMENSIONS}
    rewards = study_plan.rewards(scores, 2, SOTOPIA_DIMENSIONS)
    for agent, (overall, dims) in enumerate(rewards):
        mine = [scores[agent, d.name] for d in SOTOPIA_DIMENSIONS]
        assert overall == sum(mine) / 7 == dims[OVERALL_SCORE]
        assert list(dims) == [d.name for d in SOTOPIA_DIMENSIONS] + [OVERALL_SCORE]
    assert study_plan.scores_of(rewards) == {k: float(v) for k, v in scores.items()}
    assert study_plan.scores_of([0.0, 0.0]) == {}  # Sotopia's "not rated" float


def test_a_gold_check_names_each_score_off_by_more_than_the_tolerance() -> None:
    gold = GoldEpisode(
        episode=0,
        expected=[
            ExpectedScore(agent=0, dimension="goal", score=8),
            ExpectedScore(agent=1, dimension="secret", score=-2),
        ],
        tolerance=1.5,
    )
    close = {(0, "goal"): 7, (1, "secret"): -3}
    assert not study_plan.gold_check(gold, close).flagged
    far = {(0, "goal"): 6, (1, "secret"): -3}
    check = study_plan.gold_check(gold, far)
    assert check.flagged
    assert check.misses == [GoldMiss(agent=0, dimension="goal", expected=8, given=6)]
