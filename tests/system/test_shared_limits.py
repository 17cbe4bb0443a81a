"""Provider limits shared by every Parley process: workers on one API key stay within it
together, and a 429 one process sees holds the others."""

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio as redis

from bench.support.fake_llm import FakeLLM, RateLimit, Rule
from bench.support.polling import eventually
from bench.support.processes import api_process, parley_env, worker_process
from bench.support.simulation import make_world, start, start_input, wait_for
from parley.engine.errors import LLMTransportError
from parley.engine.llm import ChatRequest, ModelRegistry, RetryPolicy
from parley.engine.stats import GenerationStats
from parley.storage.provider_limits import RedisAllowance
from tests.support.server import CANCEL, graphql

KEY_ENV = "FAKE_PROVIDER_KEY"
WINDOW, PER_WINDOW = 6.0, 12
"""The fake's limit: 12 requests of one key in any 6 s, 120 a minute."""
TERMINAL = ("COMPLETED", "FAILED")


def models_file(path: Path, fake: FakeLLM, **limits: int | str) -> Path:
    entry = {"name": "limited", "base_url": fake.base_url, "model": "fake", "api_key_env": KEY_ENV}
    path.write_text(json.dumps({"models": [{**entry, **limits}]}))
    return path


@pytest.fixture
def limited_fake(own_fake_llm: FakeLLM) -> FakeLLM:
    own_fake_llm.limit = RateLimit(per_minute=PER_WINDOW, window=WINDOW)
    own_fake_llm.delay = 0.05
    return own_fake_llm


def process_env(redis_url: str, tmp_path: Path, models: Path) -> dict[str, str]:
    env = parley_env(
        redis_url, tmp_path / "data", seed="false", models_file=str(models), lease_seconds="5"
    )
    return {**env, KEY_ENV: "sk-the-secret"}


async def new_episode(url: str, tag: str) -> str:
    scenario, agents = await make_world(tag)
    return await start(url, start_input(scenario, agents, "limited"))


async def metrics(url: str) -> dict[str, Any]:
    async with httpx.AsyncClient() as http:
        found: dict[str, Any] = (await http.get(f"{url}/metrics")).json()
        return found


async def test_workers_on_one_key_stay_within_its_shared_limit(
    redis_url: str, redis_client: redis.Redis, tmp_path: Path, limited_fake: FakeLLM
) -> None:
    models = models_file(tmp_path / "models.json", limited_fake, requests_per_minute=110)
    env = process_env(redis_url, tmp_path, models)
    with (
        api_process(env, tmp_path / "api.log", "--no-worker") as api,
        worker_process(env, tmp_path / "w1.log"),
        worker_process(env, tmp_path / "w2.log"),
        worker_process(env, tmp_path / "w3.log"),
    ):
        started = [await new_episode(api.url, f"shared{i}") for i in range(6)]
        for episode_id in started:
            done = await wait_for(api.url, episode_id, lambda e: e["status"] in TERMINAL, 120)
            assert done["status"] == "COMPLETED"
        [limit] = (await metrics(api.url))["provider_limits"]
        seconds, _ = await redis_client.time()
    served = len(limited_fake.requests)
    assert served > 2 * PER_WINDOW  # longer than a window of the fake's: a steady state
    assert limited_fake.rejected == 0
    assert limit["limits"]["key"] == f"{limited_fake.base_url} {KEY_ENV}"
    assert limit["models"] == ["limited"] and limit["rate_limited"] == 0
    assert limit["limits"]["requests_per_minute"] == 110
    assert limit["requests_this_minute"] <= served
    if seconds % 60 >= 10:  # the last episode's calls were within the server's current minute
        assert limit["requests_this_minute"] > 0


async def test_workers_on_one_key_without_a_shared_limit_are_refused(
    redis_url: str, redis_client: redis.Redis, tmp_path: Path, limited_fake: FakeLLM
) -> None:
    env = process_env(redis_url, tmp_path, models_file(tmp_path / "models.json", limited_fake))
    with (
        api_process(env, tmp_path / "api.log", "--no-worker") as api,
        worker_process(env, tmp_path / "w1.log"),
        worker_process(env, tmp_path / "w2.log"),
        worker_process(env, tmp_path / "w3.log"),
    ):
        started = [await new_episode(api.url, f"alone{i}") for i in range(4)]

        async def rejected() -> int:
            return limited_fake.rejected

        await eventually(rejected, lambda n: n > 0, timeout=60)
        assert (await metrics(api.url))["provider_limits"] == []  # nothing stated, nothing kept
        for episode_id in started:  # else the next test's workers take them over
            await graphql(api.url, CANCEL, {"id": episode_id})


async def test_a_429_one_process_sees_holds_another_process(
    redis_url: str, redis_client: redis.Redis, tmp_path: Path, own_fake_llm: FakeLLM
) -> None:
    hold = 5.0
    models = models_file(
        tmp_path / "models.json",
        own_fake_llm,
        requests_per_minute=6000,
        limit_key=f"test {uuid.uuid4().hex}",
    )
    own_fake_llm.add_rule(Rule(status=429, retry_after=hold))
    allowance = RedisAllowance(redis_client)
    here = ModelRegistry(models, tmp_path, RetryPolicy(max_attempts=1), allowance=allowance)
    request = ChatRequest(messages=[{"role": "user", "content": "Hello."}], max_tokens=8)
    env_key = {KEY_ENV: "sk-the-secret"}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(KEY_ENV, "sk-the-secret")
        with pytest.raises(LLMTransportError):
            await here.complete("limited", request, GenerationStats())
    await here.aclose()
    refused_at = own_fake_llm.requests[0].received
    helper = [sys.executable, "-m", "tests.support.allowance_client"]
    other = await asyncio.to_thread(
        subprocess.run,
        [*helper, "call", redis_url, str(models), "limited"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env_key},
    )
    assert other.returncode == 0, other.stderr
    waited = json.loads(other.stdout)
    second = own_fake_llm.requests[1]
    assert second.status == 200
    assert second.received >= refused_at + hold - 0.2  # sent only once the hold ended
    assert waited > 0.5  # it waited for the hold, rather than starting late
    assert time.time() >= refused_at + hold - 0.2
    [usage] = await ModelRegistry(models, tmp_path, allowance=allowance).limit_usage()
    assert usage.rate_limited == 1
