"""Which slots of a paced experiment (a design with a budget or a precision) may be queued now.

An unpaced experiment queues every slot at once. A paced one queues what `admit` lets through,
each time it is started and each time a worker ends one of its episodes (`top_up`), under a lock
of its own so two of them never admit the same money twice:

- **Precision**: round r holds the control slots of repeat r. Only the first round is open at
  first; once every slot of the open rounds has ended, the experiment stops for good (`PRECISION`)
  if every compared model's overall score is known as precisely as asked (resolvers/precision.py),
  else the next round opens.
- **Budget**: a slot is queued only while what the experiment spent, plus what its episodes in
  flight may still cost, plus what this slot may cost, stays within the budget. What an episode
  may cost is the upper 95% bound of one more episode of its kind (lifecycle/estimate.py); an
  episode in flight is reckoned at that bound less what it has spent. While some kind has nothing
  recorded, its episodes go one at a time (one of all such kinds in flight at once), each only
  while what is spent and reckoned is under the budget: so the budget is passed by one such
  episode at most. Once the next slot does not fit and nothing is in flight, the experiment stops
  for good (`BUDGET`).
A stopped experiment queues nothing more; its slots never queued are *held* in its progress.
"""

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from parley.core.errors import ErrorCode, UserError
from parley.lifecycle.estimate import (
    PriceOf,
    history_for,
    per_episode_high,
    spread,
)
from parley.lifecycle.services import Services
from parley.resolvers.experiment_design import Design
from parley.resolvers.precision import precise
from parley.resolvers.statistics import Moments
from parley.resolvers.usage import usage_totals
from parley.storage.experiments import EpisodeState, ExperimentStore
from parley.storage.models import EpisodeStatus, Experiment, ExperimentSlot
from parley.storage.spending import costs

LOCK_SECONDS = 60.0
"""How long a pacing lock is held at most (a process that died holding it)."""


class Stop(StrEnum):
    BUDGET = "BUDGET"
    PRECISION = "PRECISION"
    CANCELLED = "CANCELLED"
    """Not stored as a stop: an experiment cancelled since its latest start (a start resumes
    it)."""


CANCELLED = Stop.CANCELLED.value


@dataclass(frozen=True)
class Admitted:
    slots: list[tuple[int, str]]
    """(slot, the episode now in it or "") that may be queued now."""
    stop: Stop | None = None
    """Set when the experiment stops here for good."""


def overall(rewards: Any, seat: int) -> float | None:
    """A seat's overall score from stored rewards (Sotopia's (overall, dimensions) pairs)."""
    try:
        entry = rewards[seat]
        return float(entry[0]) if isinstance(entry, list | tuple) else None
    except (IndexError, TypeError, ValueError):
        return None


def compared_scores(plan: Sequence[ExperimentSlot], scored: dict[int, Any]) -> dict[str, Moments]:
    """Each compared model's overall scores over the scored slots: in a design against a
    partner, the compared model's seat; with explicit seats, every seat's model."""
    scores: dict[str, list[float]] = defaultdict(list)
    for number, rewards in scored.items():
        slot = plan[number]
        if slot.seat is not None:
            seats = [(slot.seat, slot.model)]
        else:
            seats = list(enumerate(slot.agent_models))
        for seat, model in seats:
            value = overall(rewards, seat)
            if value is not None:
                scores[model].append(value)
    return {model: Moments.of_scores(values) for model, values in scores.items()}


@dataclass
class Reading:
    """The stored state a pacing decision reads."""

    plan: list[ExperimentSlot]
    filled: dict[int, str]
    states: dict[int, EpisodeState]

    def ended(self, number: int) -> bool:
        state = self.states.get(number)
        return state is not None and state.status.terminal

    def in_flight(self) -> list[int]:
        return [n for n, s in self.states.items() if not s.status.terminal]


async def read(store: ExperimentStore, pk: str, controls: int) -> Reading:
    plan = (await store.plan(pk))[:controls]
    filled = {n: e for n, e in (await store.slots(pk)).items() if n < controls}
    numbers = sorted(filled)
    found = await store.statuses([filled[n] for n in numbers])
    states = {n: s for n, s in zip(numbers, found, strict=True) if s is not None}
    return Reading(plan, filled, states)


async def rounds_admitted(
    store: ExperimentStore, design: Design, reading: Reading, refilled: set[int]
) -> tuple[int, Stop | None]:
    """How many rounds (repeats) are open, or the stop when the results are precise enough. A
    slot about to be filled again (`refilled`: a start retrying a failed one) has not ended."""
    assert design.precision is not None
    done = 0
    for repeat in range(design.repeats):
        slots = [n for n, slot in enumerate(reading.plan) if slot.repeat == repeat]
        if not all(reading.ended(n) and n not in refilled for n in slots):
            break
        done += 1
    if done == design.repeats:
        return done, None
    if done:
        judged = [
            n
            for n, s in reading.states.items()
            if s.status == EpisodeStatus.COMPLETED and not s.unjudged
        ]
        rewards = await store.rewards([reading.filled[n] for n in judged])
        scored = {n: r for n, r in zip(judged, rewards, strict=True) if r is not None}
        if precise(compared_scores(reading.plan, scored), design.precision):
            return done, Stop.PRECISION
    return done + 1, None


async def within_budget(
    services: Services,
    experiment: Experiment,
    design: Design,
    reading: Reading,
    todo: list[tuple[int, str]],
) -> tuple[list[tuple[int, str]], Stop | None]:
    """The first slots of `todo` that fit the budget, and the stop when the next one cannot
    fit with nothing in flight (module docstring)."""
    assert design.budget is not None
    judge = design.panel().label()
    history = await history_for(services, reading.plan)
    keys = {n: history.key(slot, judge, design.max_turns) for n, slot in enumerate(reading.plan)}
    in_use = {k for k in keys.values() if k is not None}
    pooled = spread([c for k in in_use if (c := history.kind(k).cost)])
    highs = {k: per_episode_high(history.kind(k), pooled) for k in in_use}
    totals = await usage_totals(experiment_id=str(experiment.pk))
    committed = totals.cost or 0.0
    flying = reading.in_flight()
    calibrating = False
    spent_so_far = await costs(services.client, [reading.filled[n] for n in flying])
    for number, spent in zip(flying, spent_so_far, strict=True):
        key = keys[number]
        high = highs.get(key) if key is not None else None
        if high is None:
            calibrating = True
        else:
            committed += max(0.0, high - spent)
    admitted: list[tuple[int, str]] = []
    refused = False
    """A slot did not fit: the budget, not a calibration under way, held it."""
    for number, previous in todo:
        key = keys[number]
        high = highs.get(key) if key is not None else None
        if high is None:
            # nothing known of its kind's cost: one such episode at a time, while any is left
            if committed >= design.budget:
                refused = True
                break
            if calibrating:
                continue
            calibrating = True
        elif committed + high > design.budget + 1e-12:
            refused = True
            break
        else:
            committed += high
        admitted.append((number, previous))
    stop = Stop.BUDGET if refused and not admitted and not flying else None
    return admitted, stop


async def admit(
    services: Services, experiment: Experiment, todo: list[tuple[int, str]], controls: int
) -> Admitted:
    """Which of the slots to fill (`todo`, in slot order) may be queued now."""
    design = Design.model_validate(experiment.design)
    if not design.paced or experiment.replay_of is not None:
        return Admitted(todo)
    if experiment.stopped is not None:
        return Admitted([])
    store = ExperimentStore(services.client)
    reading = await read(store, str(experiment.pk), controls)
    if design.precision is not None:
        refilled = {n for n, previous in todo if previous}
        rounds, stop = await rounds_admitted(store, design, reading, refilled)
        if stop is not None:
            return Admitted([], stop)
        todo = [(n, e) for n, e in todo if reading.plan[n].repeat < rounds]
    if design.budget is not None and todo:
        todo, stop = await within_budget(services, experiment, design, reading, todo)
        if stop is not None:
            return Admitted([], stop)
    return Admitted(todo)


def budget_errors(
    design: Design, slots: Sequence[ExperimentSlot], prices: PriceOf
) -> list[UserError]:
    """INVALID at the budget for each model the design uses that has no price (a budget counts
    dollars; the embedded model is priced at 0)."""
    if design.budget is None:
        return []
    used = {judge.model for judge in design.panel().judges}
    used |= {model for slot in slots for model in slot.agent_models}
    errors = []
    for model in sorted(used):
        if prices(model) is None:
            message = (
                f"model {model!r} has no prices in the models file: a budget needs every "
                "model of the design priced (prompt_price and completion_price)"
            )
            errors.append(UserError(["input", "design", "budget"], message, ErrorCode.INVALID))
    return errors
