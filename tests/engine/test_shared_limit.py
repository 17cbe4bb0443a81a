"""The models file's provider limits, as the model registry keeps them over Redis."""

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as redis

from bench.support.fake_llm import FakeLLM
from parley.engine.errors import UnknownModelError
from parley.engine.llm import ChatRequest, ModelRegistry
from parley.engine.shared_limit import LimitUsage, ProviderLimits, SharedLimit, default_key
from parley.engine.stats import GenerationStats
from parley.storage.provider_limits import RedisAllowance
from tests.support.spare_redis import spare_redis

REQUEST = ChatRequest(messages=[{"role": "user", "content": "Hello."}], max_tokens=8)


def write(path: Path, *entries: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"models": list(entries)}))
    return path


def entry(name: str, base_url: str = "http://h/v1", **fields: Any) -> dict[str, Any]:
    return {"name": name, "base_url": base_url, "model": "fake", **fields}


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("requests_per_minute", 0, "requests_per_minute must be a whole number, 1 or more, not 0"),
        ("tokens_per_minute", "90000", "tokens_per_minute must be a whole number, 1 or more"),
        ("max_in_flight", 2.5, "max_in_flight must be a whole number, 1 or more, not 2.5"),
        ("requests_per_minute", True, "requests_per_minute must be a whole number"),
        ("limit_key", "", "limit_key"),
    ],
)
def test_bad_limits_are_refused_saying_which_and_why(
    tmp_path: Path, field: str, value: Any, said: str
) -> None:
    path = write(tmp_path / "models.json", entry("lab", **{field: value}))
    with pytest.raises(UnknownModelError, match=rf"models\[0\] \(lab\)\.{field}: ") as refused:
        ModelRegistry(path, tmp_path)
    assert said in str(refused.value)


def test_entries_on_one_key_state_one_set_of_limits(tmp_path: Path) -> None:
    path = write(
        tmp_path / "models.json",
        entry("small", api_key_env="LAB_KEY", requests_per_minute=60),
        entry("large", api_key_env="LAB_KEY", requests_per_minute=120),
    )
    with pytest.raises(UnknownModelError, match="'small' and 'large' are counted under one"):
        ModelRegistry(path, tmp_path)


async def test_entries_on_one_key_share_its_allowance(
    tmp_path: Path, redis_client: redis.Redis
) -> None:
    path = write(
        tmp_path / "models.json",
        entry("small", api_key_env="LAB_KEY", requests_per_minute=60, limit_key="lab-shared"),
        entry("large", api_key_env="LAB_KEY", limit_key="lab-shared"),  # takes the key's
        entry("elsewhere", api_key_env="OTHER_KEY"),
    )
    registry = ModelRegistry(path, tmp_path, allowance=RedisAllowance(redis_client))
    [usage] = await registry.limit_usage()
    assert usage.models == ("small", "large")
    assert usage.limits.key == "lab-shared" and usage.limits.requests_per_minute == 60


async def commands(client: redis.Redis) -> int:
    """Commands the server has processed, this INFO not counted."""
    stats = await client.info("stats")
    return int(stats["total_commands_processed"])


async def test_no_limits_stated_costs_no_redis_command_per_call(
    tmp_path: Path, own_fake_llm: FakeLLM
) -> None:
    unlimited = write(tmp_path / "free.json", entry("free", own_fake_llm.base_url))
    limited = write(
        tmp_path / "kept.json", entry("kept", own_fake_llm.base_url, requests_per_minute=60000)
    )
    async with spare_redis(tmp_path / "redis") as (_, client):
        allowance = RedisAllowance(client)
        counts = []
        for path, name in ((unlimited, "free"), (limited, "kept")):
            registry = ModelRegistry(path, tmp_path, allowance=allowance)
            before = await commands(client)
            for _ in range(5):
                await registry.complete(name, REQUEST, GenerationStats())
            counts.append(await commands(client) - before - 1)
            await registry.aclose()
    assert counts[0] == 0
    assert counts[1] >= 5  # one admission a call at least: the count would show any


async def test_two_registries_share_the_places_in_flight(
    tmp_path: Path, own_fake_llm: FakeLLM, redis_client: redis.Redis
) -> None:
    own_fake_llm.delay = 0.1
    path = write(
        tmp_path / "models.json",
        entry("one-at-once", own_fake_llm.base_url, max_in_flight=1, limit_key=str(tmp_path)),
    )
    registries = [
        ModelRegistry(path, tmp_path, allowance=RedisAllowance(redis_client)) for _ in range(2)
    ]
    calls = [r.complete("one-at-once", REQUEST, GenerationStats()) for r in registries * 3]
    await asyncio.gather(*calls)
    for registry in registries:
        await registry.aclose()
    assert len(own_fake_llm.requests) == 6 and own_fake_llm.peak_in_flight == 1
    [usage] = await registries[0].limit_usage()
    assert usage.in_flight == 0 and usage.requests_this_minute <= 6


@pytest.mark.parametrize(
    ("base_url", "key"),
    [
        ("http://h:8000/v1/", "http://h:8000/v1 K"),
        ("https://user:secret@api.example/v1", "https://api.example/v1 K"),
        ("https://api.example/v1?api-key=secret#part", "https://api.example/v1 K"),
        ("http://[::1]:9/v1", "http://[::1]:9/v1 K"),
    ],
)
def test_the_default_key_names_the_endpoint_without_its_credentials(
    base_url: str, key: str
) -> None:
    assert default_key(base_url, "K") == key
    assert "secret" not in default_key(base_url, None)


class Charges:
    """An allowance that records what it was charged and lets every call go."""

    def __init__(self) -> None:
        self.admitted: list[int] = []
        self.refunded: list[int] = []

    async def admit(self, limits: ProviderLimits, tokens: int) -> float:
        self.admitted.append(tokens)
        return 0.0

    async def enter(self, limits: ProviderLimits, lease: str, seconds: float) -> bool:
        return True

    async def leave(self, limits: ProviderLimits, lease: str | None, refund: int) -> None:
        self.refunded.append(refund)

    async def penalize(self, limits: ProviderLimits, hold: float, rejected: bool) -> None:
        raise AssertionError("no 429 here")

    async def usage(self, limits: ProviderLimits) -> LimitUsage:
        raise AssertionError("not asked")


async def test_a_request_larger_than_a_minutes_tokens_is_charged_a_minute() -> None:
    allowance = Charges()
    shared = SharedLimit(ProviderLimits("k", tokens_per_minute=1000), allowance)
    await shared.admit(5000)
    async with shared.in_flight(5000, timeout=1.0) as charge:
        charge.used = 400
    await shared.admit(300)
    async with shared.in_flight(300, timeout=1.0) as charge:
        charge.used = 200
    assert allowance.admitted == [1000, 300]
    assert allowance.refunded == [600, 100]
    unlimited = SharedLimit(ProviderLimits("k", requests_per_minute=5), allowance)
    await unlimited.admit(5000)
    assert allowance.admitted[-1] == 5000
