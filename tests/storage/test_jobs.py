"""The job queue: an entry names its kind and subject, and entries written before jobs had a
kind are still read."""

from typing import Any

from parley.storage.jobs import Job, JobKind, JobQueue, entry, parse_entry


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
