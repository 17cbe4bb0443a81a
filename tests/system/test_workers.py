"""Through real processes: API servers, workers, websockets, a worker killed mid-episode."""

import asyncio
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.support.fake_llm import FakeLLM
from bench.support.polling import eventually
from bench.support.processes import api_process, parley_env, worker_process
from bench.support.simulation import (
    EVENTS,
    STATUS,
    collect,
    episode,
    make_world,
    post,
    start,
    start_input,
    wait_for,
    websocket_transport,
)

CANCEL = """
mutation($id: ID!) {
  cancelSimulation(input: {id: $id}) { episode { status } userErrors { code } }
}"""


@pytest.fixture
def env(redis_url: str, redis_client: Any, tmp_path: Path) -> dict[str, str]:
    """Settings for the processes; `redis_client` binds the test's models to the same Redis."""
    return parley_env(
        redis_url, tmp_path / "data", lease_seconds="2", max_attempts="3", seed="false"
    )


async def metrics(base_url: str) -> dict[str, Any]:
    async with httpx.AsyncClient() as http:
        found: dict[str, Any] = (await http.get(f"{base_url}/metrics")).json()
        return found


async def new_episode(url: str, tag: str, model: str, **fields: Any) -> str:
    """An episode of a new world (`make_world(tag)`), `model` in every seat, started: its id."""
    scenario, agents = await make_world(tag)
    return await start(url, start_input(scenario, agents, model, **fields))


async def completed(url: str, tag: str, model: str) -> str:
    """An episode of a new world started and played to COMPLETED: its id."""
    episode_id = await new_episode(url, tag, model)
    await wait_for(url, episode_id, lambda e: e["status"] == "COMPLETED")
    return episode_id


def statuses(events: list[dict[str, Any]]) -> list[str]:
    return [e["status"] for e in events if e["kind"] != "TURN"]


async def test_subscriber_sees_every_transition_then_reads_rewards(
    env: dict[str, str], tmp_path: Path, fake_llm: FakeLLM
) -> None:
    with api_process(env, tmp_path / "api.log", "--no-worker") as api:
        episode_id = await new_episode(api.url, "life", fake_llm.model_name())
        subscribed = asyncio.Event()
        following = asyncio.create_task(collect(api.url, EVENTS, episode_id, subscribed))
        await asyncio.wait_for(subscribed.wait(), 10)
        with worker_process(env, tmp_path / "worker.log"):
            events = await asyncio.wait_for(following, 60)
        stored = await episode(api.url, episode_id)

    assert statuses(events) == ["QUEUED", "RUNNING", "EVALUATING", "COMPLETED"]
    sequences = [e["sequence"] for e in events]
    assert sequences == list(range(sequences[0], sequences[0] + len(events)))
    turns = [e["turn"] for e in events if e["kind"] == "TURN"]
    assert len(turns) == 3 and all(t["argument"] for t in turns)  # round-robin: one actor a turn
    assert stored["status"] == "COMPLETED" and stored["attempt"] == 1
    assert [t["argument"] for t in stored["turns"]] == [t["argument"] for t in turns]
    assert len(stored["rewards"]) == 2
    for reward in stored["rewards"]:
        names = {d["dimension"] for d in reward["dimensions"]}
        assert "goal" in names and len(names) == 7
    assert stored["messages"][0][0][0] == "Environment" and stored["reasoning"]


async def test_two_apis_and_a_worker_share_one_redis(
    env: dict[str, str], tmp_path: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.delay = 0.05
    with (
        api_process(env, tmp_path / "a.log", "--no-worker") as one,
        api_process(env, tmp_path / "b.log", "--no-worker") as two,
        worker_process(env, tmp_path / "w.log"),
    ):
        episode_id = await new_episode(one.url, "pair", fake_llm.model_name())
        events = await asyncio.wait_for(collect(two.url, EVENTS, episode_id), 60)
    assert statuses(events)[-1] == "COMPLETED"
    sequences = [e["sequence"] for e in events]
    assert sequences == list(range(sequences[0], sequences[-1] + 1))
    assert events[0]["kind"] == "SNAPSHOT"


async def test_killed_worker_costs_only_a_retry(
    env: dict[str, str], tmp_path: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.delay = 0.3
    with api_process(env, tmp_path / "api.log", "--no-worker") as api:
        episode_id = await new_episode(api.url, "kill", fake_llm.model_name(), maxTurns=4)
        with worker_process(env, tmp_path / "w1.log") as doomed:
            await wait_for(api.url, episode_id, lambda e: len(e["turns"]) >= 1)
            doomed.kill()
        assert (await episode(api.url, episode_id))["status"] == "RUNNING"
        with worker_process(env, tmp_path / "w2.log"):
            done = await wait_for(api.url, episode_id, lambda e: e["status"] == "COMPLETED")
    assert done["attempt"] == 2
    runs = [h for h in done["statusHistory"] if h["status"] == "RUNNING"]
    assert [r["attempt"] for r in runs] == [1, 2]
    assert len(done["turns"]) == 4 and len(done["rewards"]) == 2


async def test_job_that_kills_every_worker_fails_after_the_cap(
    env: dict[str, str], tmp_path: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.delay = 0.3
    with api_process(env, tmp_path / "api.log", "--no-worker") as api:
        episode_id = await new_episode(api.url, "loop", fake_llm.model_name())
        for attempt in (1, 2, 3):
            with worker_process(env, tmp_path / f"w{attempt}.log") as doomed:
                await wait_for(api.url, episode_id, lambda e, a=attempt: e["attempt"] == a)
                doomed.kill()
        with worker_process(env, tmp_path / "last.log"):
            failed = await wait_for(api.url, episode_id, lambda e: e["status"] == "FAILED")
    assert failed["error"] == "worker lost 3 times"
    assert failed["statusHistory"][-1]["reason"] == "worker lost 3 times"


async def test_cancel_running_keeps_partial_transcript(
    env: dict[str, str], tmp_path: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.delay = 0.3
    with api_process(env, tmp_path / "api.log") as api:
        episode_id = await new_episode(api.url, "stop", fake_llm.model_name(), maxTurns=20)
        await wait_for(api.url, episode_id, lambda e: len(e["turns"]) >= 2)
        cancelled = await post(api.url, CANCEL, {"id": episode_id})
        assert cancelled["cancelSimulation"]["episode"]["status"] == "CANCELLED"
        await asyncio.sleep(3)  # the worker notices within its poll interval and stops
        count = len(fake_llm.requests)
        await asyncio.sleep(1.5)
        assert len(fake_llm.requests) == count
        final = await episode(api.url, episode_id)
    assert final["status"] == "CANCELLED"
    assert 2 <= len(final["turns"]) < 20 and final["messages"]


async def test_subscribing_after_completion_gets_the_snapshot(
    env: dict[str, str], tmp_path: Path, fake_llm: FakeLLM
) -> None:
    with api_process(env, tmp_path / "api.log") as api:
        episode_id = await completed(api.url, "late", fake_llm.model_name())
        events = await asyncio.wait_for(collect(api.url, STATUS, episode_id), 10)
        with pytest.raises(Exception, match="no episode with id"):
            await asyncio.wait_for(collect(api.url, STATUS, "no-such-episode"), 10)
    assert [(e["kind"], e["status"]) for e in events] == [("SNAPSHOT", "COMPLETED")]


async def test_disconnected_subscriber_leaves_nothing_behind(
    env: dict[str, str], tmp_path: Path, fake_llm: FakeLLM, redis_client: Any
) -> None:
    from parley.storage.keys import episode_channel

    with api_process(env, tmp_path / "api.log", "--no-worker") as api:
        episode_id = await new_episode(api.url, "gone", fake_llm.model_name())
        baseline = await metrics(api.url)
        started = asyncio.Event()
        task = asyncio.create_task(collect(api.url, EVENTS, episode_id, started))
        await asyncio.wait_for(started.wait(), 10)
        during = await metrics(api.url)
        numsub = await redis_client.pubsub_numsub(episode_channel(episode_id))
        task.cancel()  # the client goes away mid-stream
        with pytest.raises(asyncio.CancelledError):
            await task
        after = await eventually(
            partial(metrics, api.url),
            lambda now: now["subscribers"] == 0 and now["tasks"] <= baseline["tasks"],
            timeout=5,
        )
        gone = await redis_client.pubsub_numsub(episode_channel(episode_id))
        await post(api.url, CANCEL, {"id": episode_id})
    assert during["subscribers"] == 1 and numsub[0][1] == 1
    assert after["subscribers"] == 0 and after["channels"] == 0
    assert after["tasks"] <= baseline["tasks"]
    assert gone[0][1] == 0


async def test_legacy_graphql_ws_protocol_is_served(
    env: dict[str, str], tmp_path: Path, fake_llm: FakeLLM
) -> None:
    from gql import Client, GraphQLRequest
    from gql.transport.websockets import WebsocketsTransport

    with api_process(env, tmp_path / "api.log") as api:
        episode_id = await completed(api.url, "legacy", fake_llm.model_name())
        transport = websocket_transport(api.url, WebsocketsTransport.APOLLO_SUBPROTOCOL)
        async with Client(transport=transport) as session:
            request = GraphQLRequest(STATUS, variable_values={"id": episode_id})
            events = [r async for r in session.subscribe(request)]
        assert transport.subprotocol == "graphql-ws"
    assert [e["episodeStatus"]["status"] for e in events] == ["COMPLETED"]
