"""Experiment arms: each arm slot is filled by a fork of its control slot's episode at the arm's
turn, once that episode has COMPLETED.

A worker forks the arms of a control episode right after storing it COMPLETED (`fork_arms`: the
episode names its experiment and slot, so no slot map is scanned); a start of the experiment
forks every arm whose control has COMPLETED and whose own slot is empty or holds a failed or
cancelled episode (`fill_arms`), so an arm a lost worker did not fork is not lost. Exactly once,
as for control slots (lifecycle/experiments.py): the fork carries the idempotency key of its
slot and of the episode it replaces, and the slot map is moved only from the state it was read
in. A control that ended before the arm's turn leaves its arm slot empty for good: "not
reached" (`reached`).
"""

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from parley.core.errors import UserError
from parley.lifecycle import failpoints
from parley.lifecycle.forks import ForkFields, fork_episode
from parley.lifecycle.services import Services
from parley.resolvers.arm_comparison import differences, scored
from parley.resolvers.experiment_design import CONTROL, Arm, Layout, reached
from parley.resolvers.statistics import Paired
from parley.storage import keys
from parley.storage.experiments import ExperimentStore
from parley.storage.models import EpisodeLog, EpisodeStatus, Experiment

log = logging.getLogger(__name__)
RETRIED = frozenset({EpisodeStatus.FAILED, EpisodeStatus.CANCELLED})
"""Statuses whose slot a new start fills again."""
ROUNDS = 3
"""Passes of one fill: a pass can get back, through a slot's key, an episode an earlier fill
made before it stopped and that has failed since; the next pass replaces those."""


def arm_fork(
    experiment: Experiment, arm: Arm, number: int, control: str, previous: str
) -> ForkFields:
    """The fork that fills arm slot `number` after episode `previous` ("" for the first)."""
    pk = str(experiment.pk)
    return ForkFields(
        episode_id=control,
        at_turn=arm.at_turn,
        seat_models=arm.seat_models,
        inject_message=arm.inject,
        goals=arm.goals,
        tag=experiment.tag,
        idempotency_key=keys.experiment_slot_claim(pk, number, previous),
        experiment_id=pk,
        arm=arm.name,
        experiment_slot=number,
    )


async def fill_arms(
    services: Services, experiment: Experiment, controls: Sequence[int]
) -> tuple[int, list[UserError]]:
    """Fork the arms of these control slots that are due; how many slots this filled."""
    layout = Layout.of(experiment.design, experiment.slot_count)
    if not layout.arms:
        return 0, []
    store = ExperimentStore(services.client)
    pk = str(experiment.pk)
    filled = 0
    errors: list[UserError] = []
    todo = list(controls)
    for _ in range(ROUNDS):
        numbers = [*todo, *(n for c in todo for n, _ in layout.arm_slots(c))]
        slots = await store.slots_of(pk, numbers)
        ids = list(slots.values())
        state = dict(zip(ids, await store.statuses(ids), strict=True))
        again: set[int] = set()
        for control in todo:
            parent = state.get(slots.get(control, ""))
            if parent is None or parent.status != EpisodeStatus.COMPLETED:
                continue  # not done yet, or retried by a start: its arms wait
            for number, arm in layout.arm_slots(control):
                previous = slots.get(number, "")
                current = state.get(previous)
                if previous and current is not None and current.status not in RETRIED:
                    continue
                if not reached(parent.played, arm):
                    continue
                fields = arm_fork(experiment, arm, number, slots[control], previous)
                forked = await fork_episode(services, fields)
                if forked.episode is None:
                    errors += [slot_error(e, number) for e in forked.errors]
                    continue
                (done,) = await store.fill(pk, [(number, previous, str(forked.episode.pk))])
                if forked.episode.status in RETRIED:
                    again.add(control)  # an earlier fill's fork that failed since: replaced next
                elif done:
                    filled += 1
        todo = sorted(again)
        if not todo:
            break
    return filled, errors


def slot_error(error: UserError, slot: int) -> UserError:
    """A fork's error, named by the arm slot it was for."""
    _, *rest = error.field
    message = f"slot {slot}: {error.message}"
    return UserError(["input", "id", "slots", str(slot), *rest], message, error.code)


async def fork_arms(services: Services, episode: EpisodeLog) -> None:
    """After a control episode of an experiment with arms COMPLETED: fork its arms. A failure
    here is logged and left to the next start of the experiment (`fill_arms`)."""
    if episode.arm != CONTROL or not episode.experiment_id or episode.experiment_slot is None:
        return
    experiment = await ExperimentStore(services.client).get(episode.experiment_id)
    if experiment is None:
        return
    failpoints.reached("experiment:before-arms")
    filled, errors = await fill_arms(services, experiment, [episode.experiment_slot])
    for error in errors:
        log.warning("an arm was not forked: %s", error.message)
    if filled:
        log.info("forked %d arm(s) of slot %d", filled, episode.experiment_slot)


@dataclass(frozen=True)
class ArmResult:
    """How an arm compares with the control, and where its slots are."""

    arm: Arm
    pairs: int
    """Arm slots whose arm and control episodes both completed with scores."""
    not_reached: int
    """Arm slots whose control ended before the arm's turn (never forked)."""
    unfinished: int
    """Arm slots with no ended episode yet (their control may not have ended either)."""
    unpaired: int
    """Arm slots that ended otherwise: failed, cancelled, or one of the two without scores."""
    differences: list[tuple[str, Paired]]
    """Per dimension, `overall` first: arm - control, paired by slot and seat."""
    first_pair: tuple[str, str] | None = None
    """The (control, arm) episodes of the first paired slot, to look at side by side."""


async def arm_results(services: Services, experiment: Experiment) -> list[ArmResult]:
    """Each arm against the control, from the episodes now in the slots: three reads of the
    slot map's episodes whatever their number (their states, then their rewards)."""
    layout = Layout.of(experiment.design, experiment.slot_count)
    if not layout.arms:
        return []
    store = ExperimentStore(services.client)
    slots = await store.slots(str(experiment.pk))
    ids = list(slots.values())
    state = dict(zip(ids, await store.statuses(ids), strict=True))
    completed = [pk for pk in ids if (s := state.get(pk)) and s.status == EpisodeStatus.COMPLETED]
    rewards = dict(zip(completed, await store.rewards(completed), strict=True))
    out: list[ArmResult] = []
    for i, arm in enumerate(layout.arms):
        pairs: list[tuple[Sequence[Any] | None, Sequence[Any] | None]] = []
        not_reached = unfinished = unpaired = 0
        first: tuple[str, str] | None = None
        for control in range(layout.controls):
            number = layout.controls * (i + 1) + control
            parent = state.get(slots.get(control, ""))
            mine = state.get(slots.get(number, ""))
            if mine is None or not mine.status.terminal:
                if parent and parent.status == EpisodeStatus.COMPLETED:
                    not_reached += 0 if reached(parent.played, arm) else 1
                    unfinished += 1 if reached(parent.played, arm) else 0
                else:
                    unfinished += 1
                continue
            both = (rewards.get(slots[control]), rewards.get(slots[number]))
            if scored(both[0]) and scored(both[1]):
                pairs.append(both)
                first = first or (slots[control], slots[number])
            else:
                unpaired += 1
        counts = (len(pairs), not_reached, unfinished, unpaired)
        out.append(ArmResult(arm, *counts, differences(pairs), first))
    return out
