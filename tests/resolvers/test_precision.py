"""The precision's stopping rule against scipy's t interval."""

import pytest
from pydantic import ValidationError
from scipy import stats

from parley.resolvers.precision import Precision, half_width, precise
from parley.resolvers.statistics import Moments

SCORES = [3.0, 4.5, 2.0, 3.5, 4.0, 3.0, 2.5, 4.0, 3.5, 3.0]


def test_the_half_width_is_scipys_t_interval() -> None:
    low, high = stats.t.interval(
        0.95, len(SCORES) - 1, loc=stats.tmean(SCORES), scale=stats.sem(SCORES)
    )
    assert half_width(Moments.of_scores(SCORES)) == pytest.approx((high - low) / 2)
    assert half_width(Moments.of_scores([1.0])) is None


def test_every_group_must_be_within_the_target_on_enough_scores() -> None:
    width = half_width(Moments.of_scores(SCORES)) or 0.0
    narrow = Moments.of_scores(SCORES)
    assert precise({"a": narrow}, Precision(half_width=width + 0.01, min_scores=10))
    assert not precise({"a": narrow}, Precision(half_width=width - 0.01, min_scores=10))
    assert not precise({"a": narrow}, Precision(half_width=width + 0.01, min_scores=11))
    wide = Moments.of_scores([0.0, 10.0] * 5)
    assert not precise({"a": narrow, "b": wide}, Precision(half_width=width + 0.01))
    assert not precise({}, Precision(half_width=5.0))
    same = Moments.of_scores([7.0] * 10)
    assert precise({"a": same}, Precision(half_width=0.01))


def test_a_precision_is_positive_and_rests_on_two_scores_or_more() -> None:
    for bad in ({"half_width": 0}, {"half_width": -1}, {"half_width": 1, "min_scores": 1}):
        with pytest.raises(ValidationError):
            Precision.model_validate(bad)
