"""Faults, through real processes: Redis restarted, LLM endpoints failing, a worker killed while
judging, and a large backlog.

Tests that restart Redis or fill it with a backlog get their own embedded Redis (`own_redis`), so
the session's server and the tests after these never see the fault or the leftovers.
"""

import asyncio
import json
import os
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio as redis
import websockets

from bench.support.fake_llm import FakeLLM, Rule
from bench.support.processes import api_process, parley_env, worker_process
from bench.support.simulation import (
    EVENTS,
    START,
    collect,
    episode,
    make_world,
    post,
    start,
    start_input,
    wait_for,
)
from parley.engine.llm import RetryPolicy
from parley.storage.connection import open_client, prepare
from parley.storage.embedded import EmbeddedRedis, free_port
from parley.storage.episode_store import EpisodeStore
from parley.storage.jobs import JobQueue
from parley.storage.models import EpisodeLog, EpisodeStatus

TERMINAL = ("COMPLETED", "FAILED", "CANCELLED")
ATTEMPTS = RetryPolicy().max_attempts
"""Tries of one LLM call (the workers run the engine's default retry policy)."""
TYPENAME = "{ __typename }"
STATS = "query($id: ID!) { episode(id: $id) { status generationStats } }"
START_MANY = """
mutation($inputs: [StartSimulationInput!]!) {
  startSimulations(inputs: $inputs) {
    episodes { id status }
    userErrors { field message code }
  }
}"""
COUNT = """
query($tag: String!, $status: EpisodeStatus!) {
  episodes(filter: {tag: $tag, status: $status}, first: 1) { totalCount }
}"""


@dataclass
class OwnRedis:
    """An embedded Redis that only this test uses; the test's models are bound to it."""

    server: EmbeddedRedis
    client: redis.Redis

    @property
    def url(self) -> str:
        return self.server.url

    async def restart(self, down_seconds: float) -> None:
        """SIGTERM the server, wait, and start it again on the same port and data directory."""
        await self.server.stop()
        await asyncio.sleep(down_seconds)
        await self.server.start()
        # Pooled connections to the old server fail once each when next used: close them.
        await self.client.connection_pool.disconnect(inuse_connections=False)


@pytest.fixture
async def own_redis(tmp_path: Path, redis_client: redis.Redis) -> AsyncIterator[OwnRedis]:
    """A private Redis for the test; the session's binding is restored afterwards."""
    server = EmbeddedRedis(tmp_path, port=free_port())
    await server.start()
    client = open_client(server.url)
    try:
        await prepare(client)
        yield OwnRedis(server, client)
    finally:
        await prepare(redis_client)
        await client.aclose()
        await server.stop()


@pytest.fixture
def env(redis_url: str, redis_client: redis.Redis, tmp_path: Path) -> dict[str, str]:
    """Settings for processes on the session Redis (to which `redis_client` binds the models)."""
    return parley_env(
        redis_url, tmp_path / "data", lease_seconds="2", max_attempts="3", seed="false"
    )


def terminal(found: dict[str, Any]) -> bool:
    return found["status"] in TERMINAL


async def until(check: Callable[[], bool | Awaitable[bool]], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while True:
        done = check()
        if done if isinstance(done, bool) else await done:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)


async def ready(base_url: str) -> bool:
    try:
        async with httpx.AsyncClient(timeout=2) as http:
            return (await http.get(f"{base_url}/readyz")).status_code == 200
    except httpx.HTTPError:
        return False


async def reconnected(base_url: str) -> bool:
    """The API's event hub lost Redis and has its pub/sub connection back."""
    async with httpx.AsyncClient(timeout=2) as http:
        found: int = (await http.get(f"{base_url}/metrics")).json()["hub_reconnects"]
    return found >= 1


async def refused(base_url: str) -> bool:
    return not await ready(base_url)


async def responsive(base_url: str, episode_id: str, status: str) -> None:
    """The API answers a trivial query and reads the episode, which is still in `status`."""
    assert await post(base_url, TYPENAME, {}) == {"__typename": "Query"}
    found = await episode(base_url, episode_id)
    assert found["id"] == episode_id and found["status"] == status, found


async def stats(base_url: str, episode_id: str) -> dict[str, Any]:
    found: dict[str, Any] = (await post(base_url, STATS, {"id": episode_id}))["episode"]
    return found


# --- 1. Redis restarted while episodes run ------------------------------------------------


async def test_redis_restart_mid_run_loses_and_duplicates_nothing(
    own_redis: OwnRedis, tmp_path: Path, fake_llm: FakeLLM
) -> None:
    """Redis goes away for 2 s mid-run, well within the workers' 8 s lease: the API recovers,
    a subscriber resyncs to the end, and every episode completes in its first attempt (the
    workers wait the outage out), once, with no job left in the stream."""
    fake_llm.delay = 0.3
    tag = "faults-restart"
    scenario, agents = await make_world(tag)
    env = parley_env(
        own_redis.url, tmp_path / "data", lease_seconds="8", max_attempts="3", seed="false"
    )
    variables = start_input(scenario, agents, fake_llm.model_name(), maxTurns=6, tag=tag)
    with (
        api_process(env, tmp_path / "api.log", "--no-worker") as api,
        worker_process(env, tmp_path / "worker.log", concurrency=8),
    ):
        ids = [await start(api.url, variables) for _ in range(6)]
        subscribed = asyncio.Event()
        following = asyncio.create_task(collect(api.url, EVENTS, ids[0], subscribed))
        await asyncio.wait_for(subscribed.wait(), 10)
        await wait_for(api.url, ids[0], lambda e: len(e["turns"]) >= 2, timeout=30)

        restarting = asyncio.create_task(own_redis.restart(down_seconds=2))
        await until(lambda: refused(api.url), 10, "/readyz to notice Redis is gone")
        await restarting

        await until(lambda: ready(api.url), 30, "/readyz to answer 200 again")
        await until(lambda: reconnected(api.url), 30, "the API's event hub to reconnect")
        assert await post(api.url, TYPENAME, {}) == {"__typename": "Query"}
        assert (await episode(api.url, ids[-1]))["id"] == ids[-1]
        events = await asyncio.wait_for(following, 90)
        finals = [await wait_for(api.url, pk, terminal, timeout=90) for pk in ids]

    assert events[-1]["kind"] == "STATUS" and events[-1]["status"] == "COMPLETED", events
    sequences = [e["sequence"] for e in events]
    assert sequences == sorted(set(sequences))  # resynced, never repeated or reordered
    for final in finals:
        assert final["status"] == "COMPLETED", final
        assert final["attempt"] == 1, final  # the outage cost no attempt
        assert len(final["turns"]) == 6 and len(final["rewards"]) == 2, final
    assert await EpisodeLog.find(EpisodeLog.tag == tag).count() == len(ids)
    assert await JobQueue(own_redis.client).depth() == (0, 0)


async def test_an_outage_longer_than_the_lease_resumes_from_the_stored_turns(
    own_redis: OwnRedis, tmp_path: Path, fake_llm: FakeLLM
) -> None:
    """Redis is away for longer than the 2 s lease: the worker gives the episode up, and when
    Redis is back the episode resumes in a new attempt from the turns stored before, none
    played twice."""
    fake_llm.delay = 0.3
    scenario, agents = await make_world("faults-long-outage")
    env = parley_env(
        own_redis.url, tmp_path / "data", lease_seconds="2", max_attempts="3", seed="false"
    )
    variables = start_input(scenario, agents, fake_llm.model_name(), maxTurns=6)
    with (
        api_process(env, tmp_path / "api.log", "--no-worker") as api,
        worker_process(env, tmp_path / "worker.log", concurrency=2),
    ):
        pk = await start(api.url, variables)
        await wait_for(api.url, pk, lambda e: len(e["turns"]) >= 2, timeout=30)
        await own_redis.restart(down_seconds=5)
        final = await wait_for(api.url, pk, terminal, timeout=90)
    assert final["status"] == "COMPLETED" and final["attempt"] == 2, final
    turns = [(t["turn"], t["speaker"]) for t in final["turns"]]
    assert len(turns) == 6 == len(set(turns)), turns
    resumed = [h for h in final["statusHistory"] if h["resumedFromTurn"] is not None]
    assert len(resumed) == 1 and resumed[0]["resumedFromTurn"] >= 2, final["statusHistory"]


async def test_while_redis_is_down_requests_say_so_with_a_code_and_when_to_retry(
    own_redis: OwnRedis, tmp_path: Path, fake_llm: FakeLLM
) -> None:
    """503 and Retry-After for graphql-response+json clients, UNAVAILABLE (retryable) in the
    errors for application/json ones; nothing is written, and the retry with its idempotency
    key, once Redis is back, makes exactly one episode."""
    tag = "faults-unavailable"
    scenario, agents = await make_world(tag)
    env = parley_env(own_redis.url, tmp_path / "data", seed="false", worker="false")
    variables = start_input(
        scenario, agents, fake_llm.model_name(), tag=tag, idempotencyKey="while-down"
    )
    body = {"query": START, "variables": {"input": variables}}
    with api_process(env, tmp_path / "api.log") as api:
        await own_redis.server.stop()
        async with httpx.AsyncClient(base_url=api.url, timeout=30) as http:
            strict = await http.post(
                "/graphql", json=body, headers={"accept": "application/graphql-response+json"}
            )
            plain = await http.post("/graphql", json=body)
        await own_redis.server.start()
        await own_redis.client.connection_pool.disconnect(inuse_connections=False)
        await until(lambda: ready(api.url), 30, "/readyz to answer 200 again")
        ids = [await start(api.url, variables) for _ in range(2)]
    assert strict.status_code == 503 and strict.headers["retry-after"] == "1", strict.text
    (error,) = strict.json()["errors"]
    assert error["extensions"] == {"code": "UNAVAILABLE", "retryable": True, "retryAfterSeconds": 1}
    assert "storage is unavailable" in error["message"]
    assert plain.status_code == 200 and plain.headers["retry-after"] == "1"
    assert plain.json()["errors"][0]["extensions"]["code"] == "UNAVAILABLE"
    assert ids[0] == ids[1]
    assert await EpisodeLog.find(EpisodeLog.tag == tag).count() == 1


async def test_while_redis_stalls_readyz_says_so_and_is_ready_when_it_answers(
    own_redis: OwnRedis, tmp_path: Path
) -> None:
    """A Redis that takes connections and answers nothing (a stopped process: a swapping or
    frozen host) gets a 503 from /readyz in its time, not a probe that hangs with it; /metrics
    leaves out the provider limits it reads from Redis."""
    models = tmp_path / "models.json"
    limited = {"name": "limited", "base_url": "http://127.0.0.1:9/v1", "model": "fake"}
    models.write_text(json.dumps({"models": [{**limited, "requests_per_minute": 600}]}))
    env = parley_env(
        own_redis.url, tmp_path / "data", seed="false", worker="false", models_file=str(models)
    )
    with api_process(env, tmp_path / "api.log") as api:
        process = own_redis.server.process
        assert process is not None
        os.kill(process.pid, signal.SIGSTOP)
        try:
            async with httpx.AsyncClient(base_url=api.url, timeout=20) as http:
                stalled = await http.get("/readyz")
                figures = await http.get("/metrics")
        finally:
            os.kill(process.pid, signal.SIGCONT)
        await until(lambda: ready(api.url), 30, "/readyz to answer 200 again")
        async with httpx.AsyncClient(base_url=api.url, timeout=20) as http:
            [again] = (await http.get("/metrics")).json()["provider_limits"]
    assert stalled.status_code == 503, stalled.text
    assert stalled.json() == {"status": "unavailable", "redis": "Redis did not answer within 2 s"}
    assert figures.status_code == 200 and figures.json()["provider_limits"] is None
    assert again["models"] == ["limited"]


async def test_while_redis_is_down_a_seat_credential_is_told_to_retry(
    own_redis: OwnRedis, tmp_path: Path
) -> None:
    """A seat token is looked up in Redis when it arrives: with Redis down that is UNAVAILABLE
    with a retry hint (HTTP 503; a websocket closed 1013, try again later), not a crash."""
    env = parley_env(own_redis.url, tmp_path / "data", seed="false", worker="false", tokens="t")
    with api_process(env, tmp_path / "api.log") as api:
        await own_redis.server.stop()
        async with httpx.AsyncClient(base_url=api.url, timeout=30) as http:
            answer = await http.post(
                "/graphql",
                json={"query": "{ __typename }"},
                headers={"authorization": "Seat some-seat-token"},
            )
        ws_url = api.url.replace("http", "ws", 1) + "/graphql"
        async with websockets.connect(
            ws_url, subprotocols=[websockets.Subprotocol("graphql-transport-ws")]
        ) as socket:
            init = {"type": "connection_init", "payload": {"seatToken": "some-seat-token"}}
            await socket.send(json.dumps(init))
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await socket.recv()
        await own_redis.server.start()
    assert answer.status_code == 503 and answer.headers["retry-after"] == "1", answer.text
    assert answer.json()["errors"][0]["extensions"]["code"] == "UNAVAILABLE"
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1013  # try again later
    assert "unavailable" in closed.value.rcvd.reason


# --- 2. LLM endpoint down, hanging, answering garbage -------------------------------------


async def test_llm_endpoint_down_fails_the_episode_with_the_reason(
    env: dict[str, str], tmp_path: Path
) -> None:
    """Connection refused, retried, then FAILED with the reason; the API answers meanwhile."""
    model = f"custom/x@http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    scenario, agents = await make_world("faults-down")
    with api_process(env, tmp_path / "api.log") as api:
        episode_id = await start(api.url, start_input(scenario, agents, model))
        await wait_for(api.url, episode_id, lambda e: e["status"] == "RUNNING", timeout=30)
        await responsive(api.url, episode_id, "RUNNING")
        failed = await wait_for(api.url, episode_id, terminal, timeout=60)
        counters = (await stats(api.url, episode_id))["generationStats"]
    assert failed["status"] == "FAILED", failed
    assert "connection failed" in failed["error"]
    assert f"after {ATTEMPTS} attempts" in failed["error"]
    assert failed["statusHistory"][-1]["reason"] == failed["error"]
    assert failed["turns"] == [] and failed["rewards"] == []
    assert counters["transport_errors"] == ATTEMPTS, counters
    assert counters["retries"] == ATTEMPTS - 1, counters


async def test_llm_endpoint_hanging_times_out_and_fails(
    env: dict[str, str], tmp_path: Path, fake_llm: FakeLLM
) -> None:
    """An endpoint that never answers: each try times out (the models file sets 0.5 s)."""
    models_file = tmp_path / "models.json"
    entry = {"name": "hangs", "base_url": fake_llm.base_url, "model": "fake", "timeout": 0.5}
    models_file.write_text(json.dumps({"models": [entry]}))
    fake_llm.add_rule(Rule(hang=True, times=None))
    scenario, agents = await make_world("faults-hang")
    with api_process({**env, "PARLEY_MODELS_FILE": str(models_file)}, tmp_path / "api.log") as api:
        episode_id = await start(api.url, start_input(scenario, agents, "hangs"))
        await until(lambda: bool(fake_llm.requests), 30, "the first request")
        await responsive(api.url, episode_id, "RUNNING")
        failed = await wait_for(api.url, episode_id, terminal, timeout=60)
        counters = (await stats(api.url, episode_id))["generationStats"]
    assert failed["status"] == "FAILED", failed
    assert "timed out" in failed["error"] and f"after {ATTEMPTS} attempts" in failed["error"]
    assert counters["timeouts"] == ATTEMPTS, counters
    # every attempt reached the endpoint, none answered
    assert len(fake_llm.requests_of("action", mentioning="faults-hang")) == ATTEMPTS


async def test_llm_garbage_is_repaired_once_and_fails_when_it_persists(
    env: dict[str, str], tmp_path: Path, fake_llm: FakeLLM
) -> None:
    """One unparsable action is re-asked and counted; unparsable for good fails the episode."""
    fake_llm.delay = 0.05
    once_world = await make_world("faults-garbage-once")
    always_world = await make_world("faults-garbage-always")
    fake_llm.add_rule(
        Rule(kind="action", contains=["faults-garbage-once"], content="not json at all"),
        Rule(
            kind="action",
            contains=["faults-garbage-always"],
            content="not json at all",
            times=None,
            delay=1.0,  # keeps it RUNNING long enough to be looked at
        ),
    )
    model = fake_llm.model_name()
    with api_process(env, tmp_path / "api.log") as api:
        once = await start(api.url, start_input(*once_world, model))
        always = await start(api.url, start_input(*always_world, model))
        await wait_for(api.url, always, lambda e: e["status"] == "RUNNING", timeout=30)
        await responsive(api.url, always, "RUNNING")
        repaired = await wait_for(api.url, once, terminal, timeout=60)
        failed = await wait_for(api.url, always, terminal, timeout=60)
        repaired_stats = (await stats(api.url, once))["generationStats"]
        failed_stats = (await stats(api.url, always))["generationStats"]
    assert repaired["status"] == "COMPLETED", repaired
    assert len(repaired["turns"]) == 3 and len(repaired["rewards"]) == 2
    assert repaired_stats["repairs"] == 1 and repaired_stats["invalid_outputs"] == 1
    assert repaired_stats["failures"] == 0
    assert failed["status"] == "FAILED", failed
    assert "produced no valid action" in failed["error"], failed
    assert "unusable answer after a re-ask" in failed["error"], failed
    assert failed_stats["repairs"] == 1 and failed_stats["invalid_outputs"] == 2


# --- 3. A worker killed while the judge works ---------------------------------------------


async def test_worker_killed_during_evaluation_restarts_the_episode(
    env: dict[str, str], tmp_path: Path, fake_llm: FakeLLM
) -> None:
    """SIGKILL while the judge works: another worker takes the episode over, keeps its turns
    (asking no agent again) and completes it."""
    fake_llm.add_rule(Rule(kind="judge", delay=2.0, times=None))
    scenario, agents = await make_world("faults-judge")
    with api_process(env, tmp_path / "api.log", "--no-worker") as api:
        episode_id = await start(api.url, start_input(scenario, agents, fake_llm.model_name()))
        with worker_process(env, tmp_path / "w1.log") as doomed:
            await wait_for(api.url, episode_id, lambda e: e["status"] == "EVALUATING")
            await until(lambda: bool(fake_llm.requests_of("judge")), 30, "a judge request")
            doomed.kill()
        assert (await episode(api.url, episode_id))["status"] == "EVALUATING"
        with worker_process(env, tmp_path / "w2.log"):
            done = await wait_for(api.url, episode_id, terminal, timeout=60)
    assert done["status"] == "COMPLETED" and done["attempt"] == 2, done
    history = [(h["status"], h["attempt"]) for h in done["statusHistory"]]
    assert history == [
        ("QUEUED", 0),
        ("RUNNING", 1),
        ("EVALUATING", 1),
        ("RUNNING", 2),
        ("EVALUATING", 2),
        ("COMPLETED", 2),
    ]
    assert len(done["turns"]) == 3 and len(done["rewards"]) == 2
    assert all(r["dimensions"] for r in done["rewards"])
    resumed = done["statusHistory"][3]
    assert resumed["resumedFromTurn"] == 3 and "stopped renewing its lease" in resumed["reason"]
    # the turns were not asked for again
    assert len(fake_llm.requests_of("action", mentioning="faults-judge")) == 3


async def test_an_episode_that_moves_on_between_worker_kills_outlives_the_cap(
    env: dict[str, str], tmp_path: Path, fake_llm: FakeLLM
) -> None:
    """Four workers SIGKILLed in a row, one more than the cap (3), each after storing a turn:
    losses with progress do not count, so the episode finishes, no turn asked for twice."""
    fake_llm.add_rule(Rule(kind="action", contains=["faults-busy"], delay=0.4, times=None))
    scenario, agents = await make_world("faults-busy")
    with api_process(env, tmp_path / "api.log", "--no-worker") as api:
        episode_id = await start(
            api.url, start_input(scenario, agents, fake_llm.model_name(), maxTurns=12)
        )
        stored = 0
        for kill in range(4):
            with worker_process(env, tmp_path / f"w{kill}.log") as doomed:
                found = await wait_for(
                    api.url, episode_id, lambda e, n=stored: len(e["turns"]) > n, timeout=60
                )
                doomed.kill()
            stored = len((await episode(api.url, episode_id))["turns"])
            assert stored < 12 and found["attempt"] == kill + 1, found
        with worker_process(env, tmp_path / "last.log"):
            done = await wait_for(api.url, episode_id, terminal, timeout=90)
    assert done["status"] == "COMPLETED" and done["attempt"] == 5, done
    starts = [c for c in done["statusHistory"] if c["status"] == "RUNNING"]
    assert all("stopped renewing its lease" in c["reason"] for c in starts[1:]), starts
    assert [t["turn"] for t in done["turns"]] == list(range(12))  # each turn once
    assert len(fake_llm.requests_of("action", mentioning="faults-busy")) >= 12


# --- 4. A backlog of 10,000 queued episodes -----------------------------------------------


async def test_backlog_of_ten_thousand_drops_nothing(
    own_redis: OwnRedis, tmp_path: Path, fake_llm: FakeLLM
) -> None:
    """10,000 queued (no worker), one more still starts; all are kept, then all cancelled."""
    tag = "faults-backlog"
    scenario, agents = await make_world(tag)
    env = parley_env(own_redis.url, tmp_path / "data", seed="false")
    queue = JobQueue(own_redis.client)
    variables = start_input(scenario, agents, fake_llm.model_name(), tag=tag)
    created: list[str] = []
    with api_process(env, tmp_path / "api.log", "--no-worker") as api:
        before, _ = await queue.depth()
        batches = [post(api.url, START_MANY, {"inputs": [variables] * 1000}) for _ in range(10)]
        for reply in await asyncio.gather(*batches):
            payload = reply["startSimulations"]
            assert payload["userErrors"] == [], payload
            assert {e["status"] for e in payload["episodes"]} == {"QUEUED"}
            created += [e["id"] for e in payload["episodes"]]
        created.append(await start(api.url, variables))  # one more still goes through
        length, pending = await queue.depth()
        counted = await post(api.url, COUNT, {"tag": tag, "status": "QUEUED"})
        last = await episode(api.url, created[-1])

        store = EpisodeStore(own_redis.client)
        for offset in range(0, len(created), 500):
            results = await asyncio.gather(
                *(
                    store.transition(pk, EpisodeStatus.CANCELLED, reason="cancelled")
                    for pk in created[offset : offset + 500]
                )
            )
            assert all(r.ok for r in results)
        left = await post(api.url, COUNT, {"tag": tag, "status": "QUEUED"})
        cancelled = await post(api.url, COUNT, {"tag": tag, "status": "CANCELLED"})

    assert len(set(created)) == 10_001
    assert length - before == 10_001 and pending == 0
    assert counted["episodes"]["totalCount"] == 10_001
    assert last["status"] == "QUEUED"
    assert left["episodes"]["totalCount"] == 0
    assert cancelled["episodes"]["totalCount"] == 10_001
