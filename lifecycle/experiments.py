"""Experiments: create one from a design, start (or resume) it, cancel it, and measure progress.

Episodes are started through `lifecycle.start.start_many`, each with an idempotency key derived
from its slot and the episode it replaces (`keys.experiment_slot_claim`): two starts that read the
same state make one episode per slot, and a start that stopped between writing episodes and
recording them in the slot map finds the same episodes again.
"""

import asyncio
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Unpack

from pydantic import BaseModel
from ulid import ULID

from parley.core.errors import ErrorCode, UserError, not_found, validated
from parley.core.limits import Name, ShortText
from parley.lifecycle import failpoints
from parley.lifecycle import start as simulations
from parley.lifecycle.estimate import calibration_of
from parley.lifecycle.experiment_arms import RETRIED, fill_arms
from parley.lifecycle.pacing import CANCELLED, LOCK_SECONDS, admit, budget_errors
from parley.lifecycle.services import Services
from parley.resolvers.experiment_design import CONTROL, Design, Layout, plan, reached
from parley.resolvers.keyset import newest_first
from parley.resolvers.pagination import Page, PageArgs, fetch_page
from parley.resolvers.search import tag_terms
from parley.storage import keys
from parley.storage.experiments import ExperimentStore
from parley.storage.models import UNFINISHED, EpisodeStatus, Experiment, ExperimentSlot
from parley.storage.records import storable

ROUNDS = 3
"""Passes of one start: a pass can get back, through a slot's key, an episode written by an
earlier start that stopped before recording it and that has failed since; the next pass
replaces those (and only those)."""
EXPERIMENTS = newest_first("experiments")


class ExperimentFields(BaseModel, extra="forbid"):
    name: Name
    tag: ShortText = ""
    design: dict[str, Any]


@dataclass(frozen=True)
class Progress:
    total: int
    pending: int
    """Slots with no episode yet."""
    counts: dict[EpisodeStatus, int] = field(default_factory=dict)
    episodes_per_minute: float = 0.0
    """Episodes completed a minute since the latest start; failed and cancelled ones, which
    often end at once, say nothing of how fast the rest will go."""
    seconds_left: float | None = None
    """At that rate; None while no episode has completed, 0 once every slot has ended."""
    unjudged: int = 0
    """COMPLETED episodes without scores: their judge failed (each says why, `judge_error`)."""
    not_reached: int = 0
    """Arm slots whose control ended before the arm's turn: never filled, and ended so."""
    arms_waiting: int = 0
    """Arm slots with no episode whose control failed or was cancelled: a new start retries
    the control, and its arms are forked once it completes."""
    held: int = 0
    """Slots never queued because the experiment stopped (`stopped`); they count as ended."""
    stopped: str | None = None
    """Why a paced experiment stopped queuing (lifecycle/pacing.py's `Stop`), or None."""

    @property
    def unfinished(self) -> int:
        return self.pending + sum(self.counts.get(s, 0) for s in UNFINISHED)

    @property
    def finished(self) -> bool:
        """Every slot has an episode and every one of them has ended."""
        return self.unfinished == 0

    @property
    def all_completed(self) -> bool:
        """Every slot's episode completed (an arm slot not reached has none, and needs none)."""
        return self.counts.get(EpisodeStatus.COMPLETED, 0) == self.total - self.not_reached


async def create_experiment(
    services: Services, fields: dict[str, Any]
) -> tuple[Experiment | None, list[UserError]]:
    """A new experiment, or the stored one with the same name, tag and design."""
    valid, errors = validated(ExperimentFields, fields)
    if valid is None:
        return None, errors
    design, slots, errors = await plan(services.client, valid.design, services.models)
    if design is None:
        return None, errors
    errors = budget_errors(design, slots, services.models.prices)
    if errors:
        return None, errors
    record = Experiment(
        pk=str(ULID()),
        name=valid.name,
        tag=valid.tag,
        design=design.model_dump(mode="json"),
        slot_count=len(slots),
        created_at=time.time(),
    )
    store = ExperimentStore(services.client)
    created, pk = await store.create(record, slots)
    if created:
        return record, []
    existing = await store.get(pk)
    if existing is not None and Design.model_validate(existing.design) == design:
        return existing, []  # (compared as designs: one stored before panels has fewer keys)
    message = f"an experiment named {valid.name!r} with tag {valid.tag!r} has another design"
    return None, [UserError(["input", "name"], message, ErrorCode.CONFLICT)]


async def get_experiment(services: Services, pk: str) -> Experiment | None:
    if not storable(pk):
        return None
    return await ExperimentStore(services.client).get(pk)


async def list_experiments(
    *, name: str | None, tag: str | None, **page: Unpack[PageArgs]
) -> Page[Experiment]:
    """Newest first unless asked otherwise."""
    query = Experiment.find(*tag_terms(Experiment, name=name, tag=tag))
    return await fetch_page(query, EXPERIMENTS, **page)


JUDGING = {"judge_model", "judges", "judge_aggregate"}


def judging(experiment: Experiment) -> dict[str, Any]:
    """Who judges the experiment's episodes, as a start request names them (a design stored
    before panels names its judge model alone)."""
    return Design.model_validate(experiment.design).model_dump(mode="json", include=JUDGING)


def slot_request(
    experiment: Experiment,
    slot: ExperimentSlot,
    number: int,
    previous: str,
    judges: dict[str, Any],
    replaying: dict[int, str] | None = None,
) -> dict[str, Any]:
    """The start request of a slot; `judges` is the experiment's `judging`, `replaying` the
    source's episode of each slot when the experiment is a replay."""
    design = experiment.design
    request: dict[str, Any] = {
        "scenario_id": slot.scenario_id,
        "agent_ids": slot.agent_ids,
        "agent_models": slot.agent_models,
        **judges,
        "max_turns": design["max_turns"],
        "turn_order": design["turn_order"],
        "tag": experiment.tag,
        "experiment_id": str(experiment.pk),
        "experiment_slot": number,
        "idempotency_key": keys.experiment_slot_claim(str(experiment.pk), number, previous),
    }
    if design.get("arms"):
        request["arm"] = CONTROL
    if design.get("evaluation_dimension_list_id"):
        request["evaluation_dimension_list_id"] = design["evaluation_dimension_list_id"]
    if replaying is not None:
        request["replay_of"] = replaying[number]
    elif design.get("cache"):
        request["cache"] = True
    return request


async def to_fill(
    store: ExperimentStore, experiment: Experiment, retry: bool = True
) -> list[tuple[int, str]]:
    """(slot, the episode now in it or "") of each control slot with no episode, or a failed or
    cancelled one: any (`retry`, a start), else one that ended before the latest start (which
    asked to retry it: a paced experiment's top-up carries that on), not one that failed since
    (arm slots are forked: `fill_arms`)."""
    filled = await store.slots(str(experiment.pk))
    numbers = sorted(filled)
    states = await store.statuses([filled[n] for n in numbers])
    state_of = dict(zip(numbers, states, strict=True))
    started = experiment.started_at or 0.0
    todo: list[tuple[int, str]] = []
    for number in range(Layout.of(experiment.design, experiment.slot_count).controls):
        state = state_of.get(number)
        again = state is not None and state[0] in RETRIED and (retry or state[1] < started)
        if number not in filled or state is None or again:
            todo.append((number, filled.get(number, "")))
    return todo


def stop_of(experiment: Experiment) -> str | None:
    """Why a paced experiment queues no more now: its stop, or CANCELLED when it was cancelled
    since its latest start (a start resumes it); None for one running, or unpaced."""
    if experiment.stopped is not None:
        return experiment.stopped
    cancelled, started = experiment.cancelled_at, experiment.started_at or 0.0
    if is_paced(experiment) and cancelled is not None and cancelled >= started:
        return CANCELLED
    return None


def is_paced(experiment: Experiment) -> bool:
    """Whether its design has a budget or a precision (lifecycle/pacing.py)."""
    design = experiment.design
    return design.get("budget") is not None or design.get("precision") is not None


async def start_experiment(
    services: Services, pk: str
) -> tuple[Experiment | None, int, list[UserError]]:
    """Queue an episode for every control slot with none, or with a failed or cancelled one,
    and fork every arm slot that is due (`fill_arms`); how many slots this call filled. A
    paced experiment queues only what its budget and precision let through now, and the
    workers queue the rest as its episodes end (`top_up`)."""
    return await fill_slots(services, pk, retry=True, mark=True)


def running_paced(experiment: Experiment) -> bool:
    """A paced experiment started, and neither stopped nor cancelled since: what `top_up`
    fills."""
    started = experiment.started_at
    if not is_paced(experiment) or started is None or experiment.stopped is not None:
        return False
    return experiment.cancelled_at is None or experiment.cancelled_at < started


async def top_up(services: Services, pk: str) -> int:
    """Queue what a running paced experiment lets through now (run by the worker that ended one
    of its episodes, and by every worker now and then for those it may have missed: a worker
    that died, an episode cancelled by hand); how many it queued."""
    experiment = await get_experiment(services, pk)
    store = ExperimentStore(services.client)
    if experiment is None or not running_paced(experiment):
        await store.unwatch_paced(pk)
        return 0
    # Many episodes may end at once: each asks, and whoever holds the lock answers every ask
    # made meanwhile (it fills again while the count moved), so none waits behind the others.
    queued = 0
    while True:
        asked = await store.ask_to_pace(pk)
        lock = store.pacing_lock(pk, LOCK_SECONDS)
        if not await lock.acquire(blocking=False):
            return queued  # the holder sees the count moved, and fills again
        try:
            while True:
                found = await get_experiment(services, pk) or experiment
                if not running_paced(found):
                    await store.unwatch_paced(pk)
                    return queued
                _, filled, _ = await _fill(services, found, retry=False, mark=False)
                queued += filled
                if not await to_fill(store, found, retry=False):
                    await store.unwatch_paced(pk)  # every slot has its episode: none to queue
                now = await store.pacing_asks(pk)
                if now == asked:
                    break
                asked = now
        finally:
            await lock.release()
        if await store.pacing_asks(pk) == asked:
            return queued  # no ask came between the last fill and the release


async def top_up_all(services: Services) -> int:
    """`top_up` every running paced experiment; how many episodes that queued."""
    store = ExperimentStore(services.client)
    return sum([await top_up(services, pk) for pk in await store.watched_paced()])


async def calibrate_experiment(
    services: Services, pk: str
) -> tuple[Experiment | None, int, list[UserError]]:
    """Queue the calibration run an estimate needs: two control slots of each kind with no
    comparable recorded episode (lifecycle/estimate.py), whatever its budget or precision
    (the estimate is what says whether a budget fits). They are slots of the experiment, so a
    later start does not play them again; a calibration starts nothing else."""
    experiment = await get_experiment(services, pk)
    if experiment is None:
        return None, 0, [not_found("experiment", pk)]
    chosen = set(await calibration_of(services, experiment))
    if not chosen:
        return experiment, 0, []
    return await fill_slots(services, pk, retry=True, mark=False, paced=False, only=chosen)


async def fill_slots(
    services: Services,
    pk: str,
    *,
    retry: bool,
    mark: bool,
    paced: bool = True,
    only: set[int] | None = None,
) -> tuple[Experiment | None, int, list[UserError]]:
    """`_fill` a stored experiment: a paced one's under its lock."""
    experiment = await get_experiment(services, pk)
    if experiment is None:
        return None, 0, [not_found("experiment", pk)]
    if not is_paced(experiment):
        return await _fill(services, experiment, retry=retry, mark=mark, only=only)
    lock = ExperimentStore(services.client).pacing_lock(pk, LOCK_SECONDS, wait=LOCK_SECONDS)
    async with lock:
        found = await get_experiment(services, pk) or experiment
        return await _fill(services, found, retry=retry, mark=mark, paced=paced, only=only)


async def _fill(
    services: Services,
    experiment: Experiment,
    *,
    retry: bool,
    mark: bool,
    paced: bool = True,
    only: set[int] | None = None,
) -> tuple[Experiment | None, int, list[UserError]]:
    """Queue an episode for the control slots with none (`retry`: or a failed or cancelled one),
    `only` these, as far as its pacing lets (`paced`); `mark` it started (a start: a paced
    one is then watched for `top_up_all`)."""
    pk = str(experiment.pk)
    store = ExperimentStore(services.client)
    judges = judging(experiment)
    source = experiment.replay_of
    replaying = await store.slots(source) if source is not None else None
    controls = Layout.of(experiment.design, experiment.slot_count).controls
    queued = 0
    plan: list[ExperimentSlot] = []
    again: set[int] | None = None
    """After the first pass: the slots whose key gave back an earlier episode that has failed."""
    for _ in range(ROUNDS):
        todo = [
            t
            for t in await to_fill(store, experiment, retry=retry or again is not None)
            if (again is None or t[0] in again) and (only is None or t[0] in only)
        ]
        if todo and mark and again is None:
            await mark_started(store, experiment)
        if todo and paced:
            admitted = await admit(services, experiment, todo, controls)
            if admitted.stop is not None:
                await store.mark_stopped(pk, admitted.stop)
            todo = admitted.slots
        if not todo:
            break
        plan = plan or await store.plan(pk)
        again = set()
        for offset in range(0, len(todo), simulations.MAX_BATCH):
            chunk = todo[offset : offset + simulations.MAX_BATCH]
            batch = [
                slot_request(experiment, plan[n], n, previous, judges, replaying)
                for n, previous in chunk
            ]
            started = await simulations.start_many(services, batch)
            episodes, errors = started.episodes, started.errors
            if errors:
                return experiment, queued, [slot_error(e, chunk) for e in errors]
            moves = [
                (n, previous, str(e.pk)) for (n, previous), e in zip(chunk, episodes, strict=True)
            ]
            failpoints.reached("experiment:before-fill")
            applied = await store.fill(pk, moves)
            for (n, _), episode, done in zip(chunk, episodes, applied, strict=True):
                if episode.status in RETRIED:
                    again.add(n)  # replaced by the next pass
                elif done:
                    queued += 1
    if only is not None:
        return await store.get(pk), queued, []
    forked, errors = await fill_arms(services, experiment, range(controls))
    return await store.get(pk), queued + forked, errors


async def mark_started(store: ExperimentStore, experiment: Experiment) -> None:
    """A start with slots to fill: its time (progress's rate counts from it), and a paced
    experiment is watched for `top_up_all` from now on."""
    experiment.started_at = time.time()
    await store.mark_started(str(experiment.pk), experiment.started_at)
    if is_paced(experiment) and experiment.stopped is None:
        await store.watch_paced(str(experiment.pk))


def slot_error(error: UserError, chunk: list[tuple[int, str]]) -> UserError:
    """A start error of the batch, named by its slot (a record deleted since the design)."""
    _, position, *rest = error.field
    slot = chunk[int(position)][0]
    message = f"slot {slot}: {error.message}"
    return UserError(["input", "id", "slots", str(slot), *rest], message, error.code)


async def cancel_experiment(
    services: Services, pk: str, parallel: int = 32
) -> tuple[Experiment | None, int, list[UserError]]:
    """Cancel every queued or running episode of the experiment; how many were cancelled. A
    paced one is marked cancelled first, under its lock, so no worker queues more of it until
    it is started again."""
    experiment = await get_experiment(services, pk)
    if experiment is None:
        return None, 0, [not_found("experiment", pk)]
    store = ExperimentStore(services.client)
    if not is_paced(experiment):
        return experiment, await cancel_live(services, store, pk, parallel), []
    async with store.pacing_lock(pk, LOCK_SECONDS, wait=LOCK_SECONDS):
        await store.mark_cancelled(pk, time.time())
        done = await cancel_live(services, store, pk, parallel)
    return await store.get(pk), done, []


async def cancel_live(services: Services, store: ExperimentStore, pk: str, parallel: int) -> int:
    filled = await store.slots(pk)
    episodes = list(filled.values())
    states = await store.statuses(episodes)
    live = [e for e, s in zip(episodes, states, strict=True) if s and s[0] in UNFINISHED]
    gate = asyncio.Semaphore(parallel)

    async def cancel(episode_id: str) -> bool:
        async with gate:
            # the transition cancelSimulation makes, without reading the episode back
            result = await services.store.transition(
                episode_id, EpisodeStatus.CANCELLED, reason="cancelled"
            )
            return result.ok  # an episode that ended meanwhile is left as it ended

    return sum(await asyncio.gather(*(cancel(e) for e in live)))


@dataclass
class Tally:
    """The state of each episode filling a slot: what progress is computed from, and what a
    stream keeps current from status events instead of reading it all again."""

    total: int
    since: float | None
    states: dict[str, tuple[EpisodeStatus, float]]
    """Episode id to (status, when it ended or 0)."""
    unjudged: set[str] = field(default_factory=set)
    """The COMPLETED episodes among them that have no scores (their judge failed)."""
    controls: set[str] = field(default_factory=set)
    """In an experiment with arms, the episodes filling control slots: when one ends, what its
    arms wait for may change, so the state is read again."""
    not_reached: int = 0
    arms_waiting: int = 0
    stopped: str | None = None
    paced: bool = False
    """Its design has a budget or a precision: an ended episode may queue others, or stop it."""

    def saw(
        self, episode_id: str, status: EpisodeStatus, at: float, unjudged: bool = False
    ) -> None:
        self.states[episode_id] = (status, at if status.terminal else 0.0)
        if unjudged:
            self.unjudged.add(episode_id)
        else:
            self.unjudged.discard(episode_id)

    def progress(self, now: float) -> Progress:
        counts = Counter(status for status, _ in self.states.values())
        pending = self.total - len(self.states) - self.not_reached - self.arms_waiting
        held = pending if self.stopped is not None else 0
        pending -= held
        unjudged = len(self.unjudged)
        ends = {"not_reached": self.not_reached, "arms_waiting": self.arms_waiting, "held": held}
        stopped = self.stopped
        if self.since is None:
            return Progress(
                self.total, pending, dict(counts), unjudged=unjudged, stopped=stopped, **ends
            )
        since = self.since
        done = [
            at for s, at in self.states.values() if s == EpisodeStatus.COMPLETED and at >= since
        ]
        unfinished = pending + sum(counts.get(s, 0) for s in UNFINISHED)
        span = (now if unfinished else max(done, default=since)) - since
        rate = len(done) / span if span > 0 and done else 0.0
        left = unfinished / rate if rate > 0 else (0.0 if not unfinished else None)
        return Progress(
            self.total, pending, dict(counts), rate * 60, left, unjudged, stopped=stopped, **ends
        )


async def progress(services: Services, experiment: Experiment) -> Progress:
    return (await tally(services, experiment)).progress(time.time())


async def tally(services: Services, experiment: Experiment) -> Tally:
    """The stored state of the episodes now filling the experiment's slots."""
    store = ExperimentStore(services.client)
    slots = await store.slots(str(experiment.pk))
    filled = list(slots.values())
    read = dict(zip(filled, await store.statuses(filled), strict=True))
    found = [(pk, s) for pk, s in read.items() if s]
    states = {pk: (state.status, state.ended) for pk, state in found}
    unjudged = {pk for pk, state in found if state.unjudged}
    made = Tally(experiment.slot_count, experiment.started_at, states, unjudged)
    made.stopped, made.paced = stop_of(experiment), is_paced(experiment)
    layout = Layout.of(experiment.design, experiment.slot_count)
    if not layout.arms:
        return made
    for control in range(layout.controls):
        parent = read.get(slots.get(control, ""))
        if parent is None:
            continue
        made.controls.add(slots[control])
        for number, arm in layout.arm_slots(control):
            if number in slots and read.get(slots[number]) is not None:
                continue
            if parent.status in RETRIED:
                made.arms_waiting += 1
            elif parent.status == EpisodeStatus.COMPLETED and not reached(parent.played, arm):
                made.not_reached += 1
    return made
