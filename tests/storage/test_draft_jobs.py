"""A draft job as stored: its settings, its parts' jobs, starts and first outcomes."""

import uuid

import redis.asyncio as redis

from parley.storage import draft_jobs, keys
from parley.storage.jobs import JobKind
from tests.support.jobs import private_queue, queued_jobs

SETTINGS = {"model": "m", "prompt": "p", "parts": [[2, 0], [0, 3]]}


async def test_a_queued_job_is_its_settings_and_one_job_per_part(redis_client: redis.Redis) -> None:
    jobs, job_id = private_queue(redis_client), uuid.uuid4().hex
    await draft_jobs.queue(redis_client, jobs, job_id, SETTINGS, 2)
    stored = await draft_jobs.read(redis_client, job_id)
    assert stored == draft_jobs.StoredDraftJob(SETTINGS, {}, 0)
    ttl = await redis_client.ttl(keys.draft_job(job_id))
    assert draft_jobs.RETENTION_SECONDS - 60 < ttl <= draft_jobs.RETENTION_SECONDS
    assert await queued_jobs(redis_client, jobs) == [
        (JobKind.DRAFT, job_id, "0"),
        (JobKind.DRAFT, job_id, "1"),
    ]
    assert await draft_jobs.read(redis_client, uuid.uuid4().hex) is None


async def test_starts_are_counted_and_a_part_handed_back_is_not_a_start(
    redis_client: redis.Redis,
) -> None:
    jobs, job_id = private_queue(redis_client), uuid.uuid4().hex
    await draft_jobs.queue(redis_client, jobs, job_id, SETTINGS, 2)
    assert await draft_jobs.start_part(redis_client, job_id, 0) == 1
    assert await draft_jobs.start_part(redis_client, job_id, 1) == 1
    assert await draft_jobs.start_part(redis_client, job_id, 0) == 2
    await draft_jobs.hand_back_part(redis_client, jobs, job_id, 0)
    stored = await draft_jobs.read(redis_client, job_id)
    assert stored is not None and stored.starts == 2 and stored.outcomes == {}
    assert (await queued_jobs(redis_client, jobs))[-1] == (JobKind.DRAFT, job_id, "0")


async def test_a_part_keeps_its_first_outcome(redis_client: redis.Redis) -> None:
    jobs, job_id = private_queue(redis_client), uuid.uuid4().hex
    await draft_jobs.queue(redis_client, jobs, job_id, SETTINGS, 2)
    await draft_jobs.start_part(redis_client, job_id, 1)
    await draft_jobs.end_part(redis_client, job_id, 1, {"draft": {"agents": []}})
    await draft_jobs.end_part(redis_client, job_id, 1, {"error": "too late"})
    stored = await draft_jobs.read(redis_client, job_id)
    assert stored is not None
    assert stored.outcomes == {1: {"draft": {"agents": []}}} and stored.starts == 1
    assert await redis_client.ttl(keys.draft_job_parts(job_id)) > 0
