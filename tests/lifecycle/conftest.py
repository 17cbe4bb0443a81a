"""The services a worker is handed, over the test Redis, with a job stream of each test's own."""

import asyncio
import dataclasses
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as redis

from bench.support.fake_llm import FakeLLM, Rule
from parley.engine.llm import ModelRegistry
from parley.lifecycle.follow import EventHub
from parley.lifecycle.services import Services
from parley.lifecycle.worker import Worker, WorkerConfig
from parley.storage.episode_store import EpisodeStore
from parley.storage.events_log import EventsLog
from parley.storage.jobs import JobQueue
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
async def services(redis_client: redis.Redis, tmp_path: Path) -> AsyncIterator[Services]:
    name = f"test:jobs:{uuid.uuid4().hex}"
    jobs = JobQueue(redis_client, stream=name, group=f"{name}:workers")
    await jobs.ensure_group()
    registry = ModelRegistry(None, tmp_path, retry=FAST_RETRY)
    yield Services(
        redis_client,
        EpisodeStore(redis_client, jobs=name),
        jobs,
        EventHub(redis_client),
        EventsLog(redis_client),
        registry,
    )
    await registry.aclose()
    await redis_client.delete(name)


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
