"""A draft job as stored: its settings (`keys.draft_job`) and, per part, its outcome and how many
times a worker began it (`keys.draft_job_parts`); each part is a job of the queue."""

import json
from dataclasses import dataclass
from typing import Any

import redis.asyncio as redis

from parley.storage import keys
from parley.storage.jobs import JobKind, JobQueue

RETENTION_SECONDS = 7 * 24 * 3600
"""A job and its parts are kept this long after it is queued."""
STARTS = "starts:"
"""The prefix of a part's count of starts in `keys.draft_job_parts` (`starts:<part>`)."""


@dataclass(frozen=True)
class StoredDraftJob:
    settings: dict[str, Any]
    outcomes: dict[int, dict[str, Any]]
    starts: int
    """The starts of all its parts."""


async def queue(
    client: redis.Redis, jobs: JobQueue, job_id: str, settings: dict[str, Any], parts: int
) -> None:
    """Store a job's settings and queue a job for each of its `parts`, at once."""
    async with client.pipeline(transaction=True) as pipe:
        pipe.set(keys.draft_job(job_id), json.dumps(settings), ex=RETENTION_SECONDS)
        for part in range(parts):
            jobs.add(pipe, JobKind.DRAFT, job_id, str(part))
        await pipe.execute()


async def read(client: redis.Redis, job_id: str) -> StoredDraftJob | None:
    async with client.pipeline(transaction=False) as pipe:
        pipe.get(keys.draft_job(job_id))
        pipe.hgetall(keys.draft_job_parts(job_id))
        settings, stored = await pipe.execute()
    if settings is None:
        return None
    return StoredDraftJob(
        settings=json.loads(settings),
        outcomes={int(k): json.loads(v) for k, v in stored.items() if not k.startswith(STARTS)},
        starts=sum(int(v) for k, v in stored.items() if k.startswith(STARTS)),
    )


async def start_part(client: redis.Redis, job_id: str, part: int) -> int:
    """Count a start of `part`: how many times it was begun, this one included."""
    return int(await client.hincrby(keys.draft_job_parts(job_id), f"{STARTS}{part}"))


async def hand_back_part(client: redis.Redis, jobs: JobQueue, job_id: str, part: int) -> None:
    """Queue `part` again with its start not counted, at once."""
    async with client.pipeline(transaction=True) as pipe:
        pipe.hincrby(keys.draft_job_parts(job_id), f"{STARTS}{part}", -1)
        jobs.add(pipe, JobKind.DRAFT, job_id, str(part))
        await pipe.execute()


async def end_part(client: redis.Redis, job_id: str, part: int, outcome: dict[str, Any]) -> None:
    """Keep `part`'s first outcome (a later one is dropped)."""
    key = keys.draft_job_parts(job_id)
    async with client.pipeline(transaction=True) as pipe:
        pipe.hsetnx(key, str(part), json.dumps(outcome))
        pipe.expire(key, RETENTION_SECONDS)
        await pipe.execute()
