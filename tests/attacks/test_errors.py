"""A Redis that refuses writes, and how errors are logged.

Redis refuses writes at `maxmemory` (OOM), as a read-only replica (READONLY) and after a failed
save (MISCONF): before, 38 of 72 starts at `maxmemory` answered INTERNAL. Every write path
(starts, mutations, imports) now answers UNAVAILABLE with a retry hint, as for a lost
connection, writes nothing, and works again once Redis takes writes. Each mode has a Redis of
its own and a real `parley serve`.

A refused argument (BAD_USER_INPUT) or a document that does not validate was logged at ERROR
with a traceback; now at INFO in one line, while a crash keeps ERROR and its traceback.
"""

import asyncio
import json
import logging
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio as redis

from bench.support.processes import api_process, parley_env
from bench.support.simulation import CREATE_DIMENSION_LIST
from parley.resolvers import agents
from parley.storage.embedded import free_port
from tests.support.server import CREATE_AGENT, CREATE_SCENARIO, GraphQLClient, create_agent
from tests.support.spare_redis import spare_redis

JSON_LINES = {"content-type": "application/x-ndjson"}

START = """
mutation($input: StartSimulationInput!) {
  startSimulation(input: $input) { episode { id status } userErrors { field message code } }
}"""
Refusal = Callable[[redis.Redis], Awaitable[Callable[[], Awaitable[None]]]]


async def out_of_memory(client: redis.Redis) -> Callable[[], Awaitable[None]]:
    await client.config_set("maxmemory", 1)

    async def restore() -> None:
        await client.config_set("maxmemory", 0)

    return restore


async def read_only(client: redis.Redis) -> Callable[[], Awaitable[None]]:
    """A replica of a master that is not there: it keeps its data and takes no writes."""
    await client.execute_command("REPLICAOF", "127.0.0.1", free_port())  # type: ignore[no-untyped-call]

    async def restore() -> None:
        await client.execute_command("REPLICAOF", "NO", "ONE")  # type: ignore[no-untyped-call]

    return restore


async def failed_save(client: redis.Redis) -> Callable[[], Awaitable[None]]:
    """A background save that cannot write its file (its directory is gone)."""
    directory = str((await client.config_get("dir"))["dir"])
    await client.config_set("save", "3600 1")
    await asyncio.to_thread(lambda: shutil.rmtree(directory))
    await client.bgsave()
    async with asyncio.timeout(10):
        while (await client.info("persistence"))["rdb_last_bgsave_status"] != "err":  # noqa: ASYNC110 - Redis has no event for it
            await asyncio.sleep(0.05)

    async def restore() -> None:
        await client.config_set("save", "")  # no save point: no refusal, and no save at exit

    return restore


MODES: dict[str, Refusal] = {
    "OOM": out_of_memory,
    "READONLY": read_only,
    "MISCONF": failed_save,
}


@asynccontextmanager
async def graphql(url: str) -> AsyncIterator[tuple[httpx.AsyncClient, GraphQLClient]]:
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        yield http, GraphQLClient(http)


def unavailable(body: dict[str, Any]) -> None:
    [error] = body["errors"]
    assert error["extensions"] == {
        "code": "UNAVAILABLE",
        "retryable": True,
        "retryAfterSeconds": 1,
    }, body
    assert error["message"].startswith("storage is unavailable (Redis: "), body


async def keys_and_values(client: redis.Redis) -> dict[str, str]:
    found = {}
    async for key in client.scan_iter(count=1000):
        kind = await client.type(key)
        value: Any = await client.json().get(key) if kind == "ReJSON-RL" else kind
        found[key] = json.dumps(value, sort_keys=True, default=str)
    return found


@pytest.mark.parametrize("mode", list(MODES))
async def test_writes_redis_refuses_are_unavailable_and_write_nothing(
    tmp_path: Path, mode: str
) -> None:
    async with spare_redis(tmp_path / "redis") as (url, client):
        env = parley_env(url, tmp_path / "data", worker="false")
        with api_process(env, tmp_path / "api.log") as api:
            async with graphql(api.url) as (http, gql):
                ids = [
                    (await create_agent(gql, firstName=name, lastName="Full"))["id"]
                    for name in ("Ada", "Bo")
                ]
                scenario = {"scenario": "Two meet.", "agentGoals": ["Greet", "Leave"]}
                created = await gql.data(CREATE_SCENARIO, {"input": scenario})
                start = {
                    "scenarioId": created["createScenario"]["scenario"]["id"],
                    "agentIds": ids,
                    "idempotencyKey": f"refused-{mode}",
                }
                new_list = {
                    "name": "Refused",
                    "dimensions": [{"name": "warmth", "rangeLow": 0, "rangeHigh": 10}],
                }
                line = json.dumps({"agent_id": "imported", "first_name": "I", "last_name": "M"})
                before = await keys_and_values(client)
                restore = await MODES[mode](client)
                try:
                    for _ in range(3):
                        unavailable(await gql.post(START, {"input": start}))
                    unavailable(
                        await gql.post(CREATE_AGENT, {"input": {"firstName": "C", "lastName": "D"}})
                    )
                    unavailable(await gql.post(CREATE_DIMENSION_LIST, {"input": new_list}))
                    imported = await http.post("/import", content=line + "\n", headers=JSON_LINES)
                    assert imported.status_code == 503, imported.text
                    assert imported.headers["retry-after"] == "1"
                    unavailable(imported.json())
                    assert await keys_and_values(client) == before
                finally:
                    await restore()
                retried = (await gql.data(START, {"input": start}))["startSimulation"]
                assert retried["userErrors"] == [] and retried["episode"]["status"] == "QUEUED"
                created = await gql.data(CREATE_DIMENSION_LIST, {"input": new_list})
                assert created["createEvaluationDimensionList"]["userErrors"] == []
                imported = await http.post("/import", content=line + "\n", headers=JSON_LINES)
                assert imported.json()["created"] == {"agents": 1}
            log = api.output()
        assert "Traceback" not in log, log


async def crash(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("a crash")


async def test_refused_input_is_logged_in_one_line_and_a_crash_with_its_traceback(
    gql: GraphQLClient, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    with caplog.at_level(logging.INFO, logger="strawberry.execution"):
        await gql.post('{ agents(after: "not a cursor") { totalCount } }')  # BAD_USER_INPUT
        await gql.post("{ agents { nope } }")  # does not validate
        await gql.post("{ ...Nope }")
    refused = [r for r in caplog.records if r.name == "strawberry.execution"]
    assert len(refused) == 3, refused
    for record in refused:
        assert record.levelno == logging.INFO and record.exc_info is None, record
    assert "malformed cursor" in refused[0].getMessage()
    caplog.clear()
    monkeypatch.setattr(agents, "get_agent", crash)
    with caplog.at_level(logging.INFO, logger="strawberry.execution"):
        await gql.post('{ agent(id: "a1") { id } }')
    [crashed] = [r for r in caplog.records if r.name == "strawberry.execution"]
    assert crashed.levelno == logging.ERROR and crashed.exc_info is not None
