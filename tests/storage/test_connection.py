"""Start-up on stored data it cannot index: `parley serve` and `parley worker` start (with a
warning), where they stopped with "Schema is limited to 1024 fields".

Each test puts a Redis of its own in that state by hand, as a client writing Sotopia's records
directly (or an older Parley) would, then starts real processes on it.
"""

import asyncio
import shutil
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio as redis
from redis.exceptions import ResponseError

from bench.support.fake_llm import FakeLLM
from bench.support.polling import eventually
from bench.support.processes import Process, api_process, parley_env, worker_process
from bench.support.simulation import CREATE_DIMENSION_LIST
from parley.storage import keys
from parley.storage.connection import IndexesRebuilding, open_client
from parley.storage.embedded import EmbeddedRedis
from parley.storage.models import CustomEvaluationDimension, CustomEvaluationDimensionList, Record
from parley.storage.outages import is_outage
from parley.storage.results_index import (
    FIELD_LIMIT,
    MAX_DIMENSIONS,
    SEATS,
    STANDARD,
    TAGS,
    ResultsIndex,
)
from tests.support.server import GraphQLClient
from tests.support.spare_redis import spare_redis
from tests.support.world import start_episode

RESULTS = "{ episodeResults(groupBy: [MODEL]) { groups { model scored } } }"
WARNING = "stored dimension names have no results"


@pytest.fixture
async def spare(tmp_path: Path) -> AsyncIterator[tuple[str, redis.Redis]]:
    async with spare_redis(tmp_path / "redis") as found:
        yield found


async def write_lists(client: redis.Redis, count: int, prefix: str) -> None:
    """`count` lists of one dimension each, every name new, written straight to Redis."""
    async with client.pipeline(transaction=False) as pipe:
        for n in range(count):
            dimension = CustomEvaluationDimension(
                pk=f"{prefix}-d{n}", name=f"{prefix} {n}", range_low=0, range_high=10
            )
            listed = CustomEvaluationDimensionList(
                pk=f"{prefix}-l{n}", name=f"{prefix} list {n}", dimension_pks=[dimension.pk]
            )
            records: list[Record] = [dimension, listed]
            for record in records:
                key = type(record).make_primary_key(str(record.pk))
                pipe.json().set(key, "$", record.model_dump(mode="json"))
        await pipe.execute()


async def started_worker(worker: Process, timeout: float = 30) -> str:
    """The worker's log once it says it started."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = worker.output()
        if "worker started" in text:
            return text
        assert worker.popen.poll() is None, text
        await asyncio.sleep(0.1)
    raise AssertionError(f"the worker did not start:\n{worker.output()}")


async def test_serve_and_worker_start_on_lists_written_past_the_cap(
    spare: tuple[str, redis.Redis], tmp_path: Path
) -> None:
    url, client = spare
    await write_lists(client, MAX_DIMENSIONS + 200, "by-hand")
    broken = CustomEvaluationDimension.make_primary_key("no-name")  # fails the model
    await client.json().set(broken, "$", {"pk": "no-name", "range_low": "low"})
    env = parley_env(url, tmp_path / "data")
    with api_process(env, tmp_path / "api.log", "--no-worker") as api:
        async with httpx.AsyncClient(base_url=api.url, timeout=60) as http:
            data = await GraphQLClient(http).data(RESULTS)
        with worker_process(env, tmp_path / "worker.log") as worker:
            worker_log = await started_worker(worker)
        api_log = api.output()
    assert data == {"episodeResults": {"groups": []}}
    assert f"200 {WARNING}" in api_log, api_log
    assert "Traceback" not in api_log and "Traceback" not in worker_log
    assert await client.scard(keys.INDEXED_DIMENSIONS) == MAX_DIMENSIONS


async def test_serve_starts_on_indexes_an_older_version_filled(
    spare: tuple[str, redis.Redis], tmp_path: Path
) -> None:
    """Indexes with as many score fields as RediSearch allows, and more lists stored: the service
    starts and serves, and a list of new names is refused as past the cap."""
    url, client = spare
    room = (FIELD_LIMIT - len(TAGS)) // len(SEATS) - 1 - len(STANDARD)
    await ResultsIndex(client).ensure_dimensions([f"older {n}" for n in range(room)])
    await write_lists(client, 100, "later")
    env = parley_env(url, tmp_path / "data", worker="false")
    with api_process(env, tmp_path / "api.log") as api:
        async with httpx.AsyncClient(base_url=api.url, timeout=60) as http:
            gql = GraphQLClient(http)
            data = await gql.data(RESULTS)
            dimensions = [{"name": "brand new", "rangeLow": 0, "rangeHigh": 1}]
            input = {"name": "one more", "dimensions": dimensions}
            created = (await gql.data(CREATE_DIMENSION_LIST, {"input": input}))[
                "createEvaluationDimensionList"
            ]
        api_log = api.output()
    assert data == {"episodeResults": {"groups": []}}
    assert f"100 {WARNING}" in api_log, api_log
    assert created["evaluationDimensionList"] is None
    assert [e["code"] for e in created["userErrors"]] == ["INVALID"]


LISTS = """
{ agents { totalCount } scenarios { totalCount } relationships { totalCount }
  episodes { totalCount } experiments { totalCount } episodeResults { groups { scored } } }"""
EMPTY = {
    "agents": {"totalCount": 0},
    "scenarios": {"totalCount": 0},
    "relationships": {"totalCount": 0},
    "episodes": {"totalCount": 0},
    "experiments": {"totalCount": 0},
    "episodeResults": {"groups": []},
}
EPISODE_STATUS = "query($id: ID!) { episode(id: $id) { status } }"


async def restarted_empty(server: EmbeddedRedis) -> None:
    """The server stopped, its data files removed, and started again on its port: a Redis
    restarted without persistence."""
    await server.stop()
    shutil.rmtree(server.data_dir / "appendonlydir")
    (server.data_dir / "dump.rdb").unlink(missing_ok=True)
    await server.start()


@pytest.mark.parametrize("how", ["flushed", "restarted empty"])
async def test_a_redis_that_comes_back_empty_is_served_and_runs_starts(
    tmp_path: Path, fake_llm: FakeLLM, how: str
) -> None:
    """A Redis restarted without persistence, or flushed by another writer (FLUSHALL), under a
    running `parley serve`: its indexes and the job stream's consumer group are gone with the
    data. Every list and episodeResults answered INTERNAL ("no such index") until the process
    was restarted, and the worker logged NOGROUP each second while a start, accepted as QUEUED,
    never ran."""
    server = EmbeddedRedis(tmp_path / "redis")
    url = await server.start()
    client = open_client(url)
    env = parley_env(url, tmp_path / "data")
    try:
        with api_process(env, tmp_path / "api.log") as api:
            async with httpx.AsyncClient(base_url=api.url, timeout=60) as http:
                status = await served_after_lost(
                    GraphQLClient(http),
                    fake_llm,
                    client.flushall if how == "flushed" else partial(restarted_empty, server),
                )
    finally:
        await client.aclose()
        await server.stop()
    assert status == "COMPLETED"


async def served_after_lost(
    gql: GraphQLClient, fake_llm: FakeLLM, lose: Callable[[], Awaitable[Any]]
) -> str:
    """Lists answered after `lose` empties Redis, and the status a start then reaches."""
    await gql.data(LISTS)
    await lose()
    assert await gql.data(LISTS) == EMPTY
    episode_id = await start_episode(gql, fake_llm.model_name(), "Empty")
    read = partial(gql.data, EPISODE_STATUS, {"id": episode_id})
    finished = ("COMPLETED", "FAILED")
    found = await eventually(read, lambda d: d["episode"]["status"] in finished, timeout=30)
    status: str = found["episode"]["status"]
    return status


def test_a_lost_index_is_unavailable_not_internal() -> None:
    """What a search answers when its index cannot be made again at once (the rebuild takes
    longer than REBUILD_WAIT, or fails): UNAVAILABLE with a retry hint, in Redis's own words
    for each command that reports it."""
    for error in (
        ResponseError("parley:AgentProfile:index: no such index"),
        ResponseError(
            "Command # 1 (FT.SEARCH parley:AgentProfile:index *) of pipeline caused error: "
            "('parley:AgentProfile:index: no such index',)"
        ),
        ResponseError("Unknown Index name"),
        IndexesRebuilding("being made"),
    ):
        assert is_outage(error), error
    assert not is_outage(ResponseError("Syntax error at offset 1 near |"))
