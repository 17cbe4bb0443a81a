"""The real embedded model end to end (slow: starts llama.cpp with Gemma 3 270M)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from bench.support.factories import make_setup
from parley.engine.episode import play, simulate
from parley.engine.episode_log import episode_log_parts
from parley.engine.judge import evaluate
from parley.engine.llm import ModelRegistry, RetryPolicy
from parley.engine.local_model import SLOTS
from parley.engine.models import LOCAL_MODEL
from parley.engine.types import SOTOPIA_DIMENSIONS


@pytest.mark.slow
async def test_real_local_model_episode(tmp_path_factory: pytest.TempPathFactory) -> None:
    data_dir = Path(tmp_path_factory.mktemp("local-model"))
    registry = ModelRegistry(None, data_dir)
    try:
        urls = await asyncio.gather(*(registry.local.ensure_started() for _ in range(3)))
        assert len(set(urls)) == 1  # concurrent first uses start one server
        setup = make_setup(LOCAL_MODEL, max_turns=2, seed=1)
        transcript = await simulate(setup, registry)
        evaluation = await evaluate(setup, transcript, registry)
        log = episode_log_parts(transcript, evaluation)
        pid = registry.local.pid
        assert pid is not None
        assert registry.local.base_url == urls[0]
    finally:
        await registry.aclose()
    assert registry.local.pid is None
    assert transcript.turns == 2
    spoken = [r for r in transcript.actions if r.action_type == "speak"]
    assert spoken and all(a.argument.strip() for a in spoken)
    assert all("<|im_end|>" not in a.argument and "<end_of_turn>" not in a.argument for a in spoken)
    assert log.messages[1][0][2].startswith("Turn #0: ")
    assert len(log.rewards) == 2
    for reward in log.rewards:
        assert not isinstance(reward, float)  # scored
        overall, detail = reward
        for dim in SOTOPIA_DIMENSIONS:
            assert dim.range_low <= detail[dim.name] <= dim.range_high
        assert detail["overall_score"] == overall
    assert (data_dir / "models" / "gemma-3-270m-q4_k_m.gguf").exists()
    assert (data_dir / "logs" / "local-model.log").exists()
    assert transcript.stats.requests >= 2
    # llama.cpp's server reports usage: counted as given, never estimated
    for stats in (transcript.stats, evaluation.stats):
        count = stats.usage[LOCAL_MODEL]
        assert count.prompt_tokens > 0 and count.completion_tokens > 0
        assert not count.estimated and count.estimated_tokens == 0
    # one request scores the whole episode; more only if its answer needed a re-ask or fallback
    assert evaluation.stats.requests >= 1
    assert evaluation.rewards_prompt.startswith("Scenario: ")


@pytest.fixture(scope="module")
async def local_registry(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[ModelRegistry]:
    """One embedded model server for the tests below, with a retry budget shorter than any
    wait for one of its slots: were waiting counted, a retried request would fail."""
    registry = ModelRegistry(
        None, Path(tmp_path_factory.mktemp("local-shared")), retry=RetryPolicy(budget_seconds=1.0)
    )
    await registry.local.ensure_started()
    yield registry
    await registry.aclose()


@pytest.mark.slow
async def test_more_episodes_than_slots_share_the_embedded_model_and_are_all_judged(
    local_registry: ModelRegistry,
) -> None:
    """Six one-turn episodes at once: their turns and judges queue for the four slots (at
    most four in flight) and each waits its turn; every one is played and judged."""
    setups = [make_setup(LOCAL_MODEL, max_turns=1, seed=k) for k in range(6)]
    played = await asyncio.gather(*(play(setup, local_registry) for setup in setups))
    [limit] = local_registry.limits().values()
    assert limit.limit == SLOTS and limit.in_flight == 0 and limit.overloads == 0
    assert all(p.transcript.turns == 1 for p in played)
    assert [p.unjudged for p in played] == [None] * 6
    assert all(p.stats.timeouts == 0 and p.stats.failures == 0 for p in played)


@pytest.mark.slow
async def test_the_embedded_server_frees_the_slot_of_a_request_its_client_gave_up(
    local_registry: ModelRegistry,
) -> None:
    """llama.cpp's server cancels a request whose connection closed, so a request that timed
    out soon holds none of the slots the limit hands out again. It looks at the connection when
    it has had nothing to hand out for a second, and each /slots answer is such a thing: asked
    every half second, it never looks (and the slot stays busy); here every two."""
    base = await local_registry.local.ensure_started()
    server = base.removesuffix("/v1")
    story = {
        "messages": [{"role": "user", "content": "Tell a very long story about a lighthouse."}],
        "max_tokens": 4000,
    }
    async with aiohttp.ClientSession() as http:
        with pytest.raises(TimeoutError):
            async with http.post(
                f"{base}/chat/completions", json=story, timeout=aiohttp.ClientTimeout(total=1)
            ) as response:
                await response.read()
        deadline = time.monotonic() + 60
        while True:
            async with http.get(f"{server}/slots") as response:
                slots = await response.json()
            if not any(slot["is_processing"] for slot in slots):
                break
            assert time.monotonic() < deadline, slots
            await asyncio.sleep(2)
    assert len(slots) == SLOTS
