"""The estimate's arithmetic: which recorded episodes a slot is compared with, the prediction
range of a total, and what a budget reckons one more episode may cost."""

import math

import pytest
from scipy import stats

from parley.engine.usage import Prices
from parley.lifecycle.estimate import (
    CALIBRATION,
    Kind,
    UsageHistory,
    calibration_slots,
    estimate,
    per_episode_high,
    predicted,
    spread,
)
from parley.storage.models import ExperimentSlot
from parley.storage.spending import RecordedUsage

PRICED = {"a": Prices(prompt=1.0, completion=2.0), "judge": Prices(prompt=0.5, completion=0.5)}


def recorded(scenario: str, models: tuple[str, ...], requests: int, tokens: int) -> RecordedUsage:
    """An episode whose agent model spent `tokens` prompt tokens and as many completion ones."""
    return RecordedUsage(scenario, models, 4, requests, {models[1]: (tokens, tokens)})


def slot(scenario: str, *models: str) -> ExperimentSlot:
    return ExperimentSlot(scenario_id=scenario, agent_ids=["x", "y"], agent_models=list(models))


def test_the_range_of_a_total_is_the_prediction_interval_of_a_sum() -> None:
    # One kind: the total of m new episodes, each N(mu, s2), mu estimated from n of them:
    # Var = s2 * (m + m^2 / n), and the quantile is t with n - 1 degrees of freedom.
    values, m = [10.0, 12.0, 11.0, 15.0], 6
    found = predicted([(m, values)])
    n, mean = len(values), sum(values) / len(values)
    s2 = stats.tvar(values)
    margin = stats.t.ppf(0.975, n - 1) * math.sqrt(s2 * (m + m * m / n))
    assert found.expected == pytest.approx(m * mean)
    assert found.low == pytest.approx(m * mean - margin)
    assert found.high == pytest.approx(m * mean + margin)


def test_kinds_pool_their_spread_and_add_their_totals() -> None:
    first, second = [1.0, 3.0], [10.0, 14.0, 12.0]
    variance, df = spread([first, second]) or (0.0, 0)
    assert df == 3
    assert variance == pytest.approx((2.0 + 8.0) / 3)
    found = predicted([(2, first), (3, second)])
    assert found.expected == pytest.approx(2 * 2.0 + 3 * 12.0)
    half = stats.t.ppf(0.975, 3) * math.sqrt(variance * (2 + 4 / 2 + 3 + 9 / 3))
    assert found.high == pytest.approx(found.expected + half)


def test_a_total_never_ranges_below_zero_and_an_unknown_spread_has_no_range() -> None:
    assert (predicted([(1, [0.0, 10.0])]).low or 0.0) == 0.0
    alone = predicted([(5, [4.0])])
    assert (alone.expected, alone.low, alone.high) == (20.0, None, None)


def test_a_slot_is_compared_in_its_scenario_first_then_in_any() -> None:
    models = ("judge", "a", "a")
    history = UsageHistory(
        [
            recorded("s1", models, 6, 100),
            recorded("s1", models, 6, 100),
            recorded("s2", models, 8, 300),
        ],
        PRICED.get,
    )
    assert history.key(slot("s1", "a", "a"), "judge", 4) == ("s1", models, 4)
    # one in its scenario shows no spread: all of them, in any scenario
    assert history.key(slot("s2", "a", "a"), "judge", 4) == ("", models, 4)
    assert history.key(slot("s3", "a", "a"), "judge", 4) == ("", models, 4)
    assert history.key(slot("s1", "a", "a"), "judge", 5) is None  # another turn limit
    assert history.key(slot("s1", "a", "b"), "judge", 4) is None  # other models
    assert history.key(slot("s1", "a", "a"), "other-judge", 4) is None
    anywhere = history.kind(("", models, 4))
    assert anywhere.calls == [6.0, 6.0, 8.0] and anywhere.tokens == [200.0, 200.0, 600.0]
    # priced now: (100 * 1 + 100 * 2) / 1e6 dollars for the first
    assert anywhere.cost is not None
    assert anywhere.cost == pytest.approx([300 / 1e6, 300 / 1e6, 900 / 1e6])


def test_an_unpriced_model_leaves_the_cost_unknown() -> None:
    models = ("judge", "free", "free")
    history = UsageHistory([recorded("s1", models, 6, 100)] * 2, PRICED.get)
    found = estimate([slot("s1", "free", "free")], history, "judge", 4)
    assert found.cost is None and found.calls is not None and found.covered == 1


def test_the_estimate_counts_each_recorded_episode_once_and_names_what_it_lacks() -> None:
    models = ("judge", "a", "a")
    history = UsageHistory(
        [recorded("s1", models, 6, 100), recorded("s1", models, 8, 100)], PRICED.get
    )
    slots = [slot("s1", "a", "a"), slot("s2", "a", "a"), slot("s1", "b", "a")]
    found = estimate(slots, history, "judge", 4)
    assert (found.episodes, found.covered, found.comparable) == (3, 2, 2)
    assert found.uncovered == [("judge", "b", "a")]
    assert found.calls is not None and found.calls.expected == pytest.approx(14.0)


def test_a_calibration_plays_the_first_slots_of_each_uncovered_kind() -> None:
    history = UsageHistory([recorded("s1", ("judge", "a", "a"), 6, 100)], PRICED.get)
    slots = [slot("s1", "a", "a")] + [slot(f"s{i}", "b", "a") for i in range(4)]
    slots += [slot("s9", "a", "b")]
    # of b/a (slots 1 to 4) the first and the one halfway; of a/b (slot 5) its one
    assert calibration_slots(slots, history, "judge", 4) == [1, 3, 5]
    assert CALIBRATION == 2


def test_one_more_episode_is_reckoned_at_its_upper_bound() -> None:
    kind = Kind(calls=[1.0, 1.0], tokens=[1.0, 1.0], cost=[1.0, 3.0])
    pooled = spread([kind.cost or []])
    bound = per_episode_high(kind, pooled) or 0.0
    assert bound == pytest.approx(2.0 + stats.t.ppf(0.975, 1) * math.sqrt(2.0 * 1.5))
    assert per_episode_high(Kind([1.0], [1.0], [0.5]), None) == 1.0  # twice the one known
    assert per_episode_high(Kind([1.0], [1.0], None), None) is None
