"""Job queues of their own for tests of what queues jobs, and what they hold."""

import uuid
from typing import Any

import redis.asyncio as redis

from parley.storage.jobs import JobKind, JobQueue, parse_entry


def private_queue(client: redis.Redis) -> JobQueue:
    """A queue on a stream of its own, so no worker of another test module takes its jobs."""
    return JobQueue(client, stream=f"parley:test-jobs:{uuid.uuid4().hex}")


async def queued_jobs(client: redis.Redis, jobs: JobQueue) -> list[tuple[JobKind, str, str]]:
    """The jobs on the queue's stream, oldest first, as (kind, subject, detail)."""
    entries: Any = await client.xrange(jobs.stream)
    found = [parse_entry(entry_id, fields) for entry_id, fields in entries]
    return [(job.kind, job.subject, job.detail) for job in found if job is not None]
