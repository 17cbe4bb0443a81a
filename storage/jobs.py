"""The job protocol: one Redis Stream read through a consumer group (at-least-once delivery).

A job is an entry naming its kind and what it is about (`entry`). Workers read new entries
with XREADGROUP, keep a lease on their in-flight entries by resetting the entries' idle time
(XCLAIM ... JUSTID), and take over entries whose lease lapsed with XAUTOCLAIM. An entry is
acknowledged and deleted in one transaction once its job is done. Retry limits are counted on
the episode (its attempt number), not here.
"""

import logging
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NamedTuple

import redis.asyncio as redis

from parley.storage import keys
from parley.storage.scripts import Script

log = logging.getLogger(__name__)


class AckKeys(NamedTuple):
    stream: str


class AckArgs(NamedTuple):
    group: str
    entry: str


ACK = Script("ack_job", AckKeys, AckArgs, batched=True)


class JobKind(StrEnum):
    """What a job does; the worker runs each kind with its own handler."""

    EPISODE = "episode"
    """Run (or go on with) an episode."""
    EVALUATION = "evaluation"
    """Judge a finished episode again, for a re-judging (lifecycle/rejudge.py)."""
    DRAFT = "draft"
    """Ask a model for one part of a draft job (lifecycle/drafts.py)."""


@dataclass(frozen=True)
class QueueFigures:
    """The queue as /metrics shows it (`JobQueue.figures`)."""

    waiting: int
    """Entries no worker has taken yet."""
    running: int
    """Entries a worker has taken and not acknowledged."""
    lag_seconds: float
    """Age of the oldest entry no worker has taken yet (0 when none waits)."""
    workers: int
    """Consumers that read, renewed or swept within the window asked for."""


@dataclass(frozen=True)
class Job:
    entry_id: str
    kind: JobKind
    subject: str
    """What the job is about: an episode's id (EPISODE, EVALUATION), a draft job's (DRAFT)."""
    detail: str = ""
    """EVALUATION: the re-judging's id; DRAFT: the part's number."""


KIND, SUBJECT, DETAIL = "kind", "subject", "detail"
"""The fields of a job's entry: the one declaration of its format (`entry`, `parse_entry`)."""


def entry(kind: JobKind, subject: str, detail: str = "") -> dict[str, str]:
    """A job's entry on the stream, for XADD (a script is given it as JSON: `episode_entry`)."""
    return {KIND: kind, SUBJECT: subject, **({DETAIL: detail} if detail else {})}


def episode_entry(episode_id: str) -> list[str]:
    """An episode job's entry as the field, value list a script's XADD takes."""
    return [part for pair in entry(JobKind.EPISODE, episode_id).items() for part in pair]


def parse_entry(entry_id: str, fields: dict[str, str]) -> Job | None:
    """The job of an entry, or None for one that is none of ours. Entries written before jobs
    had a kind name the episode (or the draft job) in `episode`, with `evaluation` or `draft`."""
    if KIND in fields:
        try:
            kind = JobKind(fields[KIND])
        except ValueError:
            return None
        return Job(entry_id, kind, fields.get(SUBJECT, ""), fields.get(DETAIL, ""))
    if "episode" not in fields:
        return None
    if "evaluation" in fields:
        return Job(entry_id, JobKind.EVALUATION, fields["episode"], fields["evaluation"])
    if "draft" in fields:
        return Job(entry_id, JobKind.DRAFT, fields["episode"], fields["draft"])
    return Job(entry_id, JobKind.EPISODE, fields["episode"])


def _jobs(entries: list[Any]) -> list[Job]:
    jobs = []
    for entry_id, fields in entries:
        job = parse_entry(entry_id, fields) if fields else None
        if job is not None:
            jobs.append(job)
    return jobs


def _ids(entry_ids: list[str]) -> Any:
    """redis-py's annotation for message ids rejects a plain list of str."""
    return entry_ids


class JobQueue:
    def __init__(
        self, client: redis.Redis, stream: str = keys.JOBS, group: str = keys.WORKERS
    ) -> None:
        self.client = client
        self.stream = stream
        self.group = group
        self._sweep_cursor = "0-0"

    async def ensure_group(self) -> None:
        try:
            await self.client.xgroup_create(self.stream, self.group, id="0", mkstream=True)
        except redis.ResponseError as err:
            if "BUSYGROUP" not in str(err):
                raise

    def add(self, pipe: Any, kind: JobKind, subject: str, detail: str = "") -> None:
        """Queue an XADD of a job in a pipeline (so it commits with what it is about)."""
        pipe.xadd(self.stream, entry(kind, subject, detail))

    async def read(self, consumer: str, count: int, block_ms: int) -> list[Job]:
        """New jobs for `consumer`, waiting up to `block_ms` for the first. A Redis that came
        back empty (restarted without persistence, or flushed) has lost the group, and the stream
        with it: the group is made again, from the stream's start, so that jobs queued since
        are run."""
        try:
            reply: Any = await self._read(consumer, count, block_ms)
        except redis.ResponseError as err:
            if not str(err).startswith("NOGROUP"):
                raise
            log.warning(
                "the job queue's consumer group is gone (Redis came back empty?): made again"
            )
            await self.ensure_group()
            reply = await self._read(consumer, count, block_ms)
        return [job for _, entries in reply or [] for job in _jobs(entries)]

    async def _read(self, consumer: str, count: int, block_ms: int) -> Any:
        return await self.client.xreadgroup(
            self.group, consumer, {self.stream: ">"}, count=count, block=block_ms
        )

    async def renew(self, consumer: str, entry_ids: list[str]) -> None:
        """Reset the idle time of entries `consumer` is working on (its lease)."""
        if entry_ids:
            await self.client.xclaim(
                self.stream, self.group, consumer, 0, _ids(entry_ids), justid=True
            )

    async def reclaim(self, consumer: str, min_idle_ms: int, count: int) -> list[Job]:
        """Take over entries idle for at least `min_idle_ms` (their worker stopped renewing)."""
        reply = await self.client.xautoclaim(
            self.stream, self.group, consumer, min_idle_ms, self._sweep_cursor, count=count
        )
        self._sweep_cursor = reply[0]
        jobs = _jobs(reply[1])
        deleted = [entry for entry in (reply[2] if len(reply) > 2 else [])]
        if deleted:  # entries removed from the stream while pending: drop them from the PEL
            await self.client.xack(self.stream, self.group, *deleted)
        return jobs

    async def release(self, consumer: str, entry_ids: list[str], idle_ms: int) -> None:
        """Hand entries back at shutdown: mark them idle so the next sweep takes them."""
        if entry_ids:
            await self.client.xclaim(
                self.stream, self.group, consumer, 0, _ids(entry_ids), idle=idle_ms, justid=True
            )

    async def ack(self, entry_id: str) -> None:
        await ACK(self.client, AckKeys(self.stream), AckArgs(self.group, entry_id))

    async def figures(self, live_ms: int) -> QueueFigures:
        """Waiting and running entries, the age of the oldest waiting one (by its id's time and
        Redis's clock) and the consumers seen within `live_ms`: a worker reads at least every
        second and renews its leases every third of a lease, so one that stops is not counted
        for long. All zero when the stream is gone (a Redis that came back empty)."""
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.xlen(self.stream)
            pipe.xinfo_groups(self.stream)
            pipe.xinfo_consumers(self.stream, self.group)
            pipe.time()
            try:
                length, groups, consumers, now = await pipe.execute()
            except redis.ResponseError as err:
                if "no such key" not in str(err).lower() and "NOGROUP" not in str(err):
                    raise
                return QueueFigures(0, 0, 0.0, 0)
        group = next(g for g in groups if g["name"] == self.group)
        running = int(group["pending"])
        waiting = max(0, int(length) - running)
        lag = 0.0
        if waiting:
            after = "(" + str(group["last-delivered-id"])
            oldest = await self.client.xrange(self.stream, after, "+", count=1)
            if oldest:
                created_ms = int(str(oldest[0][0]).partition("-")[0])
                lag = max(0.0, now[0] + now[1] / 1e6 - created_ms / 1000)
        workers = sum(1 for c in consumers if int(c["idle"]) < live_ms)
        return QueueFigures(waiting, running, lag, workers)

    async def depth(self) -> tuple[int, int]:
        """(entries in the stream, entries delivered but not yet acknowledged)."""
        length = await self.client.xlen(self.stream)
        pending = await self.client.xpending(self.stream, self.group)
        return int(length), int(pending["pending"])
