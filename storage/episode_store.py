"""Episode state changes and the events that announce them, atomically and fenced.

Each change runs as one Lua script: it checks the current status (only legal transitions happen)
and, for a worker, its attempt number (a fencing token, so a worker whose lease lapsed cannot
overwrite the new owner's work), bumps the episode's sequence number, writes, and publishes the
event, all at once. Readers therefore never see a change without its event or the reverse.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import redis.asyncio as redis

from parley.core import tracing
from parley.storage import keys, ledger
from parley.storage.events import status_event
from parley.storage.jobs import episode_entry
from parley.storage.models import EpisodeLog, EpisodeStatus, StatusChange, Waiting
from parley.storage.scripts import Script
from parley.storage.times import stored_time
from parley.storage.vocabulary import AttemptMode

IDEMPOTENCY_TTL = 24 * 3600
"""Seconds an idempotency key keeps naming its episode."""

Status = EpisodeStatus


class Fenced(Exception):
    """The episode is no longer this worker's to write (cancelled, deleted, or taken over)."""


class EpisodeKeys(NamedTuple):
    """What a script that changes an episode's status reaches."""

    episode: str
    channel: str
    everyone: str
    events_log: str
    deadlines: str
    jobs: str
    scores: str


class CreateKeys(NamedTuple):
    jobs: str
    events_log: str
    everyone: str
    scores: str


class CreateArgs(NamedTuple):
    ttl: int
    prefix: str
    minid: str
    required: int
    seat_prefix: str


class TransitionArgs(NamedTuple):
    status: str
    allowed: str
    fence: str | int
    now: str
    reason: str
    mode: str
    owner: str
    minid: str
    waiting: str
    job: str


class OneEpisode(NamedTuple):
    episode: str


class MarkKeys(NamedTuple):
    episode: str
    scores: str


class MarkArgs(NamedTuple):
    attempt: int


class TurnKeys(NamedTuple):
    episode: str
    channel: str


class TurnArgs(NamedTuple):
    attempt: int
    turn: str
    messages: str


LOG = ("json", "log", "status_change")
"""The shared functions of a script that changes an episode's status."""
CREATE = Script("create_episodes", CreateKeys, CreateArgs, ("json", "log"), acknowledged=True)
TRANSITION = Script("transition", EpisodeKeys, TransitionArgs, LOG, acknowledged=True, batched=True)
MARK = Script("mark", MarkKeys, MarkArgs, ("json",), acknowledged=True, batched=True)
APPEND_TURN = Script("append_turn", TurnKeys, TurnArgs, ("json",), acknowledged=True, batched=True)
"""The scripts that write many fields of an episode write them in as few JSON commands as keep
their meaning (`lib/json.lua`, `new_patch`): each JSON write re-indexes the episode in every
index that covers it (bench/RESULTS.md, issue 27)."""


def numbered(data: dict[str, Any]) -> str:
    """The JSON of a turn or an injection numbered 0, for a script to give its sequence (its
    first member: `numbered` in lib/json.lua replaces it as it appends)."""
    return json.dumps({"sequence": 0, **data})


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


def initial_history(at: float) -> list[StatusChange]:
    """A new episode's history (its time as the scripts store every later change's)."""
    return [StatusChange(status=Status.QUEUED, at=stored_time(at), sequence=1)]


class EpisodeStore:
    """Writes to episodes that must be atomic with their events."""

    def __init__(
        self, client: redis.Redis, retention: float = DEFAULT_RETENTION, jobs: str = keys.JOBS
    ) -> None:
        self.client = client
        self.retention = retention
        self.jobs = jobs
        """The job stream an episode queued again gets its job on."""

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
        more_keys: list[str] = list(required)
        more_args: list[str] = []
        for episode in episodes:
            pk = str(episode.pk)
            key = episode.idempotency_key
            event = status_event(episode, episode.status_history[-1], None)
            more_keys += [
                keys.idempotency(key) if key else keys.idempotency(pk),
                EpisodeLog.make_primary_key(pk),
                keys.episode_channel(pk),
            ]
            more_args += [
                pk,
                episode.model_dump_json(),
                event.model_dump_json(exclude_none=True),
                "1" if key else "",
                json.dumps(episode_entry(pk)),
            ]
        done, values = await CREATE(
            self.client,
            CreateKeys(
                jobs=jobs,
                events_log=keys.EVENTS_LOG,
                everyone=keys.EPISODES_CHANNEL,
                scores=keys.SCORES_VERSION,
            ),
            CreateArgs(
                ttl=IDEMPOTENCY_TTL,
                prefix=EpisodeLog.make_primary_key(""),
                minid=self.log_floor(),
                required=len(required),
                seat_prefix=keys.seat_token(""),
            ),
            more_keys,
            more_args,
        )
        if not done:
            return Created(ids=[], missing=[int(i) - 1 for i in values])
        return Created(ids=[str(v) for v in values])

    def episode_keys(self, episode_id: str) -> EpisodeKeys:
        return EpisodeKeys(
            episode=EpisodeLog.make_primary_key(episode_id),
            channel=keys.episode_channel(episode_id),
            everyone=keys.EPISODES_CHANNEL,
            events_log=keys.EVENTS_LOG,
            deadlines=keys.DEADLINES,
            jobs=self.jobs,
            scores=keys.SCORES_VERSION,
        )

    def requeue(self, episode_id: str) -> str:
        """The job entry of an episode queued again, for a script to add."""
        return json.dumps(episode_entry(episode_id))

    async def transition(
        self,
        episode_id: str,
        status: Status,
        *,
        fence: int | None = None,
        reason: str | None = None,
        attempt_mode: AttemptMode = "none",
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
        allowed = list(allowed_from if allowed_from is not None else ALLOWED_FROM[status])
        with tracing.stored(TRANSITION.name, episode_id, fence, status=status.value):
            code, current = await TRANSITION(
                self.client,
                self.episode_keys(episode_id),
                TransitionArgs(
                    status=status,
                    allowed=json.dumps(allowed),
                    fence="" if fence is None else fence,
                    now=repr(time.time()),
                    reason=reason or "",
                    mode=attempt_mode,
                    owner=owner,
                    minid=self.log_floor(),
                    waiting=waiting.model_dump_json() if waiting else "",
                    job=self.requeue(episode_id) if status == Status.QUEUED else "",
                ),
                more_args=_patch(fields or {}),
            )
        found = Status(current) if current else None
        return TransitionResult(code in (1, 2), code == -1, found, repeated=code == 2)

    async def mark(self, episode_id: str, attempt: int, fields: dict[str, Any]) -> bool:
        """Set `fields` if `attempt` is still the episode's; False when it is not (or gone)."""
        with tracing.stored(MARK.name, episode_id, attempt):
            done = await MARK(
                self.client,
                MarkKeys(EpisodeLog.make_primary_key(episode_id), keys.SCORES_VERSION),
                MarkArgs(attempt),
                more_args=_patch(fields),
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
        stored list at index `turn["turn"]` (or is appended as the next turn). The progress and
        the fields of `merge` (top-level fields) are set with it. Writing the same action twice
        (a retried command) stores it once. Returns the event's sequence, or None when the
        caller no longer owns a running episode.
        """
        with tracing.stored(APPEND_TURN.name, episode_id, attempt, turn=turn.get("turn")):
            sequence = await APPEND_TURN(
                self.client,
                TurnKeys(EpisodeLog.make_primary_key(episode_id), keys.episode_channel(episode_id)),
                TurnArgs(
                    attempt=attempt,
                    turn=numbered({**turn, "at": stored_time(time.time())}),
                    messages=json.dumps(messages),
                ),
                more_args=_patch({"progress": progress, **(merge or {})}),
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

    async def delete(self, episode: EpisodeLog) -> None:
        """Delete an episode with the keys that name it: its ledger of model calls (with the
        bodies no other ledger refers to), its re-judgings' records of it, the
        keys its seat credentials are found by and its idempotency key (a new start with that
        key makes a new episode)."""
        pk = str(episode.pk)
        await ledger.delete(self.client, pk)
        related = [keys.evaluation_record(e.id, pk) for e in episode.evaluations]
        related += [keys.seat_token(s.token_hash) for s in episode.human_seats if s.token_hash]
        if episode.idempotency_key:
            related.append(keys.idempotency(episode.idempotency_key))
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.delete(EpisodeLog.make_primary_key(pk), *related)
            pipe.incr(keys.SCORES_VERSION)
            await pipe.execute()


def _patch(fields: dict[str, Any]) -> list[str]:
    """(JSON path, JSON value) pairs setting an episode's `fields`."""
    return [part for name, value in fields.items() for part in (f"$.{name}", json.dumps(value))]
