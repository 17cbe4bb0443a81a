"""Run control: pause, step, resume, and environment messages injected into an episode.

A queued or waiting episode pauses at once; a running one is asked to (`pause_at`) and its
worker parks it PAUSED before its next turn, letting the job go, so a paused episode holds no
worker. Resuming queues it again and a worker goes on from its stored turns; a step does the
same with `pause_at` one turn ahead. An injection is stored unnumbered and published; the worker
gives it the turn it delivers it in (`StoredControl`), so a resumed attempt delivers it there
again. A worker asks before a turn only when its once-a-second watch saw a pause asked for or an
injection waiting (`RunControl.requested`), so an uncontrolled turn costs Redis nothing more.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Annotated, Any

import redis.asyncio as redis
from pydantic import BaseModel, Field, ValidationError
from redis.commands.core import AsyncScript

from parley.core.errors import ErrorCode, UserError, from_validation, not_found
from parley.core.limits import RecordId, RequiredText
from parley.engine.episode import TurnControl
from parley.engine.types import Injection
from parley.lifecycle import logs
from parley.lifecycle.transitions import EpisodeStore, Fenced, TransitionResult
from parley.resolvers.agents import agent_names
from parley.storage import keys
from parley.storage.models import EpisodeLog, EpisodeStatus, StoredInjection
from parley.storage.records import get_or_none, storable

log = logging.getLogger(__name__)
Status = EpisodeStatus

_REQUEST_PAUSE = """
local raw = redis.call('JSON.GET', KEYS[1], '$.status', '$.progress')
if not raw then return '' end
local doc = cjson.decode(raw)
local status = doc['$.status'][1]
if status == 'RUNNING' then
  local at = 0
  if ARGV[1] == 'step' then at = (doc['$.progress'][1] or 0) + 1 end
  redis.call('JSON.SET', KEYS[1], '$.pause_at', at)
end
return status
"""
"""Ask a running episode's worker to pause it (before its next turn, or after one more)."""

_INJECT = """
local raw = redis.call('JSON.GET', KEYS[1], '$.status', '$.pk', '$.attempt')
if not raw then return {0, ''} end
local doc = cjson.decode(raw)
local status = doc['$.status'][1]
if not string.find(' QUEUED RUNNING WAITING PAUSED ', ' ' .. status .. ' ', 1, true) then
  return {0, status}
end
local seq = cjson.decode(redis.call('JSON.NUMINCRBY', KEYS[1], '$.sequence', 1))[1]
local injection = '{"sequence":' .. string.format('%d', seq) .. ',' .. string.sub(ARGV[1], 2)
redis.call('JSON.ARRAPPEND', KEYS[1], '$.injections', injection)
redis.call('PUBLISH', KEYS[2], '{"type":"injection","episode_id":'
  .. cjson.encode(doc['$.pk'][1]) .. ',"sequence":' .. string.format('%d', seq)
  .. ',"at":' .. ARGV[2] .. ',"attempt":' .. (doc['$.attempt'][1] or 0)
  .. ',"injection":' .. injection .. '}')
return {1, seq}
"""
"""Store an environment message (not yet given a turn) and publish it."""

_DELIVER = """
local raw = redis.call('JSON.GET', KEYS[1], '$.status', '$.attempt', '$.pause_at',
                       '$.injections')
if not raw then return {0} end
local doc = cjson.decode(raw)
if doc['$.status'][1] ~= 'RUNNING' or doc['$.attempt'][1] ~= tonumber(ARGV[1]) then
  return {0}
end
local turn = tonumber(ARGV[2])
local delivered = {}
for i, injection in ipairs(doc['$.injections'][1] or {}) do
  if injection.turn == nil or injection.turn == cjson.null then
    redis.call('JSON.SET', KEYS[1], '$.injections[' .. (i - 1) .. '].turn', turn)
    injection.turn = turn
  end
  if injection.turn == turn then  -- as stored (cjson would turn an empty list into {})
    delivered[#delivered + 1] = redis.call('JSON.GET', KEYS[1], '$.injections[' .. (i - 1) .. ']')
  end
end
local pause_at = doc['$.pause_at'][1]
if pause_at == nil or pause_at == cjson.null then pause_at = -1 end
return {1, pause_at, unpack(delivered)}
"""
"""Before a new turn: number the injections not delivered yet with it, and return 1, the pause
turn (-1: none) and the turn's injections; {0} when the attempt is no longer running."""


class StoredControl:
    """The engine's `Control` over an episode's stored injections and pause request."""

    def __init__(self, deliver: AsyncScript, episode: EpisodeLog, attempt: int) -> None:
        self._deliver = deliver
        self.episode_id = str(episode.pk)
        self.attempt = attempt
        self.stored = episode.injections
        self.due = episode.pause_at is not None or any(i.turn is None for i in self.stored)
        """Whether a pause or an injection may wait: only then is Redis asked before a turn.
        The worker's watch sets it when it sees one (`RunControl.requested`)."""

    async def before_turn(self, turn: int, replaying: bool) -> TurnControl:
        if replaying:
            kept = [Injection(text=i.text, to=i.to) for i in self.stored if i.turn == turn]
            return TurnControl(injections=kept)
        if not self.due:
            return TurnControl()
        reply: list[Any] = await self._deliver(
            keys=[EpisodeLog.make_primary_key(self.episode_id)], args=[self.attempt, turn]
        )
        if not int(reply[0]):
            raise Fenced
        pause_at = int(reply[1])
        self.due = pause_at >= 0  # a step's pause still ahead is asked for again each turn
        injections = [Injection.model_validate(json.loads(raw)[0]) for raw in reply[2:]]
        return TurnControl(injections=injections, pause=0 <= pause_at <= turn)


class InjectRequest(BaseModel, extra="forbid"):
    episode_id: RecordId
    text: RequiredText
    to: Annotated[list[str], Field(max_length=10)] = []


_NOT_NOW = "the episode is {status}: {what}"
PAUSE_FROM = "only a queued, waiting or running one can pause"
STEP_FROM = "only a paused or running one can step"


def _conflict(status: Status, what: str) -> UserError:
    message = _NOT_NOW.format(status=status.value, what=what)
    return UserError(["input", "id"], message, ErrorCode.CONFLICT)


class RunControl:
    """The mutations on a running episode: each a status change or an event, or a user error
    when the episode's status does not allow it."""

    def __init__(self, client: redis.Redis, store: EpisodeStore) -> None:
        self.client = client
        self.store = store
        self._request_pause = client.register_script(_REQUEST_PAUSE)
        self._inject = client.register_script(_INJECT)
        self._deliver = client.register_script(_DELIVER)

    def of_attempt(self, episode: EpisodeLog, attempt: int) -> StoredControl:
        """What the engine is told before each turn of this attempt of `episode`."""
        return StoredControl(self._deliver, episode, attempt)

    async def requested(self, episode_ids: list[str]) -> list[bool]:
        """Whether each episode has a pause asked for or an injection not yet delivered, in one
        round trip (a worker's watch, about once a second)."""
        async with self.client.pipeline(transaction=False) as pipe:
            for episode_id in episode_ids:
                key = EpisodeLog.make_primary_key(episode_id)
                pipe.execute_command("JSON.GET", key, "$.pause_at", "$.injections[*].turn")
            replies: list[Any] = await pipe.execute()
        found = []
        for raw in replies:
            data = json.loads(raw) if isinstance(raw, str | bytes) else (raw or {})
            pause = [p for p in data.get("$.pause_at", []) if p is not None]
            found.append(bool(pause) or None in data.get("$.injections[*].turn", []))
        return found

    async def pause(self, pk: str) -> tuple[EpisodeLog | None, list[UserError]]:
        """A queued or waiting episode pauses at once; a running one before a turn, once its
        worker notices (within about a second)."""
        if not storable(pk):
            return None, [not_found("episode", pk)]
        result = await self.store.transition(
            pk,
            Status.PAUSED,
            reason="paused",
            allowed_from=(Status.QUEUED, Status.WAITING),
            fields={"pause_at": None},
        )
        if result.ok or result.status != Status.RUNNING:
            return await self._answer(pk, result, PAUSE_FROM)
        return await self._ask_running(pk, "pause", PAUSE_FROM)

    async def step(self, pk: str) -> tuple[EpisodeLog | None, list[UserError]]:
        """Run exactly one more turn, then pause: a paused episode is queued for one turn, a
        running one pauses after the turn after the one it plays."""
        episode = await get_or_none(EpisodeLog, pk)
        if episode is None:
            return None, [not_found("episode", pk)]
        if episode.status != Status.PAUSED:
            return await self._ask_running(pk, "step", STEP_FROM)
        result = await self.store.transition(
            pk,
            Status.QUEUED,
            reason="stepping one turn",
            allowed_from=(Status.PAUSED,),
            fields={"pause_at": episode.progress + 1},
        )
        return await self._answer(pk, result, STEP_FROM)

    async def _ask_running(
        self, pk: str, mode: str, what: str
    ) -> tuple[EpisodeLog | None, list[UserError]]:
        """Ask the worker of a running episode to pause it (`_REQUEST_PAUSE`)."""
        status = await self._request_pause(keys=[EpisodeLog.make_primary_key(pk)], args=[mode])
        episode = await get_or_none(EpisodeLog, pk)
        if not status or episode is None:
            return None, [not_found("episode", pk)]
        if status != Status.RUNNING:
            return episode, [_conflict(Status(status), what)]
        with logs.about(episode=pk):
            log.info("asked to %s", mode)
        return episode, []

    async def resume(self, pk: str) -> tuple[EpisodeLog | None, list[UserError]]:
        if not storable(pk):
            return None, [not_found("episode", pk)]
        result = await self.store.transition(
            pk,
            Status.QUEUED,
            reason="resumed",
            allowed_from=(Status.PAUSED,),
            fields={"pause_at": None},
        )
        return await self._answer(pk, result, "only a paused one can resume")

    async def _answer(
        self, pk: str, result: TransitionResult, what: str
    ) -> tuple[EpisodeLog | None, list[UserError]]:
        if result.status is None:
            return None, [not_found("episode", pk)]
        episode = await get_or_none(EpisodeLog, pk)
        if not result.ok:
            return episode, [_conflict(result.status, what)]
        with logs.about(episode=pk):
            log.info("now %s", result.status.value)
        return episode, []

    async def inject(
        self, fields: dict[str, Any]
    ) -> tuple[StoredInjection | None, list[UserError]]:
        """Add an environment message that its agents see from their next turn."""
        try:
            request = InjectRequest(**fields)
        except ValidationError as err:
            return None, from_validation(err)
        episode = await get_or_none(EpisodeLog, request.episode_id)
        if episode is None:
            return None, [not_found("episode", request.episode_id)]
        names = await agent_names(self.client, episode.agents)
        errors = [
            UserError(
                ["input", "to", str(i)],
                f"{name!r} is not an agent of this episode",
                ErrorCode.INVALID,
            )
            for i, name in enumerate(request.to)
            if name not in names
        ]
        if errors:
            return None, errors
        now = time.time()
        body = json.dumps({"text": request.text, "to": request.to, "at": now, "turn": None})
        done, value = await self._inject(
            keys=[
                EpisodeLog.make_primary_key(request.episode_id),
                keys.episode_channel(request.episode_id),
            ],
            args=[body, repr(now)],
        )
        if not done:
            if not value:
                return None, [not_found("episode", request.episode_id)]
            what = "its conversation is over"
            return None, [_conflict(Status(value), what)]
        stored = StoredInjection(
            text=request.text, to=request.to, at=now, sequence=int(value), turn=None
        )
        with logs.about(episode=request.episode_id):
            log.info("environment message injected")
        return stored, []
