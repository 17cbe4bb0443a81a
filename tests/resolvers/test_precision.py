"""The stopping rule of a design's precision: every group's 95% t half-width within the target,
on at least `min_scores` scores."""

import math

import pytest
from pydantic import ValidationError
from scipy import stats

from parley.resolvers.precision import Precision, half_width, precise
from parley.resolvers.statistics import Moments

SCORES = [3.0, 7.0, 5.0, 9.0, 1.0, 6.0, 4.5, 5.5]


def scipy_half_width(scores: list[float]) -> float:
    n = len(scores)
    mean = sum(scores) / n
    sem = stats.sem(scores)
    low, high = stats.t.interval(0.95, n - 1, loc=mean, scale=sem)
    return float(high - low) / 2


def test_the_half_width_is_the_t_intervals() -> None:
    # By hand: mean 5.125, sample sd 2.431, t(0.975, 7) = 2.364624.
    moments = Moments.of_scores(SCORES)
    by_hand = 2.364624 * math.sqrt(sum((x - 5.125) ** 2 for x in SCORES) / 7) / math.sqrt(8)
    assert half_width(moments) == pytest.approx(by_hand, rel=1e-6)
    assert half_width(moments) == pytest.approx(scipy_half_width(SCORES), rel=1e-12)
    assert half_width(Moments.of_scores([4.0])) is None


def test_a_group_is_precise_exactly_when_its_half_width_is_within_the_target() -> None:
    moments = Moments.of_scores(SCORES)
    width = scipy_half_width(SCORES)
    assert precise({"a": moments}, Precision(half_width=width * (1 + 1e-9), min_scores=8))
    assert not precise({"a": moments}, Precision(half_width=width * (1 - 1e-9), min_scores=8))


def test_fewer_scores_than_min_scores_are_refused() -> None:
    moments = Moments.of_scores(SCORES)
    assert not precise({"a": moments}, Precision(half_width=20, min_scores=9))
    assert precise({"a": moments}, Precision(half_width=20, min_scores=8))


def test_the_default_min_scores_is_30() -> None:
    target = Precision(half_width=1)
    assert target.min_scores == 30
    alike = [5.0, 5.5] * 15
    assert not precise({"a": Moments.of_scores(alike[:29])}, target)
    assert precise({"a": Moments.of_scores(alike)}, target)


def test_no_groups_are_refused() -> None:
    assert not precise({}, Precision(half_width=20, min_scores=2))


def test_one_group_too_wide_is_refused() -> None:
    narrow = Moments.of_scores([5.0, 5.1, 4.9, 5.0])
    wide = Moments.of_scores([1.0, 9.0, 2.0, 8.0])
    target = Precision(half_width=1, min_scores=4)
    assert precise({"a": narrow, "b": narrow}, target)
    assert not precise({"a": narrow, "b": wide}, target)


def test_a_precision_is_positive_and_rests_on_two_scores_or_more() -> None:
    for bad in ({"half_width": 0}, {"half_width": -1}, {"half_width": 1, "min_scores": 1}):
        with pytest.raises(ValidationError):
            Precision.model_validate(bad)
