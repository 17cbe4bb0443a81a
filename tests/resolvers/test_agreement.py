"""Agreement figures equal well-kept references (krippendorff, pingouin, scipy) and published
examples; degenerate data give None with a reason, never NaN or an exception."""

import math
import random
from collections.abc import Callable

import numpy as np
import pandas as pd
import pingouin
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy import stats

from parley.resolvers import bootstrap
from parley.resolvers.agreement import (
    Agreement,
    Bounds,
    Reason,
    Scores,
    alpha,
    icc,
    pearson,
    ranking,
    spearman,
)
from tests.support.references import pingouin_icc, reference_alpha

# A warning of ours is a NaN or an infinity on its way out: an error here.
pytestmark = [
    pytest.mark.filterwarnings("error::RuntimeWarning:parley"),
    pytest.mark.filterwarnings("ignore:The inplace keyword:DeprecationWarning:pingouin"),
]

NAN = math.nan

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: four observers,
# twelve units, missing values; interval alpha = 0.849. Rows are units here.
KRIPPENDORFF_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
        [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
    ]
).T

# Shrout and Fleiss (1979), table 2: six targets, four judges; ICC(2,1) = .29, ICC(2,4) = .62.
SHROUT_FLEISS = np.array(
    [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]],
    dtype=float,
)


def rng(seed: int = 7) -> np.random.Generator:
    return np.random.default_rng(seed)


def scores(missing: bool) -> st.SearchStrategy[float]:
    value = st.integers(-10, 10).map(float)
    return st.one_of(value, value, value, st.just(NAN)) if missing else value


@st.composite
def tables(draw: st.DrawFn, missing: bool = True, least: int = 1) -> np.ndarray:
    units = draw(st.integers(least, 25))
    raters = draw(st.integers(least, 5))
    rows = st.lists(scores(missing), min_size=raters, max_size=raters)
    return np.array(draw(st.lists(rows, min_size=units, max_size=units)), dtype=float)


def undefined(figure: Agreement, reason: Reason) -> None:
    assert (figure.estimate, figure.interval, figure.reason) == (None, None, reason)


# Krippendorff's alpha


def test_alpha_is_krippendorffs_worked_example() -> None:
    figure = alpha(KRIPPENDORFF_2011, rng=rng())
    assert figure.estimate is not None and round(figure.estimate, 3) == 0.849
    assert figure.estimate == pytest.approx(reference_alpha(KRIPPENDORFF_2011), abs=1e-12)
    assert figure.n == 11  # the twelfth unit has one score: nothing to pair it with
    assert figure.interval is not None and figure.reason is None
    assert figure.interval.low <= figure.estimate <= figure.interval.high


@settings(max_examples=200, deadline=None)
@given(tables())
def test_alpha_equals_the_krippendorff_package(table: np.ndarray) -> None:
    figure = alpha(table, rng=rng(), resamples=20)
    try:
        with np.errstate(invalid="ignore"):
            expected = reference_alpha(table)
    except ValueError:  # the package refuses a table without two paired or distinct values
        assert figure.estimate is None
        assert figure.reason in (Reason.TOO_FEW_UNITS, Reason.NO_VARIATION)
        return
    if math.isnan(expected):  # the paired values do not vary: the package's 0/0
        undefined(figure, Reason.NO_VARIATION)
    else:
        assert figure.estimate == pytest.approx(expected, abs=1e-9)


def test_alpha_of_fractional_scores_equals_the_package() -> None:
    table = rng(3).normal(5, 2, size=(40, 3))
    table[rng(4).random(table.shape) < 0.2] = NAN
    assert alpha(table, rng=rng()).estimate == pytest.approx(reference_alpha(table), abs=1e-12)


def test_the_alpha_interval_is_the_percentile_of_alpha_over_resampled_units() -> None:
    """Resamples draw the units that have two scores (the single-score unit is left out);
    each resample's alpha is the package's alpha of the table of the drawn rows."""
    table = rng(5).integers(0, 7, size=(30, 3)).astype(float)
    table[rng(6).random(table.shape) < 0.25] = NAN
    paired = table[(~np.isnan(table)).sum(axis=1) >= 2]
    draws = np.concatenate(list(bootstrap.draws(rng(11), len(paired), 300)))
    expected = np.quantile([reference_alpha(paired[rows]) for rows in draws], [0.025, 0.975])
    figure = alpha(table, rng=rng(11), resamples=300)
    assert figure.interval is not None
    assert figure.interval.resamples == 300
    assert (figure.interval.low, figure.interval.high) == pytest.approx(tuple(expected), abs=1e-9)


def test_a_seeded_generator_gives_the_same_interval() -> None:
    first = alpha(KRIPPENDORFF_2011, rng=rng(1), resamples=500)
    assert alpha(KRIPPENDORFF_2011, rng=rng(1), resamples=500) == first
    assert alpha(KRIPPENDORFF_2011, rng=rng(2), resamples=500).interval != first.interval


@settings(max_examples=100, deadline=None)
@given(tables(missing=False), st.integers(2, 4))
def test_alpha_of_identical_raters_is_one(table: np.ndarray, raters: int) -> None:
    same = np.repeat(table[:, :1], raters, axis=1)
    figure = alpha(same, rng=rng(), resamples=50)
    if np.ptp(same) == 0:
        undefined(figure, Reason.NO_VARIATION)
    else:
        assert figure.estimate == 1.0
        assert figure.interval is not None
        assert (figure.interval.low, figure.interval.high) == (1.0, 1.0)


@settings(max_examples=100, deadline=None)
@given(tables(), st.randoms(use_true_random=False))
def test_alpha_does_not_depend_on_the_order_of_raters_or_units(
    table: np.ndarray, order: random.Random
) -> None:
    raters, units = list(range(table.shape[1])), list(range(table.shape[0]))
    order.shuffle(raters)
    order.shuffle(units)
    before = alpha(table, rng=rng(), resamples=20)
    after = alpha(table[units][:, raters], rng=rng(), resamples=20)
    assert (after.n, after.reason) == (before.n, before.reason)
    if before.estimate is None:
        assert after.estimate is None
    else:
        assert after.estimate == pytest.approx(before.estimate, abs=1e-9)


@pytest.mark.parametrize(
    ("table", "n", "reason"),
    [
        ([], 0, Reason.TOO_FEW_UNITS),
        ([[NAN, NAN], [NAN, NAN]], 0, Reason.TOO_FEW_UNITS),
        ([[1.0], [2.0], [3.0]], 0, Reason.TOO_FEW_UNITS),  # one rater: no pairs
        ([[1.0, None], [None, 2.0]], 0, Reason.TOO_FEW_UNITS),
        (
            [
                [3.0, 3.0],
                [
                    3.0,
                    3.0,
                ],
                [3.0, None],
            ],
            2,
            Reason.NO_VARIATION,
        ),
    ],
)
def test_alpha_without_pairs_or_variation_is_undefined(
    table: list[list[float | None]], n: int, reason: Reason
) -> None:
    figure = alpha(table, rng=rng())
    assert figure.n == n
    undefined(figure, reason)


def test_alpha_of_one_unit_has_no_interval() -> None:
    assert alpha([[1.0, 3.0, None]], rng=rng()) == Agreement(1, 0.0, None, Reason.TOO_FEW_UNITS)


def test_resamples_without_variation_are_left_out() -> None:
    """Two units, one of them constant: a resample drawing it twice defines no alpha."""
    table = [[1.0, 1.0], [1.0, 2.0]]
    figure = alpha(table, rng=rng(), resamples=400)
    assert figure.interval is not None and figure.interval.resamples is not None
    assert 200 < figure.interval.resamples < 400
    seed = next(s for s in range(100) if (next(bootstrap.draws(rng(s), 2, 1)) == 0).all())
    assert alpha(table, rng=rng(seed), resamples=1) == Agreement(
        2, figure.estimate, None, Reason.NO_RESAMPLE
    )


# ICC(2,1) and ICC(2,k)


@pytest.fixture
def unrounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """pingouin rounds its intervals to two decimals unless told not to."""
    monkeypatch.delitem(pingouin.options, "round.column.CI95", raising=False)


def assert_icc_is_pingouins(table: np.ndarray) -> None:
    reference = pingouin_icc(table)
    figures = icc(table)
    for figure, kind in ((figures.single, "ICC(A,1)"), (figures.average, "ICC(A,k)")):
        assert figure.estimate == pytest.approx(reference.at[kind, "ICC"], abs=1e-10)
        assert figure.interval is not None
        low, high = reference.at[kind, "CI95"]
        assert (figure.interval.low, figure.interval.high) == pytest.approx((low, high), abs=1e-10)
        assert figure.interval.resamples is None


@pytest.mark.usefixtures("unrounded")
def test_icc_equals_pingouin_on_its_wine_example() -> None:
    data = pingouin.read_dataset("icc")
    table = data.pivot_table(index="Wine", columns="Judge", values="Scores").to_numpy(float)
    assert_icc_is_pingouins(table)
    figures = icc(table)
    assert (figures.single.n, figures.raters, figures.dropped) == (8, 4, 0)


@pytest.mark.usefixtures("unrounded")
def test_icc_is_shrout_and_fleiss_published_example() -> None:
    figures = icc(SHROUT_FLEISS)
    assert figures.single.estimate is not None and figures.average.estimate is not None
    assert (round(figures.single.estimate, 2), round(figures.average.estimate, 2)) == (0.29, 0.62)
    assert_icc_is_pingouins(SHROUT_FLEISS)


@pytest.mark.usefixtures("unrounded")
def test_icc_leaves_out_units_with_a_missing_score() -> None:
    table = rng(8).integers(1, 8, size=(30, 3)).astype(float)
    table[[2, 5, 11], [0, 2, 1]] = NAN
    figures = icc(table)
    assert (figures.single.n, figures.average.n, figures.dropped) == (27, 27, 3)
    assert_icc_is_pingouins(table)  # pingouin's nan_policy="omit" leaves them out too


@settings(max_examples=150, deadline=None)
@given(tables(missing=False, least=2))
def test_icc_equals_pingouin_or_is_undefined_where_pingouins_is_no_correlation(
    table: np.ndarray,
) -> None:
    assume(table.size >= 5)  # pingouin's least
    saved = pingouin.options.pop("round.column.CI95", None)
    try:
        reference = pingouin_icc(table)
    finally:
        if saved is not None:
            pingouin.options["round.column.CI95"] = saved
    figures = icc(table)
    raters = table.shape[1]
    for figure, kind in ((figures.single, "ICC(A,1)"), (figures.average, "ICC(A,k)")):
        expected = reference.at[kind, "ICC"]
        if figure.estimate is None:  # its denominator is not positive
            assert figure.reason == Reason.NO_VARIATION
            assert not -1 <= expected <= 1
            continue
        assert figure.estimate == pytest.approx(expected, abs=1e-9)
        low, high = reference.at[kind, "CI95"]
        if figure.interval is not None:
            assert (figure.interval.low, figure.interval.high) == pytest.approx((low, high))
        elif figure.reason == Reason.UNBOUNDED:  # an F quantile is infinite, or the pole
            single_low = reference.at["ICC(A,1)", "CI95"][0]
            assert not single_low > -1 / (raters - 1) + 1e-9
        elif figure.reason == Reason.NO_VARIATION:  # the units' means are equal: 0/0
            assert np.ptp(table.mean(axis=1)) == pytest.approx(0, abs=1e-12)
        else:  # no residual: each rater's scores are another's shifted
            assert figure.reason == Reason.NO_RESIDUAL
            residuals = table - table.mean(axis=1, keepdims=True) - table.mean(axis=0)
            assert residuals + table.mean() == pytest.approx(np.zeros_like(table), abs=1e-9)


def test_an_icc_k_interval_reaching_spearman_browns_pole_is_unbounded() -> None:
    """ICC(2,1)'s interval reaches -1/(k - 1), where ICC(2,k) = rk / (1 + r(k - 1)) has its
    pole: pingouin's lower bound there is a division by zero."""
    figures = icc([[0.0, 0.0], [1.0, -2.0]])
    assert figures.single.interval is not None and figures.single.interval.low == -1.0
    assert figures.average == Agreement(2, -8.0, None, Reason.UNBOUNDED)


def test_icc_whose_units_vary_less_than_the_error() -> None:
    """The units' means are equal: ICC(2,1) is at its least, its F interval 0/0, and
    ICC(2,k)'s denominator is not positive."""
    figures = icc([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]])
    assert figures.single == Agreement(2, -2.0, None, Reason.NO_VARIATION)
    assert figures.average == Agreement(2, None, None, Reason.NO_VARIATION)


@settings(max_examples=60, deadline=None)
@given(tables(missing=False, least=2), st.permutations(range(5)))
def test_icc_does_not_depend_on_the_order_of_raters(table: np.ndarray, order: list[int]) -> None:
    raters = [r for r in order if r < table.shape[1]]
    before, after = icc(table), icc(table[:, raters])
    for a, b in ((before.single, after.single), (before.average, after.average)):
        assert (a.n, a.reason) == (b.n, b.reason)
        assert (a.estimate is None) == (b.estimate is None)
        if a.estimate is not None:
            assert b.estimate == pytest.approx(a.estimate, abs=1e-9)


def test_identical_raters_have_an_icc_of_one_and_no_f_interval() -> None:
    column = np.array([[1.0], [4.0], [2.0], [5.0], [3.0]])
    figures = icc(np.hstack([column, column, column]))
    assert figures.single == Agreement(5, 1.0, None, Reason.NO_RESIDUAL)
    assert figures.average == Agreement(5, 1.0, None, Reason.NO_RESIDUAL)


@pytest.mark.usefixtures("unrounded")
def test_a_rater_shifted_by_a_constant_lowers_the_icc_and_has_no_f_interval() -> None:
    column = np.array([1.0, 4.0, 2.0, 5.0, 3.0])
    table = np.column_stack([column, column + 1])
    reference = pingouin_icc(table)
    figures = icc(table)
    assert figures.single.reason == Reason.NO_RESIDUAL and figures.single.interval is None
    assert figures.single.estimate == pytest.approx(reference.at["ICC(A,1)", "ICC"], abs=1e-12)
    assert figures.single.estimate is not None and figures.single.estimate < 1


@pytest.mark.parametrize(
    ("table", "n", "reason"),
    [
        ([], 0, Reason.TOO_FEW_UNITS),
        ([[NAN, NAN, NAN]] * 4, 0, Reason.TOO_FEW_UNITS),
        ([[1.0, 2.0], [3.0, None]], 1, Reason.TOO_FEW_UNITS),
        ([[1.0], [2.0], [4.0]], 3, Reason.TOO_FEW_RATERS),
        ([[2.0, 2.0], [2.0, 2.0], [2.0, None]], 2, Reason.NO_VARIATION),
        # The units do not vary at all, the raters' means neither: only error, 0/0.
        ([[0.0, 1.0], [1.0, 0.0]], 2, Reason.NO_VARIATION),
    ],
)
def test_icc_of_degenerate_tables_is_undefined(
    table: list[list[float | None]], n: int, reason: Reason
) -> None:
    figures = icc(table)
    for figure in (figures.single, figures.average):
        assert figure.n == n
        undefined(figure, reason)


# Pearson and Spearman

X = [2.0, 4.0, 4.0, 5.0, 7.0, 8.0, None, 9.0, 1.0, 6.0, 3.0, 5.0]
Y = [1.0, 3.0, 5.0, 4.0, 8.0, 6.0, 2.0, 9.0, 2.0, None, 4.0, 5.0]


def complete_pairs(x: list[float | None], y: list[float | None]) -> tuple[list[float], list[float]]:
    kept = [(a, b) for a, b in zip(x, y, strict=True) if a is not None and b is not None]
    return [a for a, _ in kept], [b for _, b in kept]


def test_pearson_equals_scipys_pearsonr_and_its_interval() -> None:
    a, b = complete_pairs(X, Y)
    reference = stats.pearsonr(a, b)
    interval = reference.confidence_interval()
    figure = pearson(X, Y)
    assert figure.n == 10
    assert figure.estimate == pytest.approx(reference.statistic, abs=1e-12)
    assert figure.interval is not None
    assert (figure.interval.low, figure.interval.high) == pytest.approx(
        (interval.low, interval.high), abs=1e-12
    )


def bonett_wright(rho: float, n: int) -> tuple[float, float]:
    margin = stats.norm.ppf(0.975) * math.sqrt((1 + rho**2 / 2) / (n - 3))
    return math.tanh(math.atanh(rho) - margin), math.tanh(math.atanh(rho) + margin)


def test_spearman_equals_scipys_spearmanr_with_bonett_wrights_interval() -> None:
    a, b = complete_pairs(X, Y)
    rho = stats.spearmanr(a, b).statistic  # ties: average ranks
    figure = spearman(X, Y)
    assert figure.n == 10
    assert figure.estimate == pytest.approx(rho, abs=1e-12)
    assert figure.interval is not None
    expected = bonett_wright(rho, 10)
    assert (figure.interval.low, figure.interval.high) == pytest.approx(expected, abs=1e-12)


def test_the_spearman_interval_covers_the_true_rho_95_times_in_100() -> None:
    """Bivariate normal scores with correlation 0.9, whose Spearman rho is 6/pi asin(0.45):
    Bonett and Wright's interval covers it about 95% of the time (1/sqrt(n - 3) would cover
    it about 92%)."""
    true_rho = 6 / math.pi * math.asin(0.45)
    draws = rng(12).multivariate_normal([0, 0], [[1, 0.9], [0.9, 1]], size=(2000, 20))
    covered = 0
    for sample in draws:
        interval = spearman(sample[:, 0], sample[:, 1]).interval
        assert interval is not None
        covered += interval.low <= true_rho <= interval.high
    assert 0.935 <= covered / len(draws) <= 0.965


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(-10, 10).map(float), st.integers(-10, 10).map(float)),
        min_size=4,
        max_size=40,
    )
)
def test_correlations_equal_scipys(pairs: list[tuple[float, float]]) -> None:
    a, b = [p[0] for p in pairs], [p[1] for p in pairs]
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        undefined(pearson(a, b), Reason.NO_VARIATION)
        undefined(spearman(a, b), Reason.NO_VARIATION)
        return
    figure = pearson(a, b)
    reference = stats.pearsonr(a, b)
    interval = reference.confidence_interval()
    assert figure.estimate == pytest.approx(reference.statistic, abs=1e-9)
    assert figure.interval is not None
    assert (figure.interval.low, figure.interval.high) == pytest.approx(
        (interval.low, interval.high), abs=1e-9
    )
    assert spearman(a, b).estimate == pytest.approx(stats.spearmanr(a, b).statistic, abs=1e-9)
    assert pearson(b, a).estimate == pytest.approx(figure.estimate, abs=1e-12)


def test_a_perfect_correlation_has_the_interval_of_itself() -> None:
    figure = pearson([1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 4.0, 6.0, 8.0, 10.0])
    assert figure == Agreement(5, 1.0, Bounds(1.0, 1.0))
    assert tuple(stats.pearsonr([1, 2, 3, 4, 5], [2, 4, 6, 8, 10]).confidence_interval()) == (
        1.0,
        1.0,
    )
    assert spearman([1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0]) == Agreement(
        4, -1.0, Bounds(-1.0, -1.0)
    )


@pytest.mark.parametrize("correlation", [pearson, spearman])
def test_correlations_of_degenerate_pairs(
    correlation: Callable[[Scores, Scores], Agreement],
) -> None:
    undefined(correlation([], []), Reason.TOO_FEW_UNITS)
    undefined(correlation([None, 1.0, 2.0], [3.0, None, 1.0]), Reason.TOO_FEW_UNITS)
    undefined(correlation([1.0, 2.0], [None, 1.0]), Reason.TOO_FEW_UNITS)
    undefined(correlation([3.0, 3.0, 3.0, 3.0], [1.0, 2.0, 3.0, 4.0]), Reason.NO_VARIATION)
    undefined(correlation([1.0, 2.0, 3.0, 4.0], [5.0, 5.0, 5.0, 5.0]), Reason.NO_VARIATION)
    three = correlation([1.0, 2.0, 3.0], [1.0, 3.0, 2.0])
    assert three.n == 3 and three.estimate == pytest.approx(0.5)
    assert (three.interval, three.reason) == (None, Reason.TOO_FEW_UNITS)


# Kendall's tau-b between the models' rankings

MODELS = ["a", "b", "c", "d"]


def study(seed: int, episodes: int = 30) -> pd.DataFrame:
    """Two agents per episode, each played by a model; two sources score each agent."""
    generator = rng(seed)
    rows = []
    for episode in range(episodes):
        for model in generator.choice(MODELS, size=2, replace=False):
            quality = MODELS.index(model)
            first = float(generator.integers(0, 4) + quality)
            second = float(generator.integers(0, 6) + quality) if generator.random() > 0.1 else NAN
            rows.append((f"ep{episode:03d}", str(model), first, second))
    return pd.DataFrame(rows, columns=["episode", "model", "first", "second"])


def reference_tau(units: pd.DataFrame) -> float:
    means = units.dropna().groupby("model")[["first", "second"]].mean()
    if len(means) < len(MODELS):
        return NAN
    return float(stats.kendalltau(means["first"], means["second"], variant="b").statistic)


def test_tau_equals_scipys_kendalltau_of_the_models_mean_scores() -> None:
    units = study(1)
    found = ranking(
        units["first"].tolist(),
        units["second"].tolist(),
        units["model"].tolist(),
        units["episode"].tolist(),
        rng=rng(),
    )
    paired = units.dropna()
    assert found.tau.n == len(paired) < len(units)  # units one source did not score are left out
    assert found.tau.estimate == pytest.approx(reference_tau(units), abs=1e-12)
    means = paired.groupby("model")[["first", "second"]].mean()
    assert found.models == tuple(MODELS)
    assert found.first == pytest.approx(tuple(means["first"]))
    assert found.second == pytest.approx(tuple(means["second"]))
    assert found.episodes == 30


def test_tied_means_count_as_tau_b_counts_them() -> None:
    first = [1.0, 1.0, 2.0, 3.0, 5.0]
    second = [2.0, 4.0, 3.0, 3.0, 1.0]
    models = ["a", "b", "c", "d", "e"]  # first ties a and b, second c and d
    found = ranking(first, second, models, rng=rng(), resamples=10)
    reference = stats.kendalltau(first, second, variant="b").statistic
    assert found.tau.estimate == pytest.approx(reference, abs=1e-12)


def test_the_tau_interval_is_the_percentile_over_resampled_episodes() -> None:
    """A resample draws episodes (in the order of their names) with all their units; one in
    which a model has no unit is left out."""
    units = study(2, episodes=12)
    names = sorted(units["episode"].unique())
    paired = units.dropna()
    by_episode = {name: paired[paired["episode"] == name] for name in names}
    draws = np.concatenate(list(bootstrap.draws(rng(3), len(names), 400)))
    figures = [reference_tau(pd.concat([by_episode[names[i]] for i in row])) for row in draws]
    defined = [f for f in figures if not math.isnan(f)]
    found = ranking(
        units["first"].tolist(),
        units["second"].tolist(),
        units["model"].tolist(),
        units["episode"].tolist(),
        rng=rng(3),
        resamples=400,
    )
    assert found.tau.interval is not None
    assert found.tau.interval.resamples == len(defined) < 400
    expected = np.quantile(defined, [0.025, 0.975])
    assert (found.tau.interval.low, found.tau.interval.high) == pytest.approx(
        tuple(expected), abs=1e-12
    )


def test_without_episodes_each_unit_is_resampled_alone() -> None:
    first = [1.0, 2.0, 3.0, 4.0, 2.0, 5.0, 3.0, 6.0]
    second = [2.0, 1.0, 4.0, 3.0, 3.0, 4.0, 5.0, 6.0]
    models = ["a", "b", "c", "d", "a", "b", "c", "d"]
    alone = ranking(first, second, models, rng=rng(), resamples=300)
    named = ranking(first, second, models, [str(i) for i in range(8)], rng=rng(), resamples=300)
    assert alone == named  # one-digit names sort as the units' order
    assert alone.episodes == 8


def test_degenerate_rankings() -> None:
    one_model = ranking([1.0, 2.0], [2.0, 1.0], ["a", "a"], rng=rng())
    undefined(one_model.tau, Reason.TOO_FEW_MODELS)
    assert one_model.models == ("a",) and one_model.tau.n == 2
    nothing = ranking([None, 1.0], [2.0, None], ["a", "b"], rng=rng())
    undefined(nothing.tau, Reason.TOO_FEW_UNITS)
    assert (nothing.models, nothing.first, nothing.episodes) == ((), (), 0)
    undefined(ranking([], [], [], rng=rng()).tau, Reason.TOO_FEW_UNITS)
    tied = ranking([1.0, 1.0, 1.0], [1.0, 2.0, 3.0], ["a", "b", "c"], rng=rng())
    undefined(tied.tau, Reason.NO_VARIATION)
    one_episode = ranking([1.0, 2.0], [1.0, 3.0], ["a", "b"], ["e", "e"], rng=rng())
    assert one_episode.tau == Agreement(2, 1.0, None, Reason.TOO_FEW_UNITS)


# Malformed input is the caller's mistake


@pytest.mark.parametrize(
    "call",
    [
        lambda: alpha(np.array([1.0, 2.0]), rng=rng()),  # one list, not a table
        lambda: icc([[1.0, math.inf], [2.0, 3.0]]),
        lambda: pearson([1.0, 2.0], [1.0]),
        lambda: spearman(np.array([[1.0]]), np.array([[2.0]])),
        lambda: ranking([1.0, 2.0], [1.0, 2.0], ["a"], rng=rng()),
        lambda: ranking([1.0, 2.0], [1.0, 2.0], ["a", "b"], ["e"], rng=rng()),
    ],
)
def test_malformed_input_is_a_value_error(call: Callable[[], object]) -> None:
    with pytest.raises(ValueError, match=r"."):
        call()
