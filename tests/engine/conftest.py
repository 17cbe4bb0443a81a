"""Engine fixtures: the fake LLM server and a registry with fast retries."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bench.support.fake_llm import FakeLLM
from parley.engine.llm import ModelRegistry, RetryPolicy

FAST_RETRY = RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.05, budget_seconds=10)


@pytest.fixture
def models_file(tmp_path: Path, fake_llm: FakeLLM) -> Path:
    """Named models pointing at the fake: a short timeout, a per-dimension judge with text
    actions, a whole-episode judge with text actions and extra sampling settings, the same with
    a judge timeout shorter than its turns', no schema."""
    path = tmp_path / "models.json"
    base = fake_llm.base_url  # in the test's scope
    path.write_text(
        json.dumps(
            {
                "models": [
                    {"name": "fake-quick", "base_url": base, "model": "fake", "timeout": 0.5},
                    {
                        "name": "fake-small",
                        "base_url": base,
                        "model": "fake",
                        "text_actions": True,
                        "judge_mode": "per_dimension",
                        "max_concurrency": 2,
                    },
                    {
                        "name": "fake-tiny",
                        "base_url": base,
                        "model": "fake",
                        "text_actions": True,
                        "judge_mode": "per_episode",
                        "extra_body": {"dry_multiplier": 0.8},
                    },
                    {
                        "name": "fake-slow-judge",
                        "base_url": base,
                        "model": "fake",
                        "text_actions": True,
                        "judge_mode": "per_episode",
                        "timeout": 5.0,
                        "judge_timeout": 0.3,
                    },
                    {
                        "name": "fake-noschema",
                        "base_url": base,
                        "model": "fake",
                        "json_schema": False,
                    },
                ]
            }
        )
    )
    return path


@pytest.fixture
async def registry(tmp_path: Path, models_file: Path) -> AsyncIterator[ModelRegistry]:
    reg = ModelRegistry(models_file, tmp_path / "data", retry=FAST_RETRY)
    yield reg
    await reg.aclose()
