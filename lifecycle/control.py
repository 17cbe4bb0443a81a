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
from pydantic import BaseModel, Field

from parley.core.errors import ErrorCode, UserError, not_found, validated
from parley.core.limits import RecordId, RequiredText
from parley.engine.episode import TurnControl
from parley.engine.types import Injection
from parley.lifecycle import logs
from parley.resolvers.agents import agent_names
from parley.storage import control as control_writes
from parley.storage.episode_store import EpisodeStore, Fenced, TransitionResult
from parley.storage.models import EpisodeLog, EpisodeStatus, StoredInjection
from parley.storage.records import get_or_none, storable
from parley.storage.times import stored_time
from parley.storage.vocabulary import PauseMode

log = logging.getLogger(__name__)
Status = EpisodeStatus


class StoredControl:
    """The engine's `Control` over an episode's stored injections and pause request."""

    def __init__(self, client: redis.Redis, episode: EpisodeLog, attempt: int) -> None:
        self.client = client
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
        delivered = await control_writes.deliver(self.client, self.episode_id, self.attempt, turn)
        if delivered is None:
            raise Fenced
        pause_at, stored = delivered
        self.due = pause_at >= 0  # a step's pause still ahead is asked for again each turn
        injections = [Injection.model_validate(i) for i in stored]
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

    def of_attempt(self, episode: EpisodeLog, attempt: int) -> StoredControl:
        """What the engine is told before each turn of this attempt of `episode`."""
        return StoredControl(self.client, episode, attempt)

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
        result = await self._move(pk, Status.PAUSED, "paused", (Status.QUEUED, Status.WAITING))
        if result is None:
            return None, [not_found("episode", pk)]
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
        self, pk: str, mode: PauseMode, what: str
    ) -> tuple[EpisodeLog | None, list[UserError]]:
        """Ask the worker of a running episode to pause it (storage/control.py)."""
        status = await control_writes.request_pause(self.client, pk, mode)
        episode = await get_or_none(EpisodeLog, pk)
        if not status or episode is None:
            return None, [not_found("episode", pk)]
        if status != Status.RUNNING:
            return episode, [_conflict(Status(status), what)]
        with logs.about(episode=pk):
            log.info("asked to %s", mode)
        return episode, []

    async def resume(self, pk: str) -> tuple[EpisodeLog | None, list[UserError]]:
        result = await self._move(pk, Status.QUEUED, "resumed", (Status.PAUSED,))
        if result is None:
            return None, [not_found("episode", pk)]
        return await self._answer(pk, result, "only a paused one can resume")

    async def _move(
        self, pk: str, status: Status, reason: str, allowed_from: tuple[Status, ...]
    ) -> TransitionResult | None:
        """Move the episode to `status` with no step's pause left ahead; None when `pk` cannot
        be an episode's id."""
        if not storable(pk):
            return None
        return await self.store.transition(
            pk, status, reason=reason, allowed_from=allowed_from, fields={"pause_at": None}
        )

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
        request, errors = validated(InjectRequest, fields)
        if request is None:
            return None, errors
        episode = await get_or_none(EpisodeLog, request.episode_id)
        if episode is None:
            return None, [not_found("episode", request.episode_id, "episodeId")]
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
        stored = StoredInjection(
            text=request.text, to=request.to, at=stored_time(time.time()), sequence=0, turn=None
        )
        sequence, status = await control_writes.inject(self.client, request.episode_id, stored)
        if sequence is None:
            if not status:
                return None, [not_found("episode", request.episode_id, "episodeId")]
            what = "its conversation is over"
            return None, [_conflict(Status(status), what)]
        stored = stored.model_copy(update={"sequence": sequence})
        with logs.about(episode=request.episode_id):
            log.info("environment message injected")
        return stored, []
