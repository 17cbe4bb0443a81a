"""The job protocol: one Redis Stream read through a consumer group (at-least-once delivery).

A job is an entry naming an episode. Workers read new entries with XREADGROUP, keep a lease on
their in-flight entries by resetting the entries' idle time (XCLAIM ... JUSTID), and take over
entries whose lease lapsed with XAUTOCLAIM. An entry is acknowledged and deleted in one
transaction once its episode has reached an end. Retry limits are counted on the episode
(its attempt number), not here.
"""

import logging
from dataclasses import dataclass
from typing import Any

import redis.asyncio as redis

from parley.storage import keys

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Job:
    entry_id: str
    episode_id: str
    evaluation: str | None = None
    """Set for a re-judging's job (lifecycle/rejudge.py): judge the finished episode again."""
    draft: str | None = None
    """Set for a part of a draft job (lifecycle/drafts.py), whose id is then `episode_id`."""


def crash_reason(err: BaseException) -> str:
    """What a job that failed in a way nobody expected records: what was raised, and its
    message (the traceback goes to the worker's log)."""
    detail = str(err).strip()
    return f"internal error in the worker: {type(err).__name__}" + (f": {detail}" if detail else "")


def _jobs(entries: list[Any]) -> list[Job]:
    jobs = []
    for entry_id, fields in entries:
        if fields and "episode" in fields:
            evaluation = fields.get("evaluation")
            jobs.append(Job(entry_id, fields["episode"], evaluation, fields.get("draft")))
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

    def add(self, pipe: Any, episode_id: str) -> None:
        """Queue an XADD for `episode_id` in a pipeline (so it commits with the episode)."""
        pipe.xadd(self.stream, {"episode": episode_id})

    def add_evaluation(self, pipe: Any, episode_id: str, rejudging_id: str) -> None:
        """Queue an XADD of a job that judges a finished episode again."""
        pipe.xadd(self.stream, {"episode": episode_id, "evaluation": rejudging_id})

    def add_draft(self, pipe: Any, job_id: str, part: int) -> None:
        """Queue an XADD of one part of a draft job."""
        pipe.xadd(self.stream, {"episode": job_id, "draft": str(part)})

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
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.xack(self.stream, self.group, entry_id)
            pipe.xdel(self.stream, entry_id)
            await pipe.execute()

    async def depth(self) -> tuple[int, int]:
        """(entries in the stream, entries delivered but not yet acknowledged)."""
        length = await self.client.xlen(self.stream)
        pending = await self.client.xpending(self.stream, self.group)
        return int(length), int(pending["pending"])
