"""Draft jobs: queued in parts on the job queue, run by the worker against a real Redis and the
fake model server; progress and status read from the parts' outcomes."""

import asyncio
import uuid
from typing import Any

import redis.asyncio as redis

from bench.support.fake_llm import FakeLLM, Rule
from bench.support.simulation import make_world
from parley.lifecycle import drafts
from parley.lifecycle.drafts import DraftJobStatus
from parley.lifecycle.services import Services
from parley.lifecycle.worker import Worker, WorkerConfig, running_worker
from parley.storage import keys
from tests.lifecycle.conftest import burst


def prompt() -> str:
    return f"Neighbours share a garden ({uuid.uuid4().hex[:8]})."


async def test_a_draft_job_runs_in_parts_and_gathers_them_in_order(
    services: Services, fake_llm: FakeLLM
) -> None:
    fields = {"prompt": prompt(), "model": fake_llm.model_name(), "agents": 7, "scenarios": 12}
    job, errors = await drafts.queue(services.client, services.jobs, services.models, fields)
    assert not errors and job is not None
    assert [(p.agents, p.scenarios) for p in job.parts] == [(5, 0), (2, 0), (0, 5), (0, 5), (0, 2)]
    queued = await drafts.get_draft_job(services.client, job.id)
    assert queued is not None and queued.status == DraftJobStatus.QUEUED
    assert (queued.done, queued.total) == (0, 19)

    await burst(services)

    done = await drafts.get_draft_job(services.client, job.id)
    assert done is not None and done.status == DraftJobStatus.COMPLETED
    assert (done.done, done.total) == (19, 19)
    result, problems = done.result()
    # the fake drafts the same people in each part: the second part's two repeat the first's,
    # which no part's own check sees
    assert [(p.field, p.message) for p in problems] == [
        (
            ["draft", "agents", str(i), "firstName"],
            f"another agent of this draft is named {name!r} too: give each agent a name of its own",
        )
        for i, name in ((5, "Maya Okafor"), (6, "Jonas Lindqvist"))
    ]
    assert len(result.agents) == 7 and len(result.scenarios) == 12
    assert [s.codename for s in result.scenarios[:6]] == [
        "rent_talk_0", "rent_talk_1", "rent_talk_2", "rent_talk_3", "rent_talk_4", "rent_talk_0",
    ]  # fmt: skip
    assert len(fake_llm.requests) == 5


async def test_a_part_without_a_draft_fails_the_job_and_keeps_the_others(
    services: Services, fake_llm: FakeLLM
) -> None:
    fake_llm.add_rule(Rule(contains=["distinct characters"], content="{broken", times=None))
    fields = {"prompt": prompt(), "model": fake_llm.model_name(), "agents": 3, "scenarios": 4}
    job, _ = await drafts.queue(services.client, services.jobs, services.models, fields)
    assert job is not None
    await burst(services)
    ended = await drafts.get_draft_job(services.client, job.id)
    assert ended is not None and ended.status == DraftJobStatus.FAILED
    assert (ended.done, ended.total) == (7, 7)
    result, problems = ended.result()
    assert result.agents == [] and len(result.scenarios) == 4
    [problem] = problems
    assert problem.field == ["parts", "0"] and "no usable draft" in problem.message


async def test_scenarios_for_stored_agents_have_a_goal_each(
    services: Services, fake_llm: FakeLLM
) -> None:
    _, agents = await make_world(f"draftjob-{uuid.uuid4().hex[:6]}", agents=3)
    fields = {
        "prompt": prompt(),
        "model": fake_llm.model_name(),
        "scenarios": 2,
        "agent_ids": agents,
    }
    job, errors = await drafts.queue(services.client, services.jobs, services.models, fields)
    assert not errors and job is not None and job.seats == 3
    await burst(services)
    ended = await drafts.get_draft_job(services.client, job.id)
    assert ended is not None and ended.status == DraftJobStatus.COMPLETED
    assert [len(s.agent_goals) for s in ended.result()[0].scenarios] == [3, 3]
    assert "1. Ava0" in fake_llm.requests[0].text


async def test_refused_jobs_queue_nothing(
    services: Services, fake_llm: FakeLLM, redis_client: redis.Redis, unchanged: Any
) -> None:
    model = fake_llm.model_name()
    cases: list[tuple[dict[str, Any], list[str]]] = [
        ({"prompt": "x", "model": "no-such-model", "scenarios": 5}, ["input", "model"]),
        ({"prompt": "x", "model": model, "scenarios": 501}, ["input", "scenarios"]),
        ({"prompt": "x", "model": model, "agents": 51}, ["input", "agents"]),
        ({"prompt": "x", "model": model}, ["input"]),
        ({"prompt": "", "model": model, "scenarios": 1}, ["input", "prompt"]),
        (
            {"prompt": "x", "model": model, "scenarios": 1, "agent_ids": ["nobody", "nobody2"]},
            ["input", "agentIds", "0"],
        ),
    ]
    before = await redis_client.xlen(services.jobs.stream)
    async with unchanged():
        for fields, field in cases:
            job, errors = await drafts.queue(
                services.client, services.jobs, services.models, fields
            )
            assert job is None and errors and errors[0].field == field, (fields, errors)
    assert await redis_client.xlen(services.jobs.stream) == before
    assert (
        "unknown model"
        in (await drafts.queue(services.client, services.jobs, services.models, cases[0][0]))[1][
            0
        ].message
    )
    assert fake_llm.requests == []


async def test_a_part_handed_back_is_queued_again_without_counting_a_loss(
    services: Services, fake_llm: FakeLLM, redis_client: redis.Redis
) -> None:
    fake_llm.add_rule(Rule(contains=["different scenarios"], hang=True))
    fields = {"prompt": prompt(), "model": fake_llm.model_name(), "scenarios": 1}
    job, _ = await drafts.queue(services.client, services.jobs, services.models, fields)
    assert job is not None
    config = WorkerConfig(lease_seconds=5.0, poll_seconds=0.05, consumer="stopped")
    async with asyncio.timeout(30), running_worker(Worker(services, config)):
        while not fake_llm.requests:  # noqa: ASYNC110 - recorded in the server's thread
            await asyncio.sleep(0.02)
    starts = await redis_client.hget(keys.draft_job_parts(job.id), "starts:0")
    assert starts == "0"
    fake_llm.reset()
    await burst(services)
    ended = await drafts.get_draft_job(services.client, job.id)
    assert ended is not None and ended.status == DraftJobStatus.COMPLETED
    assert len(ended.result()[0].scenarios) == 1


async def test_a_part_whose_workers_were_lost_too_often_ends_with_why(
    services: Services, fake_llm: FakeLLM, redis_client: redis.Redis
) -> None:
    fields = {"prompt": prompt(), "model": fake_llm.model_name(), "scenarios": 7}
    job, _ = await drafts.queue(services.client, services.jobs, services.models, fields)
    assert job is not None
    attempts = WorkerConfig().max_attempts
    await redis_client.hset(keys.draft_job_parts(job.id), "starts:1", attempts)
    await burst(services)
    ended = await drafts.get_draft_job(services.client, job.id)
    assert ended is not None and ended.status == DraftJobStatus.FAILED
    result, [problem] = ended.result()
    assert problem.field == ["parts", "1"]
    assert problem.message == f"worker lost {attempts} times"
    assert len(result.scenarios) == 5 and len(fake_llm.requests) == 1
