"""Workers for the lifecycle tests: their settings, a run until nothing is left, a slow judge."""

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bench.support.fake_llm import FakeLLM, Rule
from parley.engine.llm import ModelRegistry
from parley.lifecycle.services import Services
from parley.lifecycle.worker import Worker, WorkerConfig
from tests.engine.conftest import FAST_RETRY

SLOW_JUDGE = "slow-judge"
"""A model of the fake whose judge requests time out after 0.3 s (see `slow_judge`)."""
BURST_TIMEOUT = 60


def worker_config(**overrides: Any) -> WorkerConfig:
    """A worker's settings for a test: it takes a dead worker's jobs over after a second and
    polls every 50 ms (`overrides` change them)."""
    values: dict[str, Any] = {"lease_seconds": 1.0, "poll_seconds": 0.05, "consumer": "alive"}
    return WorkerConfig(**{**values, **overrides})


async def burst(services: Services, **overrides: Any) -> Worker:
    """A worker (`worker_config`) run until nothing is left to take."""
    worker = Worker(services, worker_config(**overrides))
    await asyncio.wait_for(worker.run(burst=True), BURST_TIMEOUT)
    return worker


@pytest.fixture
async def slow_judge(
    services: Services, fake_llm: FakeLLM, tmp_path: Path
) -> AsyncIterator[Services]:
    """The services, with SLOW_JUDGE known to their models; until `fake_llm.reset()`, every
    judge request to the fake hangs (so each try of SLOW_JUDGE's judge times out)."""
    models = tmp_path / "slow-judge.json"
    entry = {"name": SLOW_JUDGE, "base_url": fake_llm.base_url, "model": "fake"}
    models.write_text(json.dumps({"models": [{**entry, "judge_timeout": 0.3}]}))
    registry = ModelRegistry(models, tmp_path, retry=FAST_RETRY)
    fake_llm.add_rule(Rule(kind="judge", hang=True, times=None))
    yield dataclasses.replace(services, models=registry)
    await registry.aclose()
