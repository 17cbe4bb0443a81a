"""The percentile bootstrap over units, vectorized.

Every figure bootstrapped here is a function of sums over units (or over episodes, each unit
counted in its episode): what a unit adds is a row of `per_unit`. A resample draws the units
with replacement; how often it drew each is a row of counts, so the sums of a whole chunk of
resamples are one matrix product, counts @ per_unit, and the figure is computed for every
resample at once. A resample is the same as a table of the drawn units' rows (a unit drawn
twice appears twice).

The resamples are drawn from the numpy `Generator` passed in, in chunks of at most `CELLS`
counts (memory stays bounded whatever the number of units), so a seeded generator gives the
same interval every time.
"""

from collections.abc import Callable, Iterator

import numpy as np
import numpy.typing as npt

from parley.resolvers.statistics import CONFIDENCE

RESAMPLES = 2000
"""Resamples drawn for an interval unless the caller says otherwise."""

CELLS = 1 << 20
"""At most this many unit counts per chunk of resamples (8 MiB of floats)."""

Floats = npt.NDArray[np.float64]
Statistic = Callable[[Floats], Floats]
"""Sums (resamples by columns of `per_unit`) to one figure per resample, NaN where undefined."""


def draws(rng: np.random.Generator, units: int, resamples: int) -> Iterator[npt.NDArray[np.int64]]:
    """The units each resample draws (`units` of them, with replacement), a chunk of rows at
    a time."""
    rows = max(1, CELLS // units)
    for start in range(0, resamples, rows):
        yield rng.integers(0, units, size=(min(rows, resamples - start), units))


def replicates(
    per_unit: Floats, statistic: Statistic, *, rng: np.random.Generator, resamples: int
) -> Floats:
    """The figure of each of `resamples` resamples of the rows of `per_unit`."""
    if resamples < 1:
        raise ValueError("a bootstrap interval needs at least one resample")
    units = len(per_unit)
    figures = []
    for chosen in draws(rng, units, resamples):
        rows = len(chosen)
        flat = (chosen + units * np.arange(rows)[:, np.newaxis]).ravel()
        counts = np.bincount(flat, minlength=rows * units).reshape(rows, units)
        figures.append(statistic(counts.astype(np.float64) @ per_unit))
    return np.concatenate(figures)


def percentile(figures: Floats) -> tuple[float, float, int] | None:
    """The central 95% of the figures that are defined (numpy's linear quantiles) and how many
    those are; None if none is."""
    defined = figures[~np.isnan(figures)]
    if not defined.size:
        return None
    tail = (1 - CONFIDENCE) / 2
    low, high = np.quantile(defined, [tail, 1 - tail])
    return float(low), float(high), int(defined.size)
