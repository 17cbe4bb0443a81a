"""Experiment records and which episode fills each of their slots, written atomically."""

import json
from collections.abc import Sequence
from typing import Any, NamedTuple

import redis.asyncio as redis
from pydantic import TypeAdapter
from redis.asyncio.lock import Lock

from parley.storage import keys
from parley.storage.models import EpisodeLog, EpisodeStatus, Experiment, ExperimentSlot
from parley.storage.scripts import NoArgs, Script

PLAN = TypeAdapter(list[ExperimentSlot])


class EpisodeState(NamedTuple):
    status: EpisodeStatus
    ended: float
    """finished_at, or 0 while it has not ended."""
    unjudged: bool = False
    """COMPLETED without scores: its judge failed (`judge_error`)."""
    played: int = 0
    """Turns it has played (`progress`)."""


class NamesKeys(NamedTuple):
    names: str
    experiment: str
    plan: str


class CreateArgs(NamedTuple):
    name: str
    id: str
    document: str
    prefix: str
    plan: str


class SlotsKeys(NamedTuple):
    slots: str
    scores: str


class PlanKeys(NamedTuple):
    experiment: str
    plan: str
    slots: str
    scores: str


class ImportSlotsArgs(NamedTuple):
    slot_count: int
    first: int
    nulls: str


class ImportKeys(NamedTuple):
    experiment: str
    plan: str
    names: str
    slots: str


class ImportArgs(NamedTuple):
    document: str
    slot_count: int
    name: str
    id: str
    prefix: str


CREATE = Script("create_experiment", NamesKeys, CreateArgs)
FILL = Script("fill_slots", SlotsKeys, NoArgs)
IMPORT_SLOTS = Script("import_slots", PlanKeys, ImportSlotsArgs, ("json",))
IMPORT_RECORD = Script("import_experiment", ImportKeys, ImportArgs)


def name_field(name: str, tag: str) -> str:
    return json.dumps([name, tag])


class ExperimentStore:
    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    async def create(
        self, experiment: Experiment, slots: Sequence[ExperimentSlot]
    ) -> tuple[bool, str]:
        """(created, id): the id of the stored experiment with this name and tag."""
        pk = str(experiment.pk)
        plan = PLAN.dump_json(list(slots)).decode()
        done, found = await CREATE(
            self.client,
            NamesKeys(
                keys.EXPERIMENT_NAMES, Experiment.make_primary_key(pk), keys.experiment_plan(pk)
            ),
            CreateArgs(
                name=name_field(experiment.name, experiment.tag),
                id=pk,
                document=experiment.model_dump_json(),
                prefix=Experiment.make_primary_key(""),
                plan=plan,
            ),
        )
        return bool(done), str(found)

    async def plan(self, pk: str, start: int = 0, stop: int | None = None) -> list[ExperimentSlot]:
        """The slots from `start` up to `stop` (all when None), in design order."""
        path = f"$[{start}:{stop}]" if stop is not None else f"$[{start}:]"
        raw: Any = await self.client.json().get(keys.experiment_plan(pk), path)
        return PLAN.validate_python(raw or [])

    async def get(self, pk: str) -> Experiment | None:
        raw: Any = await self.client.json().get(Experiment.make_primary_key(pk), "$")
        return Experiment.model_validate(raw[0]) if raw else None

    async def find(self, name: str, tag: str) -> Experiment | None:
        pk = await self.client.hget(keys.EXPERIMENT_NAMES, name_field(name, tag))
        return await self.get(str(pk)) if pk else None

    async def mark_started(self, pk: str, at: float) -> None:
        await self.client.json().set(Experiment.make_primary_key(pk), "$.started_at", at)

    def pacing_lock(self, pk: str, seconds: float, wait: float | None = None) -> Lock:
        """The lock held while a paced experiment decides what to queue (`wait`: seconds to
        wait for it when acquired blocking)."""
        return self.client.lock(keys.experiment_pacing(pk), timeout=seconds, blocking_timeout=wait)

    async def ask_to_pace(self, pk: str) -> int:
        """Count one more ask to queue what the experiment lets through; the count now."""
        return int(await self.client.incr(keys.experiment_pacing_wanted(pk)))

    async def pacing_asks(self, pk: str) -> int:
        return int(await self.client.get(keys.experiment_pacing_wanted(pk)) or 0)

    async def mark_cancelled(self, pk: str, at: float) -> None:
        await self.client.json().set(Experiment.make_primary_key(pk), "$.cancelled_at", at)

    async def watch_paced(self, pk: str) -> None:
        """Count the paced experiment among those running (`lifecycle.experiments.top_up_all`)."""
        await self.client.sadd(keys.PACED_EXPERIMENTS, pk)

    async def unwatch_paced(self, pk: str) -> None:
        await self.client.srem(keys.PACED_EXPERIMENTS, pk)

    async def watched_paced(self) -> list[str]:
        return sorted(str(pk) for pk in await self.client.smembers(keys.PACED_EXPERIMENTS))

    async def mark_stopped(self, pk: str, stop: str) -> None:
        await self.client.json().set(Experiment.make_primary_key(pk), "$.stopped", stop)

    async def slots(self, pk: str) -> dict[int, str]:
        """Slot number to the id of the episode filling it (slots with none are absent)."""
        found = await self.client.hgetall(keys.experiment_slots(pk))
        return {int(slot): str(episode) for slot, episode in found.items()}

    async def fill(self, pk: str, moves: Sequence[tuple[int, str, str]]) -> list[bool]:
        """Apply (slot, expected episode or "", new episode) moves; whether each applied."""
        if not moves:
            return []
        args = [str(part) for move in moves for part in move]
        applied = await FILL(
            self.client,
            SlotsKeys(keys.experiment_slots(pk), keys.SCORES_VERSION),
            NoArgs(),
            more_args=args,
        )
        return [bool(int(a)) for a in applied]

    async def statuses(self, episode_ids: Sequence[str]) -> list[EpisodeState | None]:
        """The state of each episode, None for one that is gone; three commands."""
        if not episode_ids:
            return []
        names = [EpisodeLog.make_primary_key(pk) for pk in episode_ids]
        async with self.client.pipeline(transaction=False) as pipe:
            # through the JSON commands, which parse each reply whatever else the client ran
            pipe.json().mget(names, "$.status")
            pipe.json().mget(names, "$.finished_at")
            pipe.json().mget(names, "$.judge_error")
            pipe.json().mget(names, "$.progress")
            statuses, finished, unjudged, played = await pipe.execute()
        found: list[EpisodeState | None] = []
        for status, at, why, turns in zip(statuses, finished, unjudged, played, strict=True):
            # each reply is the list of the path's matches
            if not status:
                found.append(None)
                continue
            ended = at[0] if at else None
            found.append(
                EpisodeState(
                    EpisodeStatus(status[0]),
                    float(ended or 0.0),
                    bool(why and why[0]),
                    int(turns[0] or 0) if turns else 0,
                )
            )
        return found

    async def slots_of(self, pk: str, numbers: Sequence[int]) -> dict[int, str]:
        """`slots` of these slot numbers alone."""
        if not numbers:
            return {}
        found = await self.client.hmget(keys.experiment_slots(pk), [str(n) for n in numbers])
        return {n: str(e) for n, e in zip(numbers, found, strict=True) if e}

    async def rewards(self, episode_ids: Sequence[str]) -> list[list[Any] | None]:
        """The stored rewards of each episode (None for one that is gone), in one command."""
        if not episode_ids:
            return []
        names = [EpisodeLog.make_primary_key(pk) for pk in episode_ids]
        found: list[Any] = await self.client.json().mget(names, "$.rewards")
        return [list(r[0]) if r else None for r in found]

    async def import_slots(
        self, pk: str, count: int, first: int, slots: Sequence[tuple[ExperimentSlot, str]]
    ) -> bool:
        """Place imported (slot, filling episode or "") pairs from slot `first` of an
        experiment of `count` slots; False, and nothing written, when it is stored already."""
        more: list[str] = []
        for slot, episode in slots:
            more += [slot.model_dump_json(), episode]
        done = await IMPORT_SLOTS(
            self.client,
            PlanKeys(
                Experiment.make_primary_key(pk),
                keys.experiment_plan(pk),
                keys.experiment_slots(pk),
                keys.SCORES_VERSION,
            ),
            ImportSlotsArgs(count, first, json.dumps([None] * count)),
            more_args=more,
        )
        return bool(done)

    async def import_record(self, experiment: Experiment) -> str:
        """Store an imported experiment whose slots are in place: 'created', 'skipped' (stored
        already), 'named' (its name and tag are another's) or 'incomplete' (a slot is missing)."""
        pk = str(experiment.pk)
        outcome = await IMPORT_RECORD(
            self.client,
            ImportKeys(
                Experiment.make_primary_key(pk),
                keys.experiment_plan(pk),
                keys.EXPERIMENT_NAMES,
                keys.experiment_slots(pk),
            ),
            ImportArgs(
                document=experiment.model_dump_json(),
                slot_count=experiment.slot_count,
                name=name_field(experiment.name, experiment.tag),
                id=pk,
                prefix=Experiment.make_primary_key(""),
            ),
        )
        return str(outcome)
