"""Episode state changes and the events that announce them, atomically and fenced.

Each change runs as one Lua script: it checks the current status (only legal transitions happen)
and, for a worker, its attempt number (a fencing token, so a worker whose lease lapsed cannot
overwrite the new owner's work), bumps the episode's sequence number, writes, and publishes the
event, all at once. Readers therefore never see a change without its event or the reverse.

`EpisodeEvent` is the one declaration of an event: the scripts emit exactly its JSON shape (a test
checks every payload they can emit), and `stored_events` rebuilds the same events from storage.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

import redis.asyncio as redis
from pydantic import BaseModel, ConfigDict

from parley.storage import keys
from parley.storage.models import (
    EpisodeLog,
    EpisodeStatus,
    StatusChange,
    StoredInjection,
    StoredTurn,
    Waiting,
)

IDEMPOTENCY_TTL = 24 * 3600
"""Seconds an idempotency key keeps naming its episode."""

Status = EpisodeStatus
NOT_JUDGED = "not judged: "
"""How the reason of a COMPLETED change begins when the episode has no scores (the only
COMPLETED change with a reason): what follows is why its judge gave none."""


class EventKind(StrEnum):
    """SNAPSHOT is the stored state when a stream starts; then STATUS changes and TURNs.
    CURSOR_EXPIRED says a resuming stream's cursor is older than what is kept: snapshots of the
    current state follow it instead of the missed events."""

    SNAPSHOT = "snapshot"
    STATUS = "status"
    TURN = "turn"
    INJECTION = "injection"
    CURSOR_EXPIRED = "cursor_expired"


class EpisodeEvent(BaseModel):
    """Something that happened to an episode, numbered by the episode's sequence."""

    model_config = ConfigDict(extra="forbid")

    type: EventKind
    episode_id: str
    sequence: int
    at: float
    attempt: int = 0
    tag: str | None = None
    experiment_id: str | None = None
    """The experiment of the episode, so an experiment's stream knows its new episodes."""
    status: EpisodeStatus | None = None
    previous_status: EpisodeStatus | None = None
    reason: str | None = None
    turn: StoredTurn | None = None
    resumed_from: int | None = None
    """On the RUNNING of a resumed attempt: the number of turns kept from before."""
    waiting: Waiting | None = None
    """On a WAITING: whose turn it is and until when."""
    injection: StoredInjection | None = None
    """On an INJECTION: the environment message added."""
    log_id: str | None = None
    """The status event's id in the events log (the cursor of episodeUpdates streams)."""

    @property
    def terminal(self) -> bool:
        return self.type == EventKind.STATUS and self.status is not None and self.status.terminal


class Fenced(Exception):
    """The episode is no longer this worker's to write (cancelled, deleted, or taken over)."""


class MalformedEvent(ValueError):
    """A pub/sub payload on Parley's channels that is not an EpisodeEvent."""


def parse_event(data: str | bytes) -> EpisodeEvent:
    try:
        return EpisodeEvent.model_validate_json(data)
    except ValueError as err:
        raise MalformedEvent(f"{err}; payload {data[:300]!r}") from None


def status_event(
    episode: EpisodeLog, change: StatusChange, previous: Status | None
) -> EpisodeEvent:
    return EpisodeEvent(
        type=EventKind.STATUS,
        episode_id=str(episode.pk),
        sequence=change.sequence,
        at=change.at,
        attempt=change.attempt,
        tag=episode.tag,
        experiment_id=episode.experiment_id,
        status=change.status,
        previous_status=previous,
        reason=change.reason,
        resumed_from=change.resumed_from,
        waiting=change.waiting,
    )


def snapshot_event(episode: EpisodeLog) -> EpisodeEvent:
    """The episode as stored now, as the first event of a stream."""
    history = episode.status_history
    return EpisodeEvent(
        type=EventKind.SNAPSHOT,
        episode_id=str(episode.pk),
        sequence=episode.sequence,
        at=history[-1].at if history else episode.created_at,
        attempt=episode.attempt,
        tag=episode.tag,
        experiment_id=episode.experiment_id,
        status=episode.status,
        waiting=episode.waiting,
    )


def stored_events(episode: EpisodeLog, after: int = 0) -> list[EpisodeEvent]:
    """The episode's events with a sequence above `after`, rebuilt from what is stored."""
    events: list[EpisodeEvent] = []
    previous: Status | None = None
    for change in episode.status_history:
        if change.sequence > after:
            events.append(status_event(episode, change, previous))
        previous = change.status
    for turn in episode.turns:
        if turn.sequence > after:
            events.append(
                EpisodeEvent(
                    type=EventKind.TURN,
                    episode_id=str(episode.pk),
                    sequence=turn.sequence,
                    at=turn.at,
                    attempt=episode.attempt,
                    tag=episode.tag,
                    turn=turn,
                )
            )
    for injection in episode.injections:
        if injection.sequence > after:
            events.append(injection_event(episode, injection))
    return sorted(events, key=lambda e: e.sequence)


def injection_event(episode: EpisodeLog, injection: StoredInjection) -> EpisodeEvent:
    return EpisodeEvent(
        type=EventKind.INJECTION,
        episode_id=str(episode.pk),
        sequence=injection.sequence,
        at=injection.at,
        attempt=episode.attempt,
        tag=episode.tag,
        injection=injection,
    )


_LOG = """
local function log_and_publish(log, minid, event, channels)
  local id = redis.call('XADD', log, 'MINID', minid, '*', 'event', event)
  local payload = string.sub(event, 1, -2) .. ',"log_id":"' .. id .. '"}'
  for _, channel in ipairs(channels) do redis.call('PUBLISH', channel, payload) end
  return id
end
"""
"""Every status event goes to the events log (a Stream trimmed to the retention window) and is
published with its log id, which episodeUpdates streams resume from."""

_CREATE = (
    _LOG
    + """
local jobs, events_log, everyone = KEYS[1], KEYS[2], KEYS[3]
local ttl, prefix, minid = ARGV[1], ARGV[2], ARGV[3]
local required, count, seat_prefix = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
local missing = {}
for i = 1, required do
  if redis.call('EXISTS', KEYS[3 + i]) == 0 then missing[#missing + 1] = i end
end
if #missing > 0 then return {0, missing} end
local ids = {}
for n = 0, count - 1 do
  local k, a = 3 + required + 3 * n, 6 + 4 * n
  local id, document, event, keyed = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4]
  local earlier = keyed == '1' and redis.call('GET', KEYS[k + 1])
  if earlier and redis.call('EXISTS', prefix .. earlier) == 1 then
    ids[#ids + 1] = earlier
  else
    if keyed == '1' then
      redis.call('SET', KEYS[k + 1], id, 'EX', ttl)  -- new, or left by an episode that is gone
    end
    redis.call('JSON.SET', KEYS[k + 2], '$', document)
    for _, seat in ipairs(cjson.decode(document).human_seats or {}) do
      if seat.token_hash ~= '' then  -- a seat credential finds its seat by this key
        redis.call('SET', seat_prefix .. seat.token_hash, cjson.encode({id, seat.seat}))
      end
    end
    log_and_publish(events_log, minid, event, {KEYS[k + 3], everyone})
    redis.call('XADD', jobs, '*', 'episode', id)
    ids[#ids + 1] = id
  end
end
return {1, ids}
"""
)
"""Store QUEUED episodes, announce them and queue their jobs, claiming their idempotency keys
and keying their human seats by token hash (`keys.seat_token`) in the same step, once every
required key exists: a crash leaves either all of it or none of it, and a record deleted
meanwhile cannot be referenced."""

STATUS_CHANGE_LUA = (
    _LOG
    + """
local function change_status(K, doc, new, attempt, now, reason, kept, waiting, enqueue, minid)
  -- K: the episode's key, its channel, everyone's channel, the events log, the deadlines set
  -- and the job stream; doc: the episode's status, pk, tag and experiment_id before the change.
  local key, pk = K[1], doc.pk
  local seq = cjson.decode(redis.call('JSON.NUMINCRBY', key, '$.sequence', 1))[1]
  local change = {status = new, at = tonumber(now), sequence = seq, attempt = attempt}
  local event = {type = 'status', episode_id = pk, sequence = seq, at = tonumber(now),
                 attempt = attempt, status = new, previous_status = doc.status}
  if reason ~= '' then change.reason = reason; event.reason = reason end
  if kept then change.resumed_from = kept; event.resumed_from = kept end
  if doc.status == 'WAITING' then
    redis.call('ZREM', K[5], pk)
    redis.call('JSON.SET', key, '$.waiting', 'null')
  end
  if waiting ~= '' then
    local w = cjson.decode(waiting)
    change.waiting = w; event.waiting = w
    redis.call('JSON.SET', key, '$.waiting', waiting)
    redis.call('ZADD', K[5], w.deadline, pk)
  end
  redis.call('JSON.SET', key, '$.status', cjson.encode(new))
  redis.call('JSON.ARRAPPEND', key, '$.status_history', cjson.encode(change))
  if enqueue then
    local id = redis.call('XADD', K[6], '*', 'episode', pk)
    redis.call('JSON.SET', key, '$.job', cjson.encode(id))
  end
  if doc.tag ~= nil and doc.tag ~= cjson.null then event.tag = doc.tag end
  if doc.experiment_id ~= nil and doc.experiment_id ~= cjson.null then
    event.experiment_id = doc.experiment_id
  end
  log_and_publish(K[4], minid, cjson.encode(event), {K[2], K[3]})
  return seq
end

local function episode_doc(key, ...)
  -- The named fields of an episode (first values of their JSONPaths), or nil when it is gone.
  local paths = {'$.status', '$.attempt', '$.tag', '$.pk', '$.experiment_id', ...}
  local raw = redis.call('JSON.GET', key, unpack(paths))
  if not raw then return nil end
  local found, doc = cjson.decode(raw), {}
  for _, path in ipairs(paths) do doc[string.sub(path, 3)] = found[path][1] end
  doc.attempt = doc.attempt or 0
  return doc
end
"""
)
"""The one status change every script makes: a new sequence number, the status and its history
entry, the deadline of a WAITING (set, or dropped when leaving it), a job when it is queued
again, and the event, logged and published."""

_TRANSITION = (
    STATUS_CHANGE_LUA
    + """
local key = KEYS[1]
local new, allowed, fence, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local reason, mode, owner, minid = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local waiting, enqueue = ARGV[9], ARGV[10] == '1'
local doc = episode_doc(key, '$.owner', '$.turns')
if not doc then return {0, ''} end
local status, attempt = doc.status, doc.attempt
if fence ~= '' and owner ~= '' and doc.owner == owner then
  -- the same worker's write again (its reply was lost to a dropped connection): done already
  local begun = mode ~= 'none' and status == new and attempt == tonumber(fence) + 1
  local moved = mode == 'none' and status == new and attempt == tonumber(fence)
  if begun or moved then return {2, status} end
end
if not string.find(' ' .. allowed .. ' ', ' ' .. status .. ' ', 1, true) then
  return {0, status}
end
if fence ~= '' and tonumber(fence) ~= attempt then return {-1, status} end
local kept = nil
if mode ~= 'none' then
  attempt = attempt + 1
  redis.call('JSON.SET', key, '$.attempt', attempt)
  redis.call('JSON.SET', key, '$.owner', cjson.encode(owner))
  if mode == 'restart' then
    redis.call('JSON.SET', key, '$.turns', '[]')
    redis.call('JSON.SET', key, '$.messages', '[]')
    redis.call('JSON.SET', key, '$.rewards', '[]')
    redis.call('JSON.SET', key, '$.progress', 0)
  else
    local turns = doc.turns or {}
    if #turns > 0 then kept = turns[#turns].turn + 1 end
  end
end
for i = 11, #ARGV, 2 do redis.call('JSON.SET', key, ARGV[i], ARGV[i + 1]) end
change_status(KEYS, doc, new, attempt, now, reason, kept, waiting, enqueue, minid)
return {1, new}
"""
)

_MARK = """
local raw = redis.call('JSON.GET', KEYS[1], '$.attempt')
if not raw or cjson.decode(raw)[1] ~= tonumber(ARGV[1]) then return 0 end
for i = 2, #ARGV, 2 do redis.call('JSON.SET', KEYS[1], ARGV[i], ARGV[i + 1]) end
return 1
"""
"""Set fields of an episode whose attempt is still the caller's (no status change, no event)."""

_APPEND_TURN = """
local key = KEYS[1]
local raw = redis.call('JSON.GET', key, '$.status', '$.attempt', '$.pk')
if not raw then return -1 end
local doc = cjson.decode(raw)
if doc['$.status'][1] ~= 'RUNNING' or doc['$.attempt'][1] ~= tonumber(ARGV[1]) then return -1 end
local last = cjson.decode(redis.call('JSON.GET', key, '$.turns[-1]'))[1]
if last and last.turn == tonumber(ARGV[6]) and last.agent_index == tonumber(ARGV[7]) then
  return last.sequence  -- the same write again (a retried command): already stored and sent
end
local seq = cjson.decode(redis.call('JSON.NUMINCRBY', key, '$.sequence', 1))[1]
local turn = '{"sequence":' .. string.format('%d', seq) .. ',' .. string.sub(ARGV[2], 2)
redis.call('JSON.ARRAPPEND', key, '$.turns', turn)
if ARGV[8] ~= '' then
  redis.call('JSON.MERGE', key, '$', ARGV[8])  -- progress is in it: one write, one re-index
else
  redis.call('JSON.SET', key, '$.progress', ARGV[3])
end
local stored = redis.call('JSON.ARRLEN', key, '$.messages')[1]
local index = tonumber(ARGV[6])
if index < stored then
  redis.call('JSON.SET', key, '$.messages[' .. index .. ']', ARGV[4])
else
  redis.call('JSON.ARRAPPEND', key, '$.messages', ARGV[4])
end
redis.call('PUBLISH', KEYS[2], '{"type":"turn","episode_id":' .. cjson.encode(doc['$.pk'][1])
  .. ',"sequence":' .. string.format('%d', seq) .. ',"at":' .. ARGV[5]
  .. ',"attempt":' .. ARGV[1] .. ',"turn":' .. turn .. '}')
return seq
"""


@dataclass(frozen=True)
class Created:
    ids: list[str]
    """The episodes' ids in request order (an earlier episode's where its key named one)."""
    missing: list[int] = field(default_factory=list)
    """Positions in `required` of the keys that did not exist (then nothing was written)."""


@dataclass(frozen=True)
class TransitionResult:
    ok: bool
    fenced: bool
    """The caller's attempt is no longer the episode's: another worker owns it now."""
    status: Status | None
    """The status after the call (the current one when nothing changed); None when gone."""
    repeated: bool = False
    """The same owner's write had already been applied (its first reply was lost)."""


ALLOWED_FROM: dict[Status, tuple[Status, ...]] = {
    Status.QUEUED: (Status.WAITING, Status.PAUSED),
    Status.RUNNING: (Status.QUEUED, Status.RUNNING, Status.EVALUATING),
    Status.WAITING: (Status.RUNNING,),
    Status.PAUSED: (Status.QUEUED, Status.RUNNING, Status.WAITING),
    Status.EVALUATING: (Status.RUNNING,),
    Status.COMPLETED: (Status.EVALUATING,),
    Status.FAILED: (Status.QUEUED, Status.RUNNING, Status.WAITING, Status.EVALUATING),
    Status.CANCELLED: (
        Status.QUEUED,
        Status.RUNNING,
        Status.WAITING,
        Status.PAUSED,
        Status.EVALUATING,
    ),
}
DEFAULT_RETENTION = 3600.0
"""Seconds the events log keeps status events (PARLEY_EVENT_RETENTION_SECONDS)."""
Begin = Literal["none", "restart", "resume"]
"""How a transition begins a new attempt: not at all, from scratch, or keeping the turns."""


def initial_history(at: float) -> list[StatusChange]:
    return [StatusChange(status=Status.QUEUED, at=at, sequence=1)]


class EpisodeStore:
    """Writes to episodes that must be atomic with their events."""

    def __init__(
        self, client: redis.Redis, retention: float = DEFAULT_RETENTION, jobs: str = keys.JOBS
    ) -> None:
        self.client = client
        self.retention = retention
        self.jobs = jobs
        """The job stream an episode queued again gets its job on."""
        self._create = client.register_script(_CREATE)
        self._transition = client.register_script(_TRANSITION)
        self._append_turn = client.register_script(_APPEND_TURN)
        self._mark = client.register_script(_MARK)

    def log_floor(self) -> str:
        """The oldest events-log id to keep (older entries are trimmed as new ones come)."""
        return f"{int((time.time() - self.retention) * 1000)}-0"

    async def create(self, episodes: list[EpisodeLog], jobs: str) -> list[str]:
        """Store QUEUED episodes, announce them and queue their jobs (on stream `jobs`), in one
        transaction. An episode whose idempotency key names a stored episode is not written:
        that episode's id is returned in its place."""
        created = await self.create_if_present(episodes, jobs, [])
        return created.ids

    async def create_if_present(
        self, episodes: list[EpisodeLog], jobs: str, required: Sequence[str]
    ) -> Created:
        """`create`, in one round trip, provided every key in `required` exists; otherwise
        nothing is written and the positions of the missing keys are returned."""
        prefix = EpisodeLog.make_primary_key("")
        script_keys: list[str] = [jobs, keys.EVENTS_LOG, keys.EPISODES_CHANNEL, *required]
        args: list[str | int] = [
            IDEMPOTENCY_TTL,
            prefix,
            self.log_floor(),
            len(required),
            len(episodes),
            keys.seat_token(""),
        ]
        for episode in episodes:
            pk = str(episode.pk)
            key = episode.idempotency_key
            event = status_event(episode, episode.status_history[-1], None)
            script_keys += [
                keys.idempotency(key) if key else keys.idempotency(pk),
                EpisodeLog.make_primary_key(pk),
                keys.episode_channel(pk),
            ]
            args += [
                pk,
                episode.model_dump_json(),
                event.model_dump_json(exclude_none=True),
                "1" if key else "0",
            ]
        done, values = await self._create(keys=script_keys, args=args)
        if not done:
            return Created(ids=[], missing=[int(i) - 1 for i in values])
        return Created(ids=[str(v) for v in values])

    async def transition(
        self,
        episode_id: str,
        status: Status,
        *,
        fence: int | None = None,
        reason: str | None = None,
        begin: Begin = "none",
        owner: str = "",
        allowed_from: Iterable[Status] | None = None,
        fields: dict[str, Any] | None = None,
        waiting: Waiting | None = None,
    ) -> TransitionResult:
        """Move to `status` if legal from the current one (and if `fence` still matches).

        A worker passes its `owner` name: a write of its own that was applied already (the reply
        was lost and it sent it again) is reported as `ok` and `repeated`, not refused. A move to
        QUEUED queues a new job; a WAITING names its `waiting` (and its deadline is kept for the
        sweep, `keys.DEADLINES`).
        """
        now = time.time()
        allowed = " ".join(allowed_from if allowed_from is not None else ALLOWED_FROM[status])
        patch: list[str] = []
        for name, value in (fields or {}).items():
            patch += [f"$.{name}", json.dumps(value)]
        code, current = await self._transition(
            keys=[
                EpisodeLog.make_primary_key(episode_id),
                keys.episode_channel(episode_id),
                keys.EPISODES_CHANNEL,
                keys.EVENTS_LOG,
                keys.DEADLINES,
                self.jobs,
            ],
            args=[
                status,
                allowed,
                "" if fence is None else fence,
                repr(now),
                reason or "",
                begin,
                owner,
                self.log_floor(),
                waiting.model_dump_json() if waiting else "",
                "1" if status == Status.QUEUED else "",
                *patch,
            ],
        )
        found = Status(current) if current else None
        return TransitionResult(code in (1, 2), code == -1, found, repeated=code == 2)

    async def mark(self, episode_id: str, attempt: int, fields: dict[str, Any]) -> bool:
        """Set `fields` if `attempt` is still the episode's; False when it is not (or gone)."""
        patch: list[str] = []
        for name, value in fields.items():
            patch += [f"$.{name}", json.dumps(value)]
        done = await self._mark(
            keys=[EpisodeLog.make_primary_key(episode_id)], args=[attempt, *patch]
        )
        return bool(done)

    async def append_turn(
        self,
        episode_id: str,
        attempt: int,
        turn: dict[str, Any],
        progress: int,
        messages: list[tuple[str, str, str]],
        merge: dict[str, Any] | None = None,
    ) -> int | None:
        """Store and publish one turn, and set Sotopia's messages of its turn.

        `messages` is the turn's whole list of (sender, receiver, text) so far; it replaces the
        stored list at index `turn["turn"]` (or is appended as the next turn). `merge` is merged
        into the record with it (and the progress), in one JSON.MERGE (RFC 7396: a None
        removes its key). Writing
        the same action twice (a retried command) stores it once. Returns the event's sequence,
        or None when the caller no longer owns a running episode.
        """
        now = time.time()
        body = json.dumps({**turn, "at": now})
        sequence = await self._append_turn(
            keys=[EpisodeLog.make_primary_key(episode_id), keys.episode_channel(episode_id)],
            args=[
                attempt,
                body,
                progress,
                json.dumps(messages),
                repr(now),
                turn["turn"],
                turn["agent_index"],
                json.dumps({"progress": progress, **merge}) if merge else "",
            ],
        )
        return None if int(sequence) < 0 else int(sequence)

    async def state(self, episode_id: str) -> tuple[Status, int] | None:
        """(status, attempt) of an episode, or None if it is gone."""
        return (await self.states([episode_id]))[0]

    async def states(self, episode_ids: list[str]) -> list[tuple[Status, int] | None]:
        """(status, attempt) of several episodes in one round trip."""
        async with self.client.pipeline(transaction=False) as pipe:
            for episode_id in episode_ids:
                key = EpisodeLog.make_primary_key(episode_id)
                pipe.execute_command("JSON.GET", key, "$.status", "$.attempt")
            replies: list[Any] = await pipe.execute()
        found: list[tuple[Status, int] | None] = []
        for raw in replies:
            data = json.loads(raw) if isinstance(raw, str | bytes) else raw
            if not data or not data.get("$.status"):
                found.append(None)
            else:
                found.append((Status(data["$.status"][0]), int(data["$.attempt"][0] or 0)))
        return found


LOG_ID = re.compile(r"([0-9]+)(?:-([0-9]+))?")
LAST_ID_PART = 2**64 - 1
"""Each part of a stream id is an unsigned 64-bit number."""


def log_position(log_id: str) -> tuple[int, int]:
    """An events-log id ("<ms>-<n>", or "<ms>" for "<ms>-0") as a comparable pair. ValueError
    for anything else, as Redis would refuse it (other digits than 0-9, spaces, a part past 64
    bits) or for the last id there can be, after which nothing can be read."""
    match = LOG_ID.fullmatch(log_id)
    if match is None:
        raise ValueError(f"not a stream id: {log_id!r}")
    position = int(match[1]), int(match[2] or 0)
    if max(position) > LAST_ID_PART or position == (LAST_ID_PART, LAST_ID_PART):
        raise ValueError(f"not a stream id that entries can follow: {log_id!r}")
    return position


class EventsLog:
    """Reads the events log: what a stream resuming from a cursor missed."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    async def head(self) -> str:
        """The id of the newest entry ("0-0" when the log is empty)."""
        newest: Any = await self.client.xrevrange(keys.EVENTS_LOG, count=1)
        return str(newest[0][0]) if newest else "0-0"

    async def expired(self, after: str) -> bool:
        """Whether entries newer than `after` may have been trimmed away.

        Trimming removes the oldest entries; `after` came from the log, so if the oldest entry
        left is newer than it, `after` and what followed it may be gone.
        """
        try:
            info: Any = await self.client.xinfo_stream(keys.EVENTS_LOG)
        except redis.ResponseError:
            return False  # no log yet: nothing was ever trimmed
        if int(info["entries-added"]) == int(info["length"]):
            return False
        first = info.get("first-entry")
        oldest = str(first[0]) if first else str(info["last-generated-id"])
        return log_position(oldest) > log_position(after)

    async def since(self, after: str, page: int = 500) -> list[EpisodeEvent]:
        """Every logged status event after `after`, oldest first."""
        found: list[EpisodeEvent] = []
        start = f"({after}"
        while True:
            entries: Any = await self.client.xrange(keys.EVENTS_LOG, min=start, count=page)
            for entry_id, fields in entries:
                event = parse_event(fields["event"])
                found.append(event.model_copy(update={"log_id": str(entry_id)}))
            if len(entries) < page:
                return found
            start = f"({entries[-1][0]}"
