"""The real embedded model end to end (slow: starts llama.cpp with Gemma 3 270M)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from engine.episode import simulate
from engine.episode_log import episode_log_parts
from engine.judge import evaluate
from engine.llm import ModelRegistry
from engine.models import LOCAL_MODEL
from engine.types import SOTOPIA_DIMENSIONS
from tests.support.factories import make_setup


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
