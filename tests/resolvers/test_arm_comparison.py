"""An arm against its control: seat scores read from Sotopia's rewards (its bare `0.0` for a seat
its judge did not score included), paired per seat and dimension where both episodes have a
score, and the paired interval checked against scipy's paired t-test."""

from typing import Any

import pytest
from scipy import stats

from parley.resolvers.arm_comparison import differences, scored, seat_scores


def reward(overall: float, **scores: float) -> tuple[float, dict[str, float]]:
    """Sotopia's shape for one seat: its overall score, then its scores with `overall_score`."""
    return (overall, {**scores, "overall_score": overall})


def test_seat_scores_read_sotopia_rewards_and_its_bare_zero_as_no_scores() -> None:
    rewards = [reward(2.0, goal=7.0, secret=-1), 0.0, ["x", "not a dict"]]
    assert seat_scores(rewards) == [{"overall": 2.0, "goal": 7.0, "secret": -1.0}, {}, {}]
    assert seat_scores(None) == []
    assert scored(rewards)
    assert not scored([0.0, 0.0]) and not scored(None)


def test_differences_pair_each_seat_with_the_same_seat_and_skip_missing_scores() -> None:
    pairs: list[tuple[list[Any] | None, list[Any]]] = [
        ([reward(1.0, goal=5.0), reward(0.0, goal=2.0)], [reward(2.0, goal=8.0), 0.0]),
        ([reward(3.0, goal=4.0), reward(1.0)], [reward(1.0, goal=6.0), reward(4.0, goal=1.0)]),
        (None, [reward(9.0, goal=9.0)]),  # a control never scored pairs with nothing
    ]
    found = dict(differences(pairs))
    assert list(found) == ["overall", "goal"]  # overall first, then Sotopia's order
    assert found["overall"].pairs == 3  # (2 - 1), (1 - 3), (4 - 1)
    assert found["overall"].mean_difference == pytest.approx((1 - 2 + 3) / 3)
    assert found["goal"].pairs == 2  # seat 1 of the second slot has no goal in its control
    assert found["goal"].mean_difference == pytest.approx((3 + 2) / 2)


def test_the_paired_interval_is_scipys_paired_t_interval() -> None:
    control = [4.0, 6.5, 3.0, 8.0, 5.5, 7.0]
    arm = [5.0, 6.0, 4.5, 9.5, 5.0, 8.5]
    pairs = [([reward(c)], [reward(a)]) for c, a in zip(control, arm, strict=True)]
    ((name, found),) = differences(pairs)
    reference = stats.ttest_rel(arm, control).confidence_interval(0.95)
    assert name == "overall" and found.interval is not None
    assert found.interval.low == pytest.approx(reference.low)
    assert found.interval.high == pytest.approx(reference.high)
    assert found.interval.degrees_of_freedom == len(control) - 1


def test_a_custom_dimension_follows_sotopias_in_name_order() -> None:
    pairs = [
        ([reward(1.0, zeal=1.0, goal=1.0, aim=0.0)], [reward(2.0, zeal=3.0, goal=4.0, aim=1.0)])
    ]
    assert [name for name, _ in differences(pairs)] == ["overall", "goal", "aim", "zeal"]
