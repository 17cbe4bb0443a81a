"""Dimension names past the results indexes' cap, through every way in: lists created over the
API (one after another and from two processes at once), re-judging with a list, imports.

Each name takes a field per seat in the results indexes, and RediSearch refuses an index of
more than 1,024 fields: before the cap, the 10th list of 50 new names was stored and then
answered INTERNAL, and the service would not start again. Each test has a Redis of its own and
real `parley serve` processes.
"""

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio as redis

from bench.support.processes import api_process, parley_env
from bench.support.simulation import CREATE_DIMENSION_LIST
from parley.core.limits import LIST_MAX
from parley.storage import keys
from parley.storage.models import (
    CustomEvaluationDimension,
    CustomEvaluationDimensionList,
    EpisodeLog,
)
from parley.storage.results_index import FIELD_LIMIT, MAX_DIMENSIONS, score_field
from tests.support import sotopia_records as sotopia
from tests.support.server import GraphQLClient
from tests.support.spare_redis import spare_redis

JSON_LINES = {"content-type": "application/x-ndjson"}

LISTS = "{ evaluationDimensionLists { name } }"
REJUDGE = """
mutation($input: RejudgeEpisodesInput!) {
  rejudgeEpisodes(input: $input) { rejudging { id } userErrors { field message code } }
}"""
FULL = MAX_DIMENSIONS // LIST_MAX
"""Lists of LIST_MAX new names that fill the cap exactly."""


def new_list(n: int, names: list[str] | None = None, **fields: Any) -> dict[str, Any]:
    """A list named `list n` of LIST_MAX names of its own (or `names`)."""
    names = names or [f"l{n}-d{i}" for i in range(LIST_MAX)]
    dimensions = [{"name": name, "rangeLow": 0, "rangeHigh": 10} for name in names]
    return {"name": f"list {n}", "dimensions": dimensions, **fields}


@pytest.fixture
async def spare(tmp_path: Path) -> AsyncIterator[tuple[str, redis.Redis]]:
    async with spare_redis(tmp_path / "redis") as found:
        yield found


def env(url: str, tmp_path: Path) -> dict[str, str]:
    return parley_env(url, tmp_path / "data", worker="false")


async def create(http: httpx.AsyncClient, input: dict[str, Any]) -> dict[str, Any]:
    payload: dict[str, Any] = (
        await GraphQLClient(http).data(CREATE_DIMENSION_LIST, {"input": input})
    )["createEvaluationDimensionList"]
    return payload


async def field_names(client: redis.Redis, index: str) -> list[str]:
    info: Any = await client.execute_command("FT.INFO", index)  # type: ignore[no-untyped-call]
    entries = info if isinstance(info, dict) else dict(zip(info[::2], info[1::2], strict=True))
    return [
        str(a["attribute"] if isinstance(a, dict) else a[a.index("attribute") + 1])
        for a in entries["attributes"]
    ]


async def test_a_list_past_the_cap_is_refused_before_anything_is_stored(
    spare: tuple[str, redis.Redis], tmp_path: Path
) -> None:
    url, client = spare
    with api_process(env(url, tmp_path), tmp_path / "api.log") as api:
        async with httpx.AsyncClient(base_url=api.url, timeout=60) as http:
            for n in range(FULL):
                assert (await create(http, new_list(n)))["userErrors"] == []
            refused = await create(http, new_list(FULL))
            # names the indexes have already are no new ones: such a list is still taken
            again = await create(http, new_list(FULL + 1, [f"l0-d{i}" for i in range(3)]))
            stored = (await GraphQLClient(http).data(LISTS))["evaluationDimensionLists"]
    assert refused["evaluationDimensionList"] is None
    [error] = refused["userErrors"]
    assert (error["field"], error["code"]) == (["input", "dimensions"], "INVALID")
    assert f"at most {MAX_DIMENSIONS} dimension names" in error["message"]
    assert again["userErrors"] == []
    assert sorted(s["name"] for s in stored) == sorted(
        [f"list {n}" for n in range(FULL)] + [f"list {FULL + 1}"]
    )
    dimension_keys = [
        k async for k in client.scan_iter(CustomEvaluationDimension.make_primary_key("*"))
    ]
    assert len(dimension_keys) == FULL * LIST_MAX + 3  # none of the refused list's
    assert await client.scard(keys.INDEXED_DIMENSIONS) == MAX_DIMENSIONS
    for index in (keys.RESULTS_INDEX, keys.EVALUATIONS_INDEX):
        fields = await field_names(client, index)
        assert len(fields) < FIELD_LIMIT
        assert score_field(1, f"l{FULL - 1}-d{LIST_MAX - 1}") in fields
    with api_process(env(url, tmp_path), tmp_path / "again.log"):
        pass  # and the service starts on this database


async def test_creators_in_two_processes_cannot_together_pass_the_cap(
    spare: tuple[str, redis.Redis], tmp_path: Path
) -> None:
    """Twenty names are left below the cap; twelve lists of five new names each arrive at two
    API processes at once: exactly four are taken."""
    url, client = spare
    taken = [f"taken-{i}" for i in range(MAX_DIMENSIONS - 20)]
    await client.sadd(keys.INDEXED_DIMENSIONS, *taken)
    with (
        api_process(env(url, tmp_path), tmp_path / "a.log") as a,
        api_process(env(url, tmp_path), tmp_path / "b.log") as b,
    ):
        async with (
            httpx.AsyncClient(base_url=a.url, timeout=60) as first,
            httpx.AsyncClient(base_url=b.url, timeout=60) as second,
        ):
            inputs = [new_list(n, [f"c{n}-d{i}" for i in range(5)]) for n in range(12)]
            answers = await asyncio.gather(
                *(create(first if n % 2 else second, i) for n, i in enumerate(inputs))
            )
    accepted = [p for p in answers if not p["userErrors"]]
    refused = [p for p in answers if p["userErrors"]]
    assert len(accepted) == 4, answers
    assert all(p["userErrors"][0]["code"] == "INVALID" for p in refused)
    assert await client.scard(keys.INDEXED_DIMENSIONS) == MAX_DIMENSIONS
    lists = [k async for k in client.scan_iter(CustomEvaluationDimensionList.make_primary_key("*"))]
    assert len(lists) == 4


async def test_imports_past_the_cap_list_the_lines_as_invalid(
    spare: tuple[str, redis.Redis], tmp_path: Path
) -> None:
    """Two imports, as two POST /import calls reached the same state: the second's lines past
    the cap (two lists, an episode scored on a new dimension) are invalid and not written."""
    url, client = spare

    def list_line(n: int) -> str:
        names = [f"l{n}-d{i}" for i in range(LIST_MAX)]
        dimensions = [{"name": name, "range_low": 0, "range_high": 10} for name in names]
        return json.dumps(
            {"dimension_list_id": f"imported-{n}", "name": f"list {n}", "dimensions": dimensions}
        )

    episode = json.loads(sotopia.with_ids("IX")[-1])

    def episode_line(pk: str, dimension: str) -> str:
        reward = [5.0, {dimension: 5.0}]
        return json.dumps({**episode, "episode_id": pk, "raw_rewards": [reward, reward]})

    first = [list_line(n) for n in range(FULL - 2)]
    second = [
        list_line(FULL - 2),
        list_line(FULL - 1),
        list_line(FULL),
        episode_line("imported-new", "a dimension too many"),
        episode_line("imported-known", "l0-d0"),
        list_line(FULL + 1),
    ]
    with api_process(env(url, tmp_path), tmp_path / "api.log") as api:
        async with httpx.AsyncClient(base_url=api.url, timeout=60) as http:
            reports = []
            for lines in (first, second):
                response = await http.post(
                    "/import", content="\n".join(lines) + "\n", headers=JSON_LINES
                )
                assert response.status_code == 200, response.text
                reports.append(response.json())
    assert reports[0]["created"] == {"dimension_lists": FULL - 2} and reports[0]["invalid"] == 0
    assert reports[1]["created"] == {"dimension_lists": 2, "episodes": 1}
    reasons = {p["line"]: p["reason"] for p in reports[1]["problems"]}
    assert sorted(reasons) == [3, 4, 6]
    assert all(f"at most {MAX_DIMENSIONS} dimension names" in r for r in reasons.values())
    assert not await client.exists(
        CustomEvaluationDimensionList.make_primary_key(f"imported-{FULL}"),
        CustomEvaluationDimensionList.make_primary_key(f"imported-{FULL + 1}"),
        EpisodeLog.make_primary_key("imported-new"),
    )
    assert await client.exists(EpisodeLog.make_primary_key("imported-known"))
    assert await client.scard(keys.INDEXED_DIMENSIONS) == MAX_DIMENSIONS


async def test_rejudging_with_a_list_past_the_cap_is_refused(
    spare: tuple[str, redis.Redis], tmp_path: Path
) -> None:
    """A list Sotopia wrote (its names never claimed) over a full cap: re-judging with it is a
    user error, and nothing is queued."""
    url, client = spare
    await client.sadd(keys.INDEXED_DIMENSIONS, *(f"taken-{i}" for i in range(MAX_DIMENSIONS)))
    dimension = CustomEvaluationDimension(
        pk="sotopia-dim", name="sotopia only", range_low=0, range_high=10
    )
    listed = CustomEvaluationDimensionList(
        pk="sotopia-list", name="Sotopia's", dimension_pks=[dimension.pk]
    )
    episode = EpisodeLog(pk="judged-once", environment="e", agents=["a", "b"], tag="rejudge-cap")
    for record in (dimension, listed, episode):
        key = type(record).make_primary_key(str(record.pk))
        await client.json().set(key, "$", record.model_dump(mode="json"))
    with api_process(env(url, tmp_path), tmp_path / "api.log") as api:
        async with httpx.AsyncClient(base_url=api.url, timeout=60) as http:
            variables = {
                "input": {
                    "episodeIds": ["judged-once"],
                    "judgeModel": "local/gemma-3-270m",
                    "evaluationDimensionListId": "sotopia-list",
                }
            }
            payload = (await GraphQLClient(http).data(REJUDGE, variables))["rejudgeEpisodes"]
    assert payload["rejudging"] is None
    [error] = payload["userErrors"]
    assert error["field"] == ["input", "evaluationDimensionListId"], error
    assert error["code"] == "INVALID" and f"at most {MAX_DIMENSIONS}" in error["message"]
    stored = await client.json().get(EpisodeLog.make_primary_key("judged-once"), "$.evaluations")
    assert stored == [[]]
