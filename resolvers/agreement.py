"""How far sources of scores agree (judges, re-judgings, judge panels, human raters), each
figure with its 95% interval.

A ratings table has a row per unit (one agent of one episode on one dimension, or an
episode's overall score) and a column per rater, NaN or None where that rater gave no score.
Two sources compared unit by unit are two lists of scores of the same units.

    alpha(table, rng=rng)     Krippendorff's alpha, interval data; bootstrap over units
    icc(table)                ICC(2,1) and ICC(2,k) on the complete units; F-based intervals
    pearson(x, y)             Pearson's r; Fisher z interval
    spearman(x, y)            Spearman's rho; Fisher z interval, Bonett and Wright's error
    ranking(x, y, models, episodes, rng=rng)
                              Kendall's tau-b between the models' ranks by mean score;
                              bootstrap over episodes

For example, three judges' scores of four agents on one dimension:

    figure = alpha([[8, 7, None], [3, 4, 4], [6, 6, 5], [2, None, 1]],
                   rng=np.random.default_rng(seed))
    figure.n, figure.estimate, figure.interval.low, figure.interval.high

Each figure is an `Agreement`: `n`, the units it rests on; the `estimate`; its 95%
`interval`; and the `reason` either is None. Degenerate data raise nothing and give no NaN;
a malformed input (a table that is not two-dimensional, an infinite score, lists of
different lengths) is a ValueError, the caller's mistake. A unit for alpha needs two scores,
for ICC every rater's (`Icc.dropped` counts the units left out), for the others both
sources'.

Estimate and interval None:
- TOO_FEW_UNITS: no unit to use (no rows, every score missing, no unit with two scores for
  alpha; fewer than two for ICC, r and rho);
- TOO_FEW_RATERS: ICC of one rater; TOO_FEW_MODELS: tau over fewer than two models;
- NO_VARIATION: the figure is 0/0: the scores do not vary (all equal; for r and rho either
  source's; for tau every model's mean ties in a source), or an ICC's denominator is not
  positive (the units vary less than the raters' error; pingouin's figure is then outside
  [-1, 1]).
Estimate given, interval None:
- TOO_FEW_UNITS: one unit (alpha) or one episode (tau) to resample; two or three pairs for r
  and rho (the Fisher z error is 1/sqrt(n - 3));
- NO_RESIDUAL: ICC of raters whose scores are each other's plus a constant: the F interval
  divides by the residual mean square;
- NO_VARIATION: ICC of units whose means are all equal: the F interval's degrees of freedom
  are 0/0;
- UNBOUNDED: an ICC interval with no finite low end: Satterthwaite's degrees of freedom near
  0 (a few units, a strongly negative ICC) make an F quantile infinite, or ICC(2,1)'s
  interval reaches -1/(k - 1), the pole of the step to ICC(2,k);
- NO_RESAMPLE: no bootstrap resample defines the figure.
A perfect correlation (|r| = 1) has the interval [r, r], as scipy's. An ICC estimate is its
formula's value, as pingouin's: on a few units it can fall below -1.

Bootstrap intervals (alpha, tau) are percentile intervals of `resamples` resamples (default
`bootstrap.RESAMPLES`) drawn from the numpy Generator passed in, so a seeded generator gives
the same interval every time; resamples in which the figure is undefined (no variation, a
model missing) are left out, and `Bounds.resamples` says how many it rests on.
"""

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from parley.resolvers.bootstrap import RESAMPLES, Floats, Statistic, percentile, replicates
from parley.resolvers.statistics import CONFIDENCE

Table = Sequence[Sequence[float | None]] | Floats
"""Units by raters, NaN or None for a missing score."""
Scores = Sequence[float | None] | Floats
"""One source's score of each unit, NaN or None for a missing score."""

Pair = tuple[float, float]
"""The low and high ends of an interval."""

FLAT = 1e-10
"""A sum of squares below this fraction of its scale is rounding, not variation."""


class Reason(StrEnum):
    """Why an estimate or an interval is None (the module's table says when)."""

    TOO_FEW_UNITS = "too_few_units"
    TOO_FEW_RATERS = "too_few_raters"
    TOO_FEW_MODELS = "too_few_models"
    NO_VARIATION = "no_variation"
    NO_RESIDUAL = "no_residual"
    UNBOUNDED = "unbounded"
    NO_RESAMPLE = "no_resample"


@dataclass(frozen=True)
class Bounds:
    """A 95% confidence interval."""

    low: float
    high: float
    resamples: int | None = None
    """The bootstrap resamples it rests on (those that define the figure); None for a closed
    form."""


@dataclass(frozen=True)
class Agreement:
    n: int
    """The units the figure rests on."""
    estimate: float | None
    interval: Bounds | None
    reason: Reason | None = None
    """Why the estimate or the interval is None; None when neither is."""


@dataclass(frozen=True)
class Icc:
    single: Agreement
    """ICC(2,1): how far one rater's score can be trusted (Shrout and Fleiss's ICC(2,1),
    McGraw and Wong's ICC(A,1))."""
    average: Agreement
    """ICC(2,k): how far the mean of the k raters' scores can be trusted (ICC(A,k))."""
    raters: int
    dropped: int
    """Units left out for a missing score."""


@dataclass(frozen=True)
class Ranking:
    tau: Agreement
    """Kendall's tau-b between the two sources' ranks of the models; n: units both scored."""
    models: tuple[str, ...]
    first: tuple[float, ...]
    """Each model's mean score from the first source, x (in the order of `models`)."""
    second: tuple[float, ...]
    episodes: int
    """The episodes resampled for the interval."""


def alpha(ratings: Table, *, rng: np.random.Generator, resamples: int = RESAMPLES) -> Agreement:
    """Krippendorff's alpha for interval data (squared differences), with a bootstrap interval
    over units.

    alpha = 1 - D_o / D_e over the units with two scores or more (n of them); for interval data
    both disagreements are sums of squares, so alpha comes from four sums over units (of the
    scores, their squares, their count and each unit's spread), which a resample adds up
    again: every resample costs a matrix product. Written here rather than taken from the
    `krippendorff` package (which the tests compare it with): the package tabulates every
    distinct value against every other, per unit, which scores that are means (an overall
    score, a panel's mean) make millions of cells, and it would run once per resample.
    """
    table = _table(ratings)
    present = ~np.isnan(table)
    pairable = present.sum(axis=1) >= 2
    table, present = table[pairable], present[pairable]
    units = len(table)
    if units == 0:
        return Agreement(0, None, None, Reason.TOO_FEW_UNITS)
    counts = present.sum(axis=1).astype(np.float64)
    centre = table[present].mean()
    deviations = np.where(present, table - centre, 0.0)
    unit_means = deviations.sum(axis=1) / counts
    spread = np.where(present, deviations - unit_means[:, np.newaxis], 0.0)
    per_unit = np.column_stack(
        [
            counts,
            deviations.sum(axis=1),
            (deviations**2).sum(axis=1),
            counts * (spread**2).sum(axis=1) / (counts - 1),
        ]
    )
    estimate = _alpha(per_unit.sum(axis=0, keepdims=True))[0]
    if np.isnan(estimate):
        return Agreement(units, None, None, Reason.NO_VARIATION)
    return _bootstrapped(units, float(estimate), per_unit, _alpha, rng, resamples)


def _alpha(sums: Floats) -> Floats:
    """alpha of each row of sums: values n, Σ(v - c), Σ(v - c)², Σ_u m_u·SS_u/(m_u - 1).

    D_o = (2/n)·Σ_u m_u·SS_u/(m_u - 1) and D_e = 2·SS/(n - 1), SS the sum of squares of all
    n values about their mean, so alpha = 1 - (n - 1)·Σ_u m_u·SS_u/(m_u - 1) / (n·SS)."""
    n, total, squares, within = sums.T
    spread = squares - total * total / n
    varies = spread > FLAT * squares
    with np.errstate(divide="ignore", invalid="ignore"):
        figures = 1 - (n - 1) * within / (n * spread)
    return np.where(varies, figures, np.nan)


def icc(ratings: Table) -> Icc:
    """ICC(2,1) and ICC(2,k), two-way random effects, absolute agreement (Shrout and Fleiss
    1979; McGraw and Wong 1996, as pingouin's ICC(A,1) and ICC(A,k)), with McGraw and Wong's
    F-based 95% intervals, over the units every rater scored."""
    table = _table(ratings)
    complete = table[~np.isnan(table).any(axis=1)]
    n, k = complete.shape
    dropped = len(table) - n

    def neither(reason: Reason) -> Icc:
        undefined = Agreement(n, None, None, reason)
        return Icc(undefined, undefined, raters=k, dropped=dropped)

    if n < 2:
        return neither(Reason.TOO_FEW_UNITS)
    if k < 2:
        return neither(Reason.TOO_FEW_RATERS)
    if np.ptp(complete) == 0:
        return neither(Reason.NO_VARIATION)
    grand = complete.mean()
    unit_means, rater_means = complete.mean(axis=1), complete.mean(axis=0)
    msr = k * float(np.sum((unit_means - grand) ** 2)) / (n - 1)
    msc = n * float(np.sum((rater_means - grand) ** 2)) / (k - 1)
    residuals = complete - unit_means[:, np.newaxis] - rater_means + grand
    mse = float(np.sum(residuals**2)) / ((n - 1) * (k - 1))
    scale = msr + msc + mse
    single = _ratio(msr - mse, msr + (k - 1) * mse + k * (msc - mse) / n, scale)
    average = _ratio(msr - mse, msr + (msc - mse) / n, scale)
    if single is None:
        return neither(Reason.NO_VARIATION)
    bounds: Pair | Reason
    if mse <= FLAT * scale:
        bounds = Reason.NO_RESIDUAL
    elif msr <= FLAT * scale:  # the units' means are equal: Satterthwaite's v is 0/0
        bounds = Reason.NO_VARIATION
    else:
        bounds = _icc_bounds(single, n, k, msr, msc, mse) or Reason.UNBOUNDED
    return Icc(
        single=_figure(n, single, bounds),
        average=_figure(n, average, _spearman_brown(bounds, k)),
        raters=k,
        dropped=dropped,
    )


def _ratio(numerator: float, denominator: float, scale: float) -> float | None:
    return numerator / denominator if denominator > FLAT * scale else None


def _figure(n: int, estimate: float | None, bounds: Pair | Reason) -> Agreement:
    if estimate is None:
        return Agreement(n, None, None, Reason.NO_VARIATION)
    if isinstance(bounds, Reason):
        return Agreement(n, estimate, None, bounds)
    return Agreement(n, estimate, Bounds(*bounds))


def _spearman_brown(bounds: Pair | Reason, k: int) -> Pair | Reason:
    """The interval of ICC(2,k) from that of ICC(2,1): r -> rk / (1 + r(k - 1)), increasing
    above its pole at r = -1/(k - 1); an interval that reaches the pole (to rounding) has no
    lower bound."""
    if isinstance(bounds, Reason):
        return bounds
    if 1 + min(bounds) * (k - 1) <= FLAT:
        return Reason.UNBOUNDED
    low, high = (r * k / (1 + r * (k - 1)) for r in bounds)
    return low, high


def _icc_bounds(single: float, n: int, k: int, msr: float, msc: float, mse: float) -> Pair | None:
    """McGraw and Wong's (1996) interval of ICC(A,1), with Satterthwaite's degrees of freedom
    v for the mix of mean squares in its denominator; None where an end is not finite (v near
    0, on a few units with a strongly negative ICC, makes the F quantile infinite)."""
    from scipy.special import fdtri

    with np.errstate(all="ignore"):  # numpy floats: a degenerate table gives inf or NaN
        icc, fj = np.float64(single), np.float64(msc) / mse
        vn = (k - 1) * (n - 1) * (k * icc * fj + n * (1 + (k - 1) * icc) - k * icc) ** 2
        vd = (n - 1) * k**2 * icc**2 * fj**2 + (n * (1 + (k - 1) * icc) - k * icc) ** 2
        v = vn / vd
        upper_tail = 1 - (1 - CONFIDENCE) / 2
        f_upper, f_lower = fdtri(n - 1, v, upper_tail), fdtri(v, n - 1, upper_tail)
        spread = k * msc + (k * n - k - n) * mse
        low = n * (msr - f_upper * mse) / (f_upper * spread + n * msr)
        high = n * (f_lower * msr - mse) / (spread + n * f_lower * msr)
    if not (np.isfinite(low) and np.isfinite(high)):
        return None
    return float(low), float(high)


def pearson(x: Scores, y: Scores) -> Agreement:
    """Pearson's r over the units both sources scored, with the Fisher z interval
    tanh(atanh r ± z₀.₉₇₅/√(n - 3)), as scipy's `pearsonr(x, y).confidence_interval()`
    (which gives [-1, 1] where this gives None: for n < 4)."""
    first, second = _pairs(x, y)
    return _correlation(first, second, lambda r, n: 1 / math.sqrt(n - 3))


def spearman(x: Scores, y: Scores) -> Agreement:
    """Spearman's rho over the units both sources scored (Pearson's r of their average ranks, as
    scipy's `spearmanr`), with a Fisher z interval whose standard error is Bonett and Wright's
    (2000) √((1 + rho²/2)/(n - 3)): 1/√(n - 3), right for Pearson's r of normal scores, is too
    small for rho and its interval covers less than 95%."""
    from scipy.stats import rankdata

    first, second = _pairs(x, y)
    return _correlation(
        rankdata(first), rankdata(second), lambda r, n: math.sqrt((1 + r * r / 2) / (n - 3))
    )


def _correlation(
    first: Floats, second: Floats, standard_error: Callable[[float, int], float]
) -> Agreement:
    """r of the pairs, with the interval tanh(atanh r ± z₀.₉₇₅·standard_error(r, n))."""
    from scipy.special import ndtri

    n = len(first)
    if n < 2:
        return Agreement(n, None, None, Reason.TOO_FEW_UNITS)
    if np.ptp(first) == 0 or np.ptp(second) == 0:
        return Agreement(n, None, None, Reason.NO_VARIATION)
    a, b = first - first.mean(), second - second.mean()
    r = min(1.0, max(-1.0, float(a @ b) / math.sqrt(float(a @ a) * float(b @ b))))
    if n < 4:
        return Agreement(n, r, None, Reason.TOO_FEW_UNITS)
    z = math.atanh(r) if abs(r) < 1 else math.copysign(math.inf, r)
    margin = float(ndtri(1 - (1 - CONFIDENCE) / 2)) * standard_error(r, n)
    return Agreement(n, r, Bounds(math.tanh(z - margin), math.tanh(z + margin)))


def ranking(
    x: Scores,
    y: Scores,
    models: Sequence[str],
    episodes: Sequence[str] | None = None,
    *,
    rng: np.random.Generator,
    resamples: int = RESAMPLES,
) -> Ranking:
    """Kendall's tau-b between the ranks two sources give the models (each model's mean score
    over the units both sources scored; ties count as tau-b counts them), with a bootstrap
    interval over episodes: a resample draws episodes with replacement, each with all of its
    units (no closed form fits a tau of means). `models[i]` and `episodes[i]` are unit i's;
    without episodes each unit is resampled alone. A resample in which a model has no unit
    is left out."""
    first, second = _floats(x), _floats(y)
    if not (len(first) == len(second) == len(models)) or (
        episodes is not None and len(episodes) != len(models)
    ):
        raise ValueError("the scores, models and episodes must describe the same units")
    both = ~(np.isnan(first) | np.isnan(second))
    first, second = first[both], second[both]
    names, model_of = np.unique(np.asarray(models, dtype=str)[both], return_inverse=True)
    labels = np.arange(len(first)) if episodes is None else np.asarray(episodes, dtype=str)[both]
    _, cluster_of = np.unique(labels, return_inverse=True)
    count, m = int(cluster_of.max(initial=-1)) + 1, len(names)
    cell = cluster_of * m + model_of

    def summed(weights: Floats | None) -> Floats:
        return np.bincount(cell, weights, minlength=count * m).reshape(count, m).astype(np.float64)

    per_episode = np.hstack([summed(None), summed(first), summed(second)])
    totals = per_episode.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        means_first, means_second = totals[m : 2 * m] / totals[:m], totals[2 * m :] / totals[:m]

    def result(tau: Agreement) -> Ranking:
        return Ranking(
            tau=tau,
            models=tuple(str(name) for name in names),
            first=tuple(float(v) for v in means_first),
            second=tuple(float(v) for v in means_second),
            episodes=count,
        )

    units = len(first)
    if units == 0:
        return result(Agreement(0, None, None, Reason.TOO_FEW_UNITS))
    if m < 2:
        return result(Agreement(units, None, None, Reason.TOO_FEW_MODELS))
    estimate = _tau_b(totals[np.newaxis, :])[0]
    if np.isnan(estimate):
        return result(Agreement(units, None, None, Reason.NO_VARIATION))
    return result(_bootstrapped(units, float(estimate), per_episode, _tau_b, rng, resamples))


def _tau_b(sums: Floats) -> Floats:
    """tau-b of each row of sums: per model its unit count, then its scores from each source.

    tau-b = (concordant - discordant) / √(pairs untied in the first · pairs untied in the
    second), counted over the pairs of models as signs of their mean differences."""
    m = sums.shape[1] // 3
    counts = sums[:, :m]
    with np.errstate(divide="ignore", invalid="ignore"):
        first, second = sums[:, m : 2 * m] / counts, sums[:, 2 * m :] / counts
    i, j = np.triu_indices(m, 1)
    order_first = np.sign(first[:, i] - first[:, j])
    order_second = np.sign(second[:, i] - second[:, j])
    untied_first, untied_second = np.abs(order_first).sum(axis=1), np.abs(order_second).sum(axis=1)
    defined = (counts > 0).all(axis=1) & (untied_first > 0) & (untied_second > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        figures = (order_first * order_second).sum(axis=1) / np.sqrt(untied_first * untied_second)
    return np.where(defined, figures, np.nan)


def _bootstrapped(
    n: int,
    estimate: float,
    per_unit: Floats,
    statistic: Statistic,
    rng: np.random.Generator,
    resamples: int,
) -> Agreement:
    """The estimate with the percentile interval of the statistic over resamples of the rows
    of `per_unit` (units, or episodes)."""
    if len(per_unit) < 2:
        return Agreement(n, estimate, None, Reason.TOO_FEW_UNITS)
    found = percentile(replicates(per_unit, statistic, rng=rng, resamples=resamples))
    if found is None:
        return Agreement(n, estimate, None, Reason.NO_RESAMPLE)
    low, high, defined = found
    return Agreement(n, estimate, Bounds(low, high, resamples=defined))


def _floats(scores: Scores) -> Floats:
    values = np.asarray(scores, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError("scores must be one list, a score per unit")
    _check_finite(values)
    return values


def _table(ratings: Table) -> Floats:
    table = np.asarray(ratings, dtype=np.float64)
    if table.size == 0 and table.ndim == 1:
        return table.reshape(0, 0)
    if table.ndim != 2:
        raise ValueError("a ratings table must have a row per unit and a column per rater")
    _check_finite(table)
    return table


def _check_finite(values: Floats) -> None:
    if np.isinf(values).any():
        raise ValueError("a score must be a finite number (or missing: NaN or None)")


def _pairs(x: Scores, y: Scores) -> tuple[Floats, Floats]:
    """The scores of the units both sources scored."""
    first, second = _floats(x), _floats(y)
    if len(first) != len(second):
        raise ValueError("both sources must list a score (or None) for every unit")
    both = ~(np.isnan(first) | np.isnan(second))
    return first[both], second[both]
