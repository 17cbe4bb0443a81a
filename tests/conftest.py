"""Shared fixtures: one real Redis (embedded, or PARLEY_TEST_REDIS_URL) and one real uvicorn."""

import asyncio
import json
import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio as redis
import uvicorn

from graph.app import create_app
from graph.settings import Settings
from storage.connection import open_client, prepare
from storage.embedded import EmbeddedRedis, free_port
from tests.fake_llm import FakeLLM


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


@pytest.fixture(scope="session")
async def api_url(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    """A real uvicorn serving the app on a free loopback port."""
    settings = Settings(
        redis_url=redis_url, data_dir=tmp_path_factory.mktemp("data"), seed=False, worker=False
    )
    port = free_port()
    config = uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    await task


class GraphQLClient:
    """Posts GraphQL over real HTTP and checks the transport-level outcome."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http

    async def post(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        # ASCII-escaped JSON, so any Python string (a lone surrogate too) reaches the server.
        payload = json.dumps({"query": query, "variables": variables})
        response = await self.http.post(
            "/graphql", content=payload, headers={"content-type": "application/json"}
        )
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        assert "Traceback" not in response.text
        return body

    async def data(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        body = await self.post(query, variables)
        assert "errors" not in body, body["errors"]
        result: dict[str, Any] = body["data"]
        return result

    async def errors(self, query: str, variables: dict[str, Any] | None = None) -> list[str]:
        """Messages of a request that must fail with GraphQL errors (never masked crashes)."""
        body = await self.post(query, variables)
        messages = [e["message"] for e in body.get("errors", [])]
        assert messages, body
        assert "Unexpected error." not in messages, body
        return messages


@pytest.fixture
async def gql(api_url: str) -> AsyncIterator[GraphQLClient]:
    async with httpx.AsyncClient(base_url=api_url, timeout=30) as http:
        yield GraphQLClient(http)


async def snapshot(client: redis.Redis) -> dict[str, str]:
    """Every key and its value, to prove a refused request wrote nothing."""
    state: dict[str, str] = {}
    async for key in client.scan_iter(count=1000):
        kind = await client.type(key)
        if kind == "ReJSON-RL":
            value: Any = await client.json().get(key)
        elif kind == "string":
            value = await client.get(key)
        elif kind == "hash":
            value = await client.hgetall(key)
        else:
            value = kind
        state[key] = json.dumps(value, sort_keys=True, default=str)
    return state


@pytest.fixture
def unchanged(redis_client: redis.Redis) -> Any:
    """`async with unchanged():` fails if the database differs afterwards."""

    @asynccontextmanager
    async def check() -> AsyncIterator[None]:
        before = await snapshot(redis_client)
        yield
        assert await snapshot(redis_client) == before

    return check


@pytest.fixture(scope="session")
def fake_llm_server() -> Iterator[FakeLLM]:
    with FakeLLM() as fake:
        yield fake


@pytest.fixture
def fake_llm(fake_llm_server: FakeLLM) -> Iterator[FakeLLM]:
    """The shared fake server with no rules, no recorded requests and no delay."""
    fake_llm_server.reset()
    fake_llm_server.delay = 0.0
    yield fake_llm_server
    fake_llm_server.reset()


def repo_root() -> Path:
    return Path(__file__).resolve().parent.parent
