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
import time
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import redis.asyncio as redis
from pydantic import BaseModel, ConfigDict

from storage import keys
from storage.models import EpisodeLog, EpisodeStatus, StatusChange, StoredTurn

Status = EpisodeStatus


class EventKind(StrEnum):
    """SNAPSHOT is the stored state when a stream starts; then STATUS changes and TURNs."""

    SNAPSHOT = "snapshot"
    STATUS = "status"
    TURN = "turn"


class EpisodeEvent(BaseModel):
    """Something that happened to an episode, numbered by the episode's sequence."""

    model_config = ConfigDict(extra="forbid")

    type: EventKind
    episode_id: str
    sequence: int
    at: float
    attempt: int = 0
    tag: str | None = None
    status: EpisodeStatus | None = None
    previous_status: EpisodeStatus | None = None
    reason: str | None = None
    turn: StoredTurn | None = None

    @property
    def terminal(self) -> bool:
        return self.type == EventKind.STATUS and self.status is not None and self.status.terminal


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
        status=change.status,
        previous_status=previous,
        reason=change.reason,
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
        status=episode.status,
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
    return sorted(events, key=lambda e: e.sequence)


_TRANSITION = """
local key = KEYS[1]
local new, allowed, fence, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local reason, restart = ARGV[5], ARGV[6]
local raw = redis.call('JSON.GET', key, '$.status', '$.attempt', '$.tag', '$.pk')
if not raw then return {0, ''} end
local doc = cjson.decode(raw)
local status = doc['$.status'][1]
local attempt = doc['$.attempt'][1] or 0
if not string.find(' ' .. allowed .. ' ', ' ' .. status .. ' ', 1, true) then
  return {0, status}
end
if fence ~= '' and tonumber(fence) ~= attempt then return {-1, status} end
if restart == '1' then
  attempt = attempt + 1
  redis.call('JSON.SET', key, '$.attempt', attempt)
  redis.call('JSON.SET', key, '$.turns', '[]')
  redis.call('JSON.SET', key, '$.messages', '[]')
  redis.call('JSON.SET', key, '$.rewards', '[]')
  redis.call('JSON.SET', key, '$.progress', 0)
end
local seq = cjson.decode(redis.call('JSON.NUMINCRBY', key, '$.sequence', 1))[1]
local change = {status = new, at = tonumber(now), sequence = seq, attempt = attempt}
if reason ~= '' then change.reason = reason end
redis.call('JSON.SET', key, '$.status', cjson.encode(new))
redis.call('JSON.ARRAPPEND', key, '$.status_history', cjson.encode(change))
for i = 7, #ARGV, 2 do redis.call('JSON.SET', key, ARGV[i], ARGV[i + 1]) end
local event = {type = 'status', episode_id = doc['$.pk'][1], sequence = seq, at = tonumber(now),
               attempt = attempt, status = new, previous_status = status}
if reason ~= '' then event.reason = reason end
local tag = doc['$.tag'][1]
if tag ~= nil and tag ~= cjson.null then event.tag = tag end
local payload = cjson.encode(event)
redis.call('PUBLISH', KEYS[2], payload)
redis.call('PUBLISH', KEYS[3], payload)
return {1, seq}
"""

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
redis.call('JSON.SET', key, '$.progress', ARGV[3])
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
class TransitionResult:
    ok: bool
    fenced: bool
    """The caller's attempt is no longer the episode's: another worker owns it now."""
    status: Status | None
    """The status after the call (the current one when nothing changed); None when gone."""


ALLOWED_FROM: dict[Status, tuple[Status, ...]] = {
    Status.RUNNING: (Status.QUEUED, Status.RUNNING, Status.EVALUATING),
    Status.EVALUATING: (Status.RUNNING,),
    Status.COMPLETED: (Status.EVALUATING,),
    Status.FAILED: (Status.QUEUED, Status.RUNNING, Status.EVALUATING),
    Status.CANCELLED: (Status.QUEUED, Status.RUNNING, Status.EVALUATING),
}


def initial_history(at: float) -> list[StatusChange]:
    return [StatusChange(status=Status.QUEUED, at=at, sequence=1)]


class EpisodeStore:
    """Writes to episodes that must be atomic with their events."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self._transition = client.register_script(_TRANSITION)
        self._append_turn = client.register_script(_APPEND_TURN)

    def add_queued(self, pipe: Any, episode: EpisodeLog) -> None:
        """Queue the writes that create a QUEUED episode and announce it (in `pipe`)."""
        pipe.json().set(
            EpisodeLog.make_primary_key(episode.pk), "$", episode.model_dump(mode="json")
        )
        event = status_event(episode, episode.status_history[-1], None)
        payload = event.model_dump_json(exclude_none=True)
        pipe.publish(keys.episode_channel(str(episode.pk)), payload)
        pipe.publish(keys.EPISODES_CHANNEL, payload)

    async def transition(
        self,
        episode_id: str,
        status: Status,
        *,
        fence: int | None = None,
        reason: str | None = None,
        restart: bool = False,
        allowed_from: Iterable[Status] | None = None,
        fields: dict[str, Any] | None = None,
    ) -> TransitionResult:
        """Move to `status` if legal from the current one (and if `fence` still matches)."""
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
            ],
            args=[
                status,
                allowed,
                "" if fence is None else fence,
                repr(now),
                reason or "",
                "1" if restart else "0",
                *patch,
            ],
        )
        if code == 1:
            return TransitionResult(True, False, status)
        found = Status(current) if current else None
        return TransitionResult(False, code == -1, found)

    async def append_turn(
        self,
        episode_id: str,
        attempt: int,
        turn: dict[str, Any],
        progress: int,
        messages: list[tuple[str, str, str]],
    ) -> int | None:
        """Store and publish one turn, and set Sotopia's messages of its turn.

        `messages` is the turn's whole list of (sender, receiver, text) so far; it replaces the
        stored list at index `turn["turn"]` (or is appended as the next turn). Writing the same
        action twice (a retried command) stores it once. Returns the event's sequence, or None
        when the caller no longer owns a running episode.
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
