"""The figures /metrics reads from Redis: episodes by status (Sotopia's, without one, counted
COMPLETED) and the job queue."""

import json
import time

import redis.asyncio as redis

from parley.core.metrics import Shared
from parley.resolvers.gauges import episode_counts, shared_figures
from parley.storage.jobs import JobQueue
from parley.storage.models import EpisodeLog, EpisodeStatus


async def stored(status: EpisodeStatus) -> None:
    episode = EpisodeLog(environment="s", agents=["a", "b"])
    episode.status = status
    await episode.save()


async def test_every_status_is_counted_and_an_episode_without_one_is_completed(
    redis_client: redis.Redis,
) -> None:
    before = await episode_counts(redis_client)
    assert set(before) == {s.value for s in EpisodeStatus}
    for status in (EpisodeStatus.QUEUED, EpisodeStatus.FAILED, EpisodeStatus.FAILED):
        await stored(status)
    pk = f"gauges-sotopia-{time.time_ns()}"
    sotopia = {"pk": pk, "environment": "s", "agents": ["a", "b"], "tag": ""}
    key = EpisodeLog.make_key(pk)
    await redis_client.execute_command("JSON.SET", key, "$", json.dumps(sotopia))  # type: ignore[no-untyped-call]
    after = await episode_counts(redis_client)
    grown = {status: after[status] - before[status] for status in after}
    assert grown == {**dict.fromkeys(before, 0), "QUEUED": 1, "FAILED": 2, "COMPLETED": 1}


async def test_the_shared_figures_hold_the_queue_and_the_workers(
    redis_client: redis.Redis,
) -> None:
    jobs = JobQueue(redis_client, stream=f"test:jobs:gauges:{time.time_ns()}", group="g")
    await jobs.ensure_group()
    await redis_client.xadd(jobs.stream, {"kind": "episode", "subject": "x"})
    await jobs.read("gauged", 1, block_ms=100)
    found = await shared_figures(redis_client, jobs, live_seconds=60)
    assert isinstance(found, Shared)
    assert (found.running, found.workers, found.lag_seconds) == (1, 1, 0.0)
    assert found.episodes == await episode_counts(redis_client)
