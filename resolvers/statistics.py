"""Means, spreads and 95% intervals from counts, means and standard deviations (no raw scores).

Two intervals are offered, named apart:
- the standard one: mean ± t(0.975, n - 1) * s / √n, with s the sample standard deviation;
- Sotopia's benchmark margin (`sotopia benchmark`, `get_avg_reward`): t(0.975, n) * √(v / n),
  with v the unweighted mean of the sample variances of each (scenario, seat) cell (0 for a cell
  of one score) and n every score. Sotopia draws its t quantile from a million random samples;
  here it is exact.
"""

import math
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import NamedTuple

CONFIDENCE = 0.95


@cache
def t_quantile(df: int) -> float:
    """The two-sided 95% quantile of Student's t with `df` degrees of freedom."""
    # Imported on first use: scipy takes about 0.4 s to import, which `parley worker` and a
    # server that never answers a results query need not pay.
    from scipy.special import stdtrit

    return float(stdtrit(df, 1 - (1 - CONFIDENCE) / 2))


class Moments(NamedTuple):
    """Count, mean and sum of squared deviations of some scores; merged exactly (Chan et al.).

    A tuple, not a dataclass: a large grouped result makes tens of thousands of them."""

    n: int = 0
    mean: float = 0.0
    m2: float = 0.0

    @classmethod
    def of(cls, count: int, total: float, sd: float) -> "Moments":
        """From a count, a sum and a sample standard deviation (what RediSearch reduces)."""
        if count == 0:
            return cls()
        return cls(count, total / count, (count - 1) * sd * sd if count > 1 else 0.0)

    @classmethod
    def of_scores(cls, scores: Iterable[float]) -> "Moments":
        moments = cls()
        for score in scores:
            moments = moments.merge(cls(1, score, 0.0))
        return moments

    @classmethod
    def pooled(cls, parts: list["Moments"]) -> "Moments":
        """All parts merged at once (the same as merging them one by one)."""
        count = sum(p.n for p in parts)
        if count == 0:
            return cls()
        mean = sum(p.n * p.mean for p in parts) / count
        m2 = sum(p.m2 + p.n * (p.mean - mean) ** 2 for p in parts)
        return cls(count, mean, m2)

    def merge(self, other: "Moments") -> "Moments":
        if other.n == 0:
            return self
        if self.n == 0:
            return other
        count = self.n + other.n
        delta = other.mean - self.mean
        mean = self.mean + delta * other.n / count
        m2 = self.m2 + other.m2 + delta * delta * self.n * other.n / count
        return Moments(count, mean, m2)

    @property
    def variance(self) -> float | None:
        """The sample variance (n - 1), None for fewer than two scores."""
        return self.m2 / (self.n - 1) if self.n > 1 else None


@dataclass(frozen=True)
class Interval:
    low: float
    high: float
    margin: float
    degrees_of_freedom: int


@dataclass(frozen=True)
class Summary:
    count: int
    mean: float
    sd: float | None
    interval: Interval | None
    """mean ± t(0.975, n - 1) * sd / √n; None for fewer than two scores."""
    sotopia_margin: float | None
    """Sotopia's benchmark margin (module docstring); None for no scores."""
    cells: int | None
    """(scenario, seat) cells the scores fall in (Sotopia's `setting_num`); None if not known."""


def interval(moments: Moments) -> Interval | None:
    variance = moments.variance
    if variance is None:
        return None
    df = moments.n - 1
    margin = t_quantile(df) * math.sqrt(variance / moments.n)
    return Interval(moments.mean - margin, moments.mean + margin, margin, df)


def summarize(cells: Iterable[Moments], per_cell: bool = True) -> Summary:
    """The summary of scores given per (scenario, seat) cell (`per_cell`), or in any parts
    (then Sotopia's margin, which needs the cells, is None)."""
    present = [c for c in cells if c.n]
    total = Moments.pooled(present)
    variance = total.variance
    sotopia = None
    if total.n and per_cell:
        mean_variance = sum(c.variance or 0.0 for c in present) / len(present)
        sotopia = t_quantile(total.n) * math.sqrt(mean_variance / total.n)
    return Summary(
        count=total.n,
        mean=total.mean,
        sd=math.sqrt(variance) if variance is not None else None,
        interval=interval(total),
        sotopia_margin=sotopia,
        cells=len(present) if per_cell else None,
    )


@dataclass(frozen=True)
class Paired:
    pairs: int
    mean_difference: float
    sd: float | None
    interval: Interval | None
    """mean difference ± t(0.975, pairs - 1) * sd / √pairs."""


def paired(differences: Iterable[float]) -> Paired:
    moments = Moments.of_scores(differences)
    variance = moments.variance
    return Paired(
        pairs=moments.n,
        mean_difference=moments.mean,
        sd=math.sqrt(variance) if variance is not None else None,
        interval=interval(moments),
    )
