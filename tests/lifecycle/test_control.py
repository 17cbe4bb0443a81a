"""Pause, step, resume and environment messages, in-process against a real Redis."""

import asyncio
import uuid
from typing import Any

from bench.support.fake_llm import FakeLLM
from bench.support.simulation import make_world, queue_episode
from parley.lifecycle.control import RunControl
from parley.lifecycle.services import Services
from parley.lifecycle.worker import Worker, running_worker
from parley.resolvers.agents import agent_names
from parley.storage.models import EpisodeLog, EpisodeStatus
from tests.lifecycle.conftest import burst, worker_config

Status = EpisodeStatus


async def queued(services: Services, model: str, **extra: Any) -> str:
    scenario, agents = await make_world(f"control-{uuid.uuid4().hex[:8]}")
    return await queue_episode(services, scenario, agents, model, **{"max_turns": 4, **extra})


async def until(pk: str, status: Status, timeout: float = 20) -> EpisodeLog:
    async with asyncio.timeout(timeout):
        while True:
            episode = await EpisodeLog.get(pk)
            if episode.status == status:
                return episode
            await asyncio.sleep(0.02)


def control(services: Services) -> RunControl:
    return RunControl(services.client, services.store)


async def test_a_queued_episode_pauses_at_once_and_resumes(
    services: Services, fake_llm: FakeLLM
) -> None:
    pk = await queued(services, fake_llm.model_name())
    episode, errors = await control(services).pause(pk)
    assert not errors and episode is not None and episode.status == Status.PAUSED
    await burst(services)  # its job is dropped: a paused episode holds no worker
    assert (await EpisodeLog.get(pk)).status == Status.PAUSED
    assert await services.jobs.depth() == (0, 0)
    episode, errors = await control(services).resume(pk)
    assert not errors and episode is not None and episode.status == Status.QUEUED
    await burst(services)
    assert (await EpisodeLog.get(pk)).status == Status.COMPLETED


async def test_a_running_episode_pauses_before_its_next_turn_and_goes_on(
    services: Services, fake_llm: FakeLLM
) -> None:
    fake_llm.delay = 0.1
    pk = await queued(services, fake_llm.model_name(), max_turns=6)
    async with running_worker(Worker(services, worker_config())):
        await until(pk, Status.RUNNING)
        episode, errors = await control(services).pause(pk)
        assert not errors and episode is not None and episode.pause_at == 0
        paused = await until(pk, Status.PAUSED)
        assert 0 < paused.progress < 6 and paused.pause_at is None
        await asyncio.sleep(0.5)
        assert (await EpisodeLog.get(pk)).turns == paused.turns  # nothing runs meanwhile
        _, errors = await control(services).resume(pk)
        assert not errors
        done = await until(pk, Status.COMPLETED)
    assert done.turns[: len(paused.turns)] == paused.turns
    assert [t.turn for t in done.turns] == list(range(6))
    resumed = [c for c in done.status_history if c.status == Status.RUNNING][-1]
    assert resumed.resumed_from == len(paused.turns)


async def test_a_step_plays_one_turn_then_pauses_and_the_last_step_ends_it(
    services: Services, fake_llm: FakeLLM
) -> None:
    pk = await queued(services, fake_llm.model_name(), max_turns=2)
    await control(services).pause(pk)
    for turns, after in ((1, Status.PAUSED), (2, Status.COMPLETED)):
        stepped, errors = await control(services).step(pk)
        assert not errors and stepped is not None and stepped.status == Status.QUEUED
        await burst(services)
        episode = await EpisodeLog.get(pk)
        assert len(episode.turns) == turns
        assert episode.status == after  # the second step played the last turn: it ended


async def test_each_control_is_refused_where_it_makes_no_sense(
    services: Services, fake_llm: FakeLLM
) -> None:
    pk = await queued(services, fake_llm.model_name(), max_turns=1)
    run = control(services)
    for refused in (run.resume, run.step):  # queued: nothing to resume, nothing to step
        _, errors = await refused(pk)
        assert [e.code.value for e in errors] == ["CONFLICT"], refused
        assert "QUEUED" in errors[0].message
    await burst(services)
    before = await EpisodeLog.get(pk)
    assert before.status == Status.COMPLETED
    for refused in (run.pause, run.resume, run.step):
        _, errors = await refused(pk)
        assert [e.code.value for e in errors] == ["CONFLICT"]
        assert "COMPLETED" in errors[0].message
    _, errors = await run.inject({"episode_id": pk, "text": "too late"})
    assert [e.code.value for e in errors] == ["CONFLICT"]
    after = await EpisodeLog.get(pk)
    assert after.sequence == before.sequence and after.injections == []
    for missing in (run.pause, run.resume, run.step):
        _, errors = await missing("no-such-episode")
        assert [e.code.value for e in errors] == ["NOT_FOUND"]


async def test_an_injection_reaches_its_agents_from_the_next_turn(
    services: Services, fake_llm: FakeLLM
) -> None:
    pk = await queued(services, fake_llm.model_name(), max_turns=2)
    episode = await EpisodeLog.get(pk)
    names = await agent_names(services.client, episode.agents)
    _, errors = await control(services).inject(
        {"episode_id": pk, "text": "A fire alarm rings.", "to": [names[1]]}
    )
    assert not errors
    _, errors = await control(services).inject({"episode_id": pk, "text": "x", "to": ["Nobody"]})
    assert [e.code.value for e in errors] == ["INVALID"]
    _, errors = await control(services).inject({"episode_id": pk, "text": ""})
    assert [e.code.value for e in errors] == ["INVALID"]
    await burst(services)
    episode = await EpisodeLog.get(pk)
    assert episode.status == Status.COMPLETED
    (injection,) = episode.injections
    assert injection.turn == 0 and injection.to == [names[1]]
    assert ("Environment", names[1], "A fire alarm rings.") in episode.messages[0]
    assert all(m[1] != names[0] or m[2] != "A fire alarm rings." for m in episode.messages[0])
    asked = {
        name: [r.text for r in fake_llm.requests_of("action") if f"You are {name}." in r.text]
        for name in names
    }
    assert all("A fire alarm rings." not in text for text in asked[names[0]])
    assert any("A fire alarm rings." in text for text in asked[names[1]])
