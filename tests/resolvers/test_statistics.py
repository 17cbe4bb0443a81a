"""Means, spreads and intervals from moments agree with the same figures from the raw scores."""

import math
import statistics

import pytest

from parley.resolvers.statistics import Moments, paired, summarize, t_quantile

SCORES = [3.0, 7.0, 5.0, 9.0, 1.0, 6.0]


def test_the_t_quantile_is_students() -> None:
    assert t_quantile(4) == pytest.approx(2.7764451, abs=1e-6)
    assert t_quantile(10_000) == pytest.approx(1.959964, abs=1e-3)


def test_moments_merged_in_any_parts_are_those_of_all_scores() -> None:
    whole = Moments.of_scores(SCORES)
    parts = [Moments.of_scores(SCORES[:2]), Moments(), Moments.of_scores(SCORES[2:])]
    merged = parts[0].merge(parts[1]).merge(parts[2])
    for moments in (merged, Moments.pooled(parts)):
        assert moments.n == whole.n
        assert moments.mean == pytest.approx(statistics.fmean(SCORES))
        assert moments.variance == pytest.approx(statistics.variance(SCORES))


def test_moments_from_a_count_sum_and_sd_are_those_of_the_scores() -> None:
    given = Moments.of(len(SCORES), sum(SCORES), statistics.stdev(SCORES))
    assert given.m2 == pytest.approx(Moments.of_scores(SCORES).m2)
    assert Moments.of(1, 4.0, 0.0) == Moments(1, 4.0, 0.0)
    assert Moments.of(0, 0.0, 0.0).variance is None


def test_the_summary_gives_the_standard_interval_and_sotopias_margin() -> None:
    cells = [Moments.of_scores(SCORES[:3]), Moments.of_scores(SCORES[3:])]
    summary = summarize(cells)
    n, sd = len(SCORES), statistics.stdev(SCORES)
    assert (summary.count, summary.cells) == (n, 2)
    assert summary.sd == pytest.approx(sd)
    assert summary.interval is not None
    assert summary.interval.margin == pytest.approx(t_quantile(n - 1) * sd / math.sqrt(n))
    mean_variance = statistics.fmean(
        [statistics.variance(SCORES[:3]), statistics.variance(SCORES[3:])]
    )
    assert summary.sotopia_margin == pytest.approx(t_quantile(n) * math.sqrt(mean_variance / n))


def test_one_score_has_no_spread_and_no_interval() -> None:
    summary = summarize([Moments.of_scores([4.0])], per_cell=False)
    assert (summary.count, summary.mean, summary.sd, summary.interval) == (1, 4.0, None, None)
    assert (summary.sotopia_margin, summary.cells) == (None, None)


def test_paired_differences_have_their_own_interval() -> None:
    result = paired([1.0, -1.0, 2.0, 0.0])
    assert (result.pairs, result.mean_difference) == (4, 0.5)
    assert result.interval is not None and result.interval.degrees_of_freedom == 3
