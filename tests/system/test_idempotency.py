"""A retried start returns the same episodes whatever happened to the first request: the API is
SIGKILLed at each point of a start (lifecycle/failpoints.py) and the client retries."""

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio as redis

from bench.support.fake_llm import FakeLLM
from bench.support.processes import ApiProcess, api_process, parley_env
from bench.support.simulation import make_world, start_input
from parley.storage import keys
from parley.storage.models import EpisodeLog

START_MANY = """
mutation($inputs: [StartSimulationInput!]!) {
  startSimulations(inputs: $inputs) { episodes { id } userErrors { message } }
}"""
POINTS = ["start:before-write", "start:after-write", "start:before-answer"]


async def start_batch(base_url: str, inputs: list[dict[str, Any]]) -> list[str]:
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        response = await http.post(
            "/graphql", json={"query": START_MANY, "variables": {"inputs": inputs}}
        )
    payload = response.json()["data"]["startSimulations"]
    assert payload["userErrors"] == [], payload
    return [e["id"] for e in payload["episodes"]]


async def stored(tag: str) -> list[str]:
    return sorted(str(e.pk) for e in await EpisodeLog.find(EpisodeLog.tag == tag).all())


@pytest.mark.parametrize("point", POINTS)
async def test_a_batch_retried_after_a_crash_gives_the_same_episodes(
    point: str, redis_url: str, redis_client: redis.Redis, tmp_path: Path, fake_llm: FakeLLM
) -> None:
    tag = f"crash-{point.split(':')[1]}-{uuid.uuid4().hex[:6]}"
    scenario, agents = await make_world(tag)
    inputs = [
        start_input(scenario, agents, fake_llm.model_name(), tag=tag, idempotencyKey=f"{tag}-{i}")
        for i in range(5)
    ]
    env = parley_env(redis_url, tmp_path / "data", seed="false", worker="false")
    doomed = ApiProcess({**env, "PARLEY_FAILPOINT": point}, tmp_path / "doomed.log")
    try:
        with pytest.raises(httpx.HTTPError):  # the server dies at the point, answering nothing
            await start_batch(doomed.url, inputs)
        doomed.popen.wait(10)
        assert doomed.popen.returncode == -9
    finally:
        doomed.stop()
    written = await stored(tag)
    assert len(written) == (0 if point == "start:before-write" else 5)
    with api_process(env, tmp_path / "api.log") as api:
        first = await start_batch(api.url, inputs)
        again = await start_batch(api.url, inputs)
    assert first == again and len(set(first)) == 5
    assert await stored(tag) == sorted(first)  # one episode per key, whatever the crash point
    if written:
        assert sorted(first) == written  # the retry found what the crashed request wrote
    for i, pk in enumerate(first):
        assert await redis_client.get(keys.idempotency(f"{tag}-{i}")) == pk


async def test_a_key_left_naming_a_missing_episode_is_taken_over(
    redis_url: str, redis_client: redis.Redis, tmp_path: Path, fake_llm: FakeLLM
) -> None:
    tag = f"dangling-{uuid.uuid4().hex[:6]}"
    scenario, agents = await make_world(tag)
    key = f"{tag}-key"
    await redis_client.set(keys.idempotency(key), "01NOSUCHEPISODE000000000000")
    one = start_input(scenario, agents, fake_llm.model_name(), tag=tag, idempotencyKey=key)
    env = parley_env(redis_url, tmp_path / "data", seed="false", worker="false")
    with api_process(env, tmp_path / "api.log") as api:
        ids = [(await start_batch(api.url, [one]))[0] for _ in range(3)]
    assert len(set(ids)) == 1
    assert await stored(tag) == ids[:1]
    assert await redis_client.get(keys.idempotency(key)) == ids[0]
