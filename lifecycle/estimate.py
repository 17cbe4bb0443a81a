"""What an experiment will take before it runs: model calls, tokens and money, with a 95% range.

Each slot is matched with the recorded usage of comparable COMPLETED episodes: the same
scenario, the same models in the same seats (the judge included) and the same turn limit; with
fewer than two in its scenario (whose spread would not be known), those of the same models and
turn limit in any of the design's scenarios.
A slot with neither is *uncovered*: a calibration run (`calibration_slots`) plays two of its
kind first. Cost is priced from the models file as it is now, so a price change is seen at once.

The range is a prediction interval for the sum over the slots: with slots of kind k (m_k of
them, n_k recorded episodes, mean x̄_k) and the pooled within-kind variance s² (df = Σ(n_k - 1)),
the total is Σ m_k·x̄_k ± t(0.975, df)·√(Σ s²·(m_k + m_k²/n_k)): each new episode varies by s²,
and each kind's mean is itself known to s²/n_k. With no kind recorded twice the spread is not
known and the range is left out. An arm slot is estimated as a whole episode of its models: an
upper bound, since a fork plays only the turns from its arm's.
"""

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from parley.engine.usage import Prices, TokenCount
from parley.lifecycle.services import Services
from parley.resolvers.experiment_design import Design
from parley.resolvers.statistics import t_quantile
from parley.storage.experiments import ExperimentStore
from parley.storage.models import Experiment, ExperimentSlot
from parley.storage.spending import RecordedUsage, recorded_usage

CALIBRATION = 2
"""Episodes a calibration run plays of each uncovered kind (two, so its spread is known)."""
FIGURES = ("calls", "tokens", "cost")
PriceOf = Callable[[str], Prices | None]
Models = tuple[str, ...]
Key = tuple[str, Models, int]
"""(scenario, models with the judge first, turn limit); the scenario "" for any of them."""


@dataclass(frozen=True)
class Range:
    expected: float
    low: float | None
    """None when the spread is not known (no kind recorded twice)."""
    high: float | None


@dataclass(frozen=True)
class Kind:
    """The recorded figures of the episodes comparable with some slots."""

    calls: list[float]
    tokens: list[float]
    cost: list[float] | None
    """From the episodes whose every model has prices; None when none has."""

    def figures(self, name: str) -> list[float] | None:
        values: list[float] | None = getattr(self, name)
        return values


@dataclass(frozen=True)
class Estimate:
    episodes: int
    """Slots estimated."""
    covered: int
    """Slots with comparable recorded episodes."""
    comparable: int
    """Recorded episodes the estimate rests on (each once)."""
    calls: Range | None
    tokens: Range | None
    cost: Range | None
    """None when a model has no price, or no slot is covered."""
    uncovered: list[Models]
    """The models (judge first) of slots with nothing comparable, each once."""


def cost_of(usage: RecordedUsage, price_of: PriceOf) -> float | None:
    total = 0.0
    for model, (prompt, reply) in usage.tokens.items():
        prices = price_of(model)
        if prices is None:
            return None
        total += prices.cost(TokenCount(prompt_tokens=prompt, completion_tokens=reply))
    return total


class UsageHistory:
    """Recorded episodes grouped by what makes them comparable with a slot."""

    def __init__(self, recorded: Sequence[RecordedUsage], price_of: PriceOf) -> None:
        self.groups: dict[Key, list[RecordedUsage]] = defaultdict(list)
        for usage in recorded:
            self.groups[(usage.scenario_id, usage.models, usage.max_turns)].append(usage)
            self.groups[("", usage.models, usage.max_turns)].append(usage)
        self.price_of = price_of
        self._kinds: dict[Key, Kind] = {}

    def key(self, slot: ExperimentSlot, judge: str, max_turns: int) -> Key | None:
        """The key of the recorded episodes comparable with the slot; None when there are none."""
        models = (judge, *slot.agent_models)
        exact, loose = (slot.scenario_id, models, max_turns), ("", models, max_turns)
        if len(self.groups.get(exact, ())) >= 2:
            return exact
        return loose if loose in self.groups else None

    def kind(self, key: Key) -> Kind:
        if key not in self._kinds:
            found = self.groups[key]
            costs = [c for u in found if (c := cost_of(u, self.price_of)) is not None]
            self._kinds[key] = Kind(
                calls=[float(u.requests) for u in found],
                tokens=[float(sum(p + r for p, r in u.tokens.values())) for u in found],
                cost=costs or None,  # priced from the episodes whose every model has prices
            )
        return self._kinds[key]


def spread(groups: Sequence[list[float]]) -> tuple[float, int] | None:
    """The pooled within-group variance and its degrees of freedom; None with none."""
    df = sum(len(g) - 1 for g in groups)
    if df <= 0:
        return None
    squares = 0.0
    for values in groups:
        mean = sum(values) / len(values)
        squares += sum((v - mean) ** 2 for v in values)
    return squares / df, df


def predicted(parts: Sequence[tuple[int, list[float]]]) -> Range:
    """The total over (slots, recorded figures) parts, with its 95% prediction range."""
    expected = sum(m * sum(v) / len(v) for m, v in parts)
    pooled = spread([v for _, v in parts])
    if pooled is None:
        return Range(expected, None, None)
    variance, df = pooled
    margin = t_quantile(df) * math.sqrt(sum(variance * (m + m * m / len(v)) for m, v in parts))
    return Range(expected, max(0.0, expected - margin), expected + margin)


def per_episode_high(kind: Kind, pooled: tuple[float, int] | None) -> float | None:
    """What one more episode of the kind may cost at most, at 95% (its upper prediction bound,
    and never below the dearest recorded); twice the one recorded while the spread is not
    known; None when unpriced."""
    if kind.cost is None or not kind.cost:
        return None
    mean = sum(kind.cost) / len(kind.cost)
    if pooled is None:
        return 2 * max(kind.cost)
    variance, df = pooled
    bound = mean + t_quantile(df) * math.sqrt(variance * (1 + 1 / len(kind.cost)))
    return max(bound, max(kind.cost))


def estimate(
    slots: Sequence[ExperimentSlot], history: UsageHistory, judge: str, max_turns: int
) -> Estimate:
    """The estimate of these slots from the history (module docstring)."""
    counts: dict[Key, int] = defaultdict(int)
    uncovered: dict[Models, None] = {}
    for slot in slots:
        key = history.key(slot, judge, max_turns)
        if key is None:
            uncovered[(judge, *slot.agent_models)] = None
        else:
            counts[key] += 1
    kinds = {key: history.kind(key) for key in counts}
    ranges: dict[str, Range | None] = {}
    for name in FIGURES:
        parts: list[tuple[int, list[float]]] = []
        for key, m in counts.items():
            values = kinds[key].figures(name)
            if values is None:
                parts = []
                break
            parts.append((m, values))
        ranges[name] = predicted(parts) if parts else None
    return Estimate(
        episodes=len(slots),
        covered=sum(counts.values()),
        comparable=len({id(u) for key in counts for u in history.groups[key]}),
        calls=ranges["calls"],
        tokens=ranges["tokens"],
        cost=ranges["cost"],
        uncovered=list(uncovered),
    )


def calibration_slots(
    slots: Sequence[ExperimentSlot], history: UsageHistory, judge: str, max_turns: int
) -> list[int]:
    """The slots a calibration run plays: of each uncovered kind, its first slot and the one
    halfway through its slots (in design order, so most often another scenario or pair: two
    alike would show no spread)."""
    of_kind: dict[Models, list[int]] = defaultdict(list)
    for number, slot in enumerate(slots):
        if history.key(slot, judge, max_turns) is None:
            of_kind[(judge, *slot.agent_models)].append(number)
    chosen: set[int] = set()
    for numbers in of_kind.values():
        picks = [numbers[round(i * len(numbers) / CALIBRATION)] for i in range(CALIBRATION)]
        chosen.update(picks)
    return sorted(chosen)


async def history_for(services: Services, slots: Sequence[ExperimentSlot]) -> UsageHistory:
    """The recorded usage of episodes in the slots' scenarios, priced from the models file."""
    scenarios = sorted({slot.scenario_id for slot in slots})
    recorded = await recorded_usage(services.client, scenarios)
    return UsageHistory(recorded, services.models.prices)


async def of_experiment(services: Services, experiment: Experiment) -> Estimate:
    """The estimate of every slot of the experiment's design."""
    design = Design.model_validate(experiment.design)
    plan = await ExperimentStore(services.client).plan(str(experiment.pk))
    history = await history_for(services, plan)
    return estimate(plan, history, design.panel().label(), design.max_turns)


async def calibration_of(services: Services, experiment: Experiment) -> list[int]:
    """The control slots a calibration run of the experiment plays (`calibration_slots`)."""
    design = Design.model_validate(experiment.design)
    plan = await ExperimentStore(services.client).plan(str(experiment.pk))
    controls = plan[: len(plan) // (1 + len(design.arms))]
    history = await history_for(services, controls)
    return calibration_slots(controls, history, design.panel().label(), design.max_turns)
