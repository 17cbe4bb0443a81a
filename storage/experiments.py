"""Experiment records and which episode fills each of their slots, written atomically."""

import json
from collections.abc import Sequence
from typing import Any, NamedTuple

import redis.asyncio as redis
from pydantic import TypeAdapter

from parley.storage import keys
from parley.storage.models import EpisodeLog, EpisodeStatus, Experiment, ExperimentSlot

PLAN = TypeAdapter(list[ExperimentSlot])


class EpisodeState(NamedTuple):
    status: EpisodeStatus
    ended: float
    """finished_at, or 0 while it has not ended."""
    unjudged: bool = False
    """COMPLETED without scores: its judge failed (`judge_error`)."""


_CREATE = """
local earlier = redis.call('HGET', KEYS[1], ARGV[1])
if earlier and redis.call('EXISTS', ARGV[4] .. earlier) == 1 then return {0, earlier} end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('JSON.SET', KEYS[2], '$', ARGV[3])
redis.call('JSON.SET', KEYS[3], '$', ARGV[5])
return {1, ARGV[2]}
"""
"""Store a new experiment and its slots unless its name and tag name one already (that one's id
is returned)."""

_FILL = """
local filled = {}
for i = 1, #ARGV, 3 do
  local current = redis.call('HGET', KEYS[1], ARGV[i]) or ''
  if current == ARGV[i + 1] then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 2])
    filled[#filled + 1] = 1
  else
    filled[#filled + 1] = 0
  end
end
return filled
"""
"""Point each slot at its new episode, only where it still holds the episode it was read with
(a start that read an older state changes nothing)."""


_IMPORT_SLOTS = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local count = tonumber(ARGV[1])
local length = -1
if redis.call('EXISTS', KEYS[2]) == 1 then length = redis.call('JSON.ARRLEN', KEYS[2], '$')[1] end
if length ~= count then redis.call('JSON.SET', KEYS[2], '$', ARGV[3]) end
local first = tonumber(ARGV[2])
for i = 4, #ARGV, 2 do
  local at = first + (i - 4) / 2
  redis.call('JSON.SET', KEYS[2], '$[' .. at .. ']', ARGV[i])
  if ARGV[i + 1] ~= '' then redis.call('HSET', KEYS[3], at, ARGV[i + 1]) end
end
return 1
"""
"""Put imported slots (and the episodes filling them) in place, unless the experiment is stored
already; the plan is made `count` slots long, all null, first. ARGV: count, first slot, the
nulls, then (slot JSON, episode id or "") per slot."""

_IMPORT_RECORD = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 'skipped' end
local holder = redis.call('HGET', KEYS[3], ARGV[3])
if holder and holder ~= ARGV[4] and redis.call('EXISTS', ARGV[5] .. holder) == 1 then
  redis.call('DEL', KEYS[2], KEYS[4])
  return 'named'
end
local count = tonumber(ARGV[2])
if count > 0 then
  if redis.call('EXISTS', KEYS[2]) == 0 then return 'incomplete' end
  if redis.call('JSON.ARRLEN', KEYS[2], '$')[1] ~= count then return 'incomplete' end
  if redis.call('JSON.ARRINDEX', KEYS[2], '$', 'null')[1] ~= -1 then return 'incomplete' end
end
redis.call('HSET', KEYS[3], ARGV[3], ARGV[4])
redis.call('JSON.SET', KEYS[1], '$', ARGV[1])
return 'created'
"""
"""Store an imported experiment once all its slots are in place: 'created'; 'skipped' when it
is stored already; 'named' when another experiment has its name and tag (its slots are dropped);
'incomplete' when some slot is missing."""


def name_field(name: str, tag: str) -> str:
    return json.dumps([name, tag])


class ExperimentStore:
    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self._create = client.register_script(_CREATE)
        self._fill = client.register_script(_FILL)
        self._import_slots = client.register_script(_IMPORT_SLOTS)
        self._import_record = client.register_script(_IMPORT_RECORD)

    async def create(
        self, experiment: Experiment, slots: Sequence[ExperimentSlot]
    ) -> tuple[bool, str]:
        """(created, id): the id of the stored experiment with this name and tag."""
        pk = str(experiment.pk)
        plan = PLAN.dump_json(list(slots)).decode()
        done, found = await self._create(
            keys=[keys.EXPERIMENT_NAMES, Experiment.make_primary_key(pk), keys.experiment_plan(pk)],
            args=[
                name_field(experiment.name, experiment.tag),
                pk,
                experiment.model_dump_json(),
                Experiment.make_primary_key(""),
                plan,
            ],
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

    async def slots(self, pk: str) -> dict[int, str]:
        """Slot number to the id of the episode filling it (slots with none are absent)."""
        found = await self.client.hgetall(keys.experiment_slots(pk))
        return {int(slot): str(episode) for slot, episode in found.items()}

    async def fill(self, pk: str, moves: Sequence[tuple[int, str, str]]) -> list[bool]:
        """Apply (slot, expected episode or "", new episode) moves; whether each applied."""
        if not moves:
            return []
        args = [str(part) for move in moves for part in move]
        applied = await self._fill(keys=[keys.experiment_slots(pk)], args=args)
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
            statuses, finished, unjudged = await pipe.execute()
        found: list[EpisodeState | None] = []
        for status, at, why in zip(statuses, finished, unjudged, strict=True):
            # each reply is the list of the path's matches
            if not status:
                found.append(None)
                continue
            ended = at[0] if at else None
            found.append(
                EpisodeState(EpisodeStatus(status[0]), float(ended or 0.0), bool(why and why[0]))
            )
        return found

    async def import_slots(
        self, pk: str, count: int, first: int, slots: Sequence[tuple[ExperimentSlot, str]]
    ) -> bool:
        """Place imported (slot, filling episode or "") pairs from slot `first` of an
        experiment of `count` slots; False, and nothing written, when it is stored already."""
        args: list[str | int] = [count, first, json.dumps([None] * count)]
        for slot, episode in slots:
            args += [slot.model_dump_json(), episode]
        done = await self._import_slots(
            keys=[
                Experiment.make_primary_key(pk),
                keys.experiment_plan(pk),
                keys.experiment_slots(pk),
            ],
            args=args,
        )
        return bool(done)

    async def import_record(self, experiment: Experiment) -> str:
        """Store an imported experiment whose slots are in place: 'created', 'skipped' (stored
        already), 'named' (its name and tag are another's) or 'incomplete' (a slot is missing)."""
        pk = str(experiment.pk)
        outcome = await self._import_record(
            keys=[
                Experiment.make_primary_key(pk),
                keys.experiment_plan(pk),
                keys.EXPERIMENT_NAMES,
                keys.experiment_slots(pk),
            ],
            args=[
                experiment.model_dump_json(),
                experiment.slot_count,
                name_field(experiment.name, experiment.tag),
                pk,
                Experiment.make_primary_key(""),
            ],
        )
        return str(outcome)
