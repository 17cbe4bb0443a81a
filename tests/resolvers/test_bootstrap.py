"""Resamples are drawn in bounded chunks, each figure is that of its drawn units, and the
interval is the central 95% of the defined figures."""

import math

import numpy as np
import pytest

from parley.resolvers import bootstrap


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def test_draws_come_in_chunks_of_at_most_cells_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bootstrap, "CELLS", 25)
    chunks = list(bootstrap.draws(rng(1), 10, 7))
    assert [chunk.shape for chunk in chunks] == [(2, 10), (2, 10), (2, 10), (1, 10)]
    drawn = np.concatenate(chunks)
    assert drawn.min() >= 0 and drawn.max() <= 9
    assert [len(chunk) for chunk in bootstrap.draws(rng(1), 100, 3)] == [1, 1, 1]  # 25 // 100


def test_each_figure_is_the_statistic_of_its_drawn_units(monkeypatch: pytest.MonkeyPatch) -> None:
    """A unit drawn twice counts twice; the chunks' figures come out in the order drawn."""
    monkeypatch.setattr(bootstrap, "CELLS", 25)
    per_unit = rng(4).normal(size=(10, 2))
    drawn = np.concatenate(list(bootstrap.draws(rng(9), 10, 7)))
    expected = [per_unit[row].sum(axis=0)[1] - per_unit[row].sum(axis=0)[0] for row in drawn]
    figures = bootstrap.replicates(
        per_unit, lambda sums: sums[:, 1] - sums[:, 0], rng=rng(9), resamples=7
    )
    assert figures == pytest.approx(expected, abs=1e-12)


def test_the_interval_is_the_central_95_percent_of_the_defined_figures() -> None:
    figures = np.array([*np.linspace(0.0, 1.0, 101), math.nan, math.nan])
    assert bootstrap.percentile(figures) == pytest.approx((0.025, 0.975, 101))
    assert bootstrap.percentile(np.array([math.nan, math.nan])) is None
    assert bootstrap.percentile(np.array([0.5])) == (0.5, 0.5, 1)


def test_no_resamples_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="at least one resample"):
        bootstrap.replicates(np.ones((3, 1)), lambda sums: sums[:, 0], rng=rng(1), resamples=0)
