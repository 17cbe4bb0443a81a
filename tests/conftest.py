"""Shared fixtures: one real Redis (embedded, or PARLEY_TEST_REDIS_URL) and one real uvicorn."""

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio as redis

from bench.support.fake_llm import FakeLLM
from parley.engine.llm import ModelRegistry
from parley.lifecycle.follow import EventHub
from parley.lifecycle.services import Services
from parley.storage.connection import open_client, prepare
from parley.storage.embedded import EmbeddedRedis
from parley.storage.episode_store import EpisodeStore
from parley.storage.events_log import EventsLog
from parley.storage.jobs import JobQueue
from parley.storage.models import UNFINISHED, EpisodeLog, EpisodeStatus
from tests.engine.conftest import FAST_RETRY
from tests.support.database import unchanged as unchanged_database
from tests.support.server import GraphQLClient, serve


@pytest.fixture(scope="session")
async def redis_url(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    url = os.environ.get("PARLEY_TEST_REDIS_URL")
    if url:
        yield url
        return
    server = EmbeddedRedis(tmp_path_factory.mktemp("redis"))
    yield await server.start()
    await server.stop()


@pytest.fixture(scope="session")
async def redis_client(redis_url: str) -> AsyncIterator[redis.Redis]:
    client = open_client(redis_url)
    await prepare(client)
    yield client
    await client.aclose()


@pytest.fixture(scope="module", autouse=True)
async def leaves_no_work(redis_client: redis.Redis) -> AsyncIterator[None]:
    """Episodes a test module leaves unfinished (a seat nobody answered, a worker stopped mid-run)
    are cancelled after it, so no later module's worker takes them up and asks its LLM."""
    yield
    store = EpisodeStore(redis_client)
    open_statuses = [status.value for status in UNFINISHED]
    unfinished = await EpisodeLog.find(EpisodeLog.status << open_statuses).all()  # type: ignore[operator]
    for episode in unfinished:
        await store.transition(str(episode.pk), EpisodeStatus.CANCELLED, reason="test ended")


@pytest.fixture(scope="session")
async def api_url(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    """A real uvicorn serving the app (no worker, no sample data) on a free loopback port."""
    async with serve(redis_url, tmp_path_factory.mktemp("data")) as url:
        yield url


@pytest.fixture
async def other_writer(redis_url: str) -> AsyncIterator[redis.Redis]:
    """A plain client, as Sotopia, another program or a person in redis-cli would be: its
    writes pass no Parley code."""
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    await client.aclose()


@pytest.fixture
async def gql(api_url: str) -> AsyncIterator[GraphQLClient]:
    async with httpx.AsyncClient(base_url=api_url, timeout=30) as http:
        yield GraphQLClient(http)


@pytest.fixture
def unchanged(redis_client: redis.Redis) -> Any:
    """`async with unchanged():` fails if the database differs afterwards."""

    return lambda: unchanged_database(redis_client)


@pytest.fixture(scope="session")
def fake_llm_server() -> Iterator[FakeLLM]:
    with FakeLLM() as fake:
        yield fake


@pytest.fixture
def own_fake_llm() -> Iterator[FakeLLM]:
    """A fake server of the test's own, for a test that counts what reaches it (requests at once,
    their peak, a rate): the shared one may still be answering requests other modules left
    behind (a killed worker's, held by a long delay)."""
    with FakeLLM() as fake:
        yield fake


@pytest.fixture
def fake_llm(fake_llm_server: FakeLLM) -> Iterator[FakeLLM]:
    """The shared fake server with no rules, no recorded requests and no delay, in a scope of
    the test's own: what an earlier test sent just before it ended reaches neither its rules nor
    its record."""
    fake_llm_server.begin_scope()
    fake_llm_server.reset()
    fake_llm_server.delay = 0.0
    yield fake_llm_server
    fake_llm_server.reset()
    fake_llm_server.end_scope()


@pytest.fixture
async def services(redis_client: redis.Redis, tmp_path: Path) -> AsyncIterator[Services]:
    """A worker's services over the test Redis, with a job stream of this test's own."""
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
