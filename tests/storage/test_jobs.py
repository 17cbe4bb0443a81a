"""The job queue: an entry names its kind and subject, and entries written before jobs had a
kind are still read."""

import time
from typing import Any

from parley.storage.jobs import Job, JobKind, JobQueue, QueueFigures, entry, parse_entry


async def queue(redis_client: Any, name: str) -> JobQueue:
    jobs = JobQueue(redis_client, stream=f"test:jobs:{name}", group="test-workers")
    await jobs.ensure_group()
    return jobs


async def test_each_kind_is_read_back_as_written(redis_client: Any) -> None:
    jobs = await queue(redis_client, "kinds")
    async with redis_client.pipeline(transaction=True) as pipe:
        jobs.add(pipe, JobKind.EPISODE, "ep1")
        jobs.add(pipe, JobKind.EVALUATION, "ep1", "rj1")
        jobs.add(pipe, JobKind.DRAFT, "draft1", "3")
        await pipe.execute()
    read = await jobs.read("w", 10, block_ms=100)
    assert [(j.kind, j.subject, j.detail) for j in read] == [
        (JobKind.EPISODE, "ep1", ""),
        (JobKind.EVALUATION, "ep1", "rj1"),
        (JobKind.DRAFT, "draft1", "3"),
    ]


async def test_entries_written_before_jobs_had_a_kind_are_still_read(redis_client: Any) -> None:
    jobs = await queue(redis_client, "old")
    for fields in (
        {"episode": "ep1"},
        {"episode": "ep1", "evaluation": "rj1"},
        {"episode": "draft1", "draft": "2"},
    ):
        await redis_client.xadd(jobs.stream, fields)
    read = await jobs.read("w", 10, block_ms=100)
    assert [(j.kind, j.subject, j.detail) for j in read] == [
        (JobKind.EPISODE, "ep1", ""),
        (JobKind.EVALUATION, "ep1", "rj1"),
        (JobKind.DRAFT, "draft1", "2"),
    ]


def test_an_entry_of_no_kind_we_know_is_passed_by() -> None:
    assert parse_entry("1-0", {"kind": "mystery", "subject": "x"}) is None
    assert parse_entry("1-0", {"something": "else"}) is None
    assert parse_entry("1-0", entry(JobKind.DRAFT, "d", "1")) == Job("1-0", JobKind.DRAFT, "d", "1")


async def test_figures_count_waiting_and_running_entries_the_lag_and_live_workers(
    redis_client: Any,
) -> None:
    jobs = JobQueue(redis_client, stream=f"test:jobs:figures:{time.time_ns()}", group="g")
    await jobs.ensure_group()
    assert await jobs.figures(live_ms=60_000) == QueueFigures(0, 0, 0.0, 0)
    an_hour_ago = int(time.time() * 1000) - 3_600_000
    for n in range(3):  # ids in the past: the oldest waiting entry is an hour old
        await redis_client.xadd(jobs.stream, entry(JobKind.EPISODE, f"ep{n}"), id=an_hour_ago + n)
    await redis_client.xadd(jobs.stream, entry(JobKind.EPISODE, "new"))
    taken = await jobs.read("alive", 2, block_ms=100)
    found = await jobs.figures(live_ms=60_000)
    assert (found.waiting, found.running, found.workers) == (2, 2, 1)
    assert 3_599 < found.lag_seconds < 3_700  # ep2, taken by no one yet
    assert (await jobs.figures(live_ms=0)).workers == 0  # seen, but not within no time
    for job in taken:
        await jobs.ack(job.entry_id)
    await jobs.read("alive", 10, block_ms=100)
    found = await jobs.figures(live_ms=60_000)
    assert (found.waiting, found.running, found.lag_seconds) == (0, 2, 0.0)


async def test_figures_of_a_queue_whose_stream_is_gone_are_zero(redis_client: Any) -> None:
    jobs = JobQueue(redis_client, stream=f"test:jobs:gone:{time.time_ns()}", group="g")
    assert await jobs.figures(live_ms=1000) == QueueFigures(0, 0, 0.0, 0)
