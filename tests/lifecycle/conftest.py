"""The services a worker is handed, over the test Redis, with a job stream of each test's own."""

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import redis.asyncio as redis

from engine.llm import ModelRegistry
from lifecycle.follow import EventHub
from lifecycle.jobs import JobQueue
from lifecycle.services import Services
from lifecycle.transitions import EpisodeStore, EventsLog
from tests.engine.conftest import FAST_RETRY


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
