"""resolvers/dimensions.py: a dimension name is refused when the list is created, or it works;
never a list that is stored and then breaks what uses it.

- A name holding NUL is stored and indexed, but RediSearch cuts the field's JSONPath at the
  NUL, so the field reads nothing: episodeResults counts the scores and gives a mean of 0.0 for
  scores of 5.0.
- `overall`, a name Parley's results keep for the overall score: the list is stored and the
  judge scores the dimension, but its scores are in no result (the results' `overall` is the
  overall score).
- `overall_score`, the key Sotopia's rewards keep for the overall score: the list is stored
  and startSimulation (and rejudgeEpisodes) take it, then every episode judged with it ends
  FAILED with pydantic's validation text ("dimension names must be distinct and not
  'overall_score'").
"""

import json
import uuid
from typing import Any

import httpx
import pytest
import redis.asyncio as redis

from bench.support.fake_llm import FakeLLM
from bench.support.read_world import parley_episode
from bench.support.simulation import CREATE_DIMENSION_LIST, make_world, start_input
from parley.storage.models import (
    CustomEvaluationDimension,
    CustomEvaluationDimensionList,
    EpisodeLog,
)
from tests.support.server import GraphQLClient

RESULTS = """
query($tag: String) {
  episodeResults(filter: {tag: $tag}) { groups { dimensions { dimension count mean } } }
}"""
START = """
mutation($input: StartSimulationInput!) {
  startSimulation(input: $input) { episode { id status } userErrors { field message code } }
}"""
SCORE = 5.0
OVERALL = 7.0
"""The overall score stored, apart from every dimension's."""


async def create(gql: GraphQLClient, names: list[str]) -> dict[str, Any]:
    dimensions = [{"name": name, "rangeLow": 0, "rangeHigh": 10} for name in names]
    input = {"name": f"names {uuid.uuid4().hex[:8]}", "dimensions": dimensions}
    payload: dict[str, Any] = (await gql.data(CREATE_DIMENSION_LIST, {"input": input}))[
        "createEvaluationDimensionList"
    ]
    return payload


def refused(payload: dict[str, Any]) -> bool:
    """Refused as the README says: INVALID on the list's dimensions, and no list."""
    codes = [e["code"] for e in payload["userErrors"]]
    return payload["evaluationDimensionList"] is None and codes != [] and set(codes) == {"INVALID"}


async def judged_with(client: redis.Redis, list_id: str, names: list[str], tag: str) -> None:
    """A COMPLETED episode judged on the list, every dimension scored SCORE and the overall
    OVERALL, as the worker stores it (rewards per seat: the overall score, then each dimension
    and Sotopia's `overall_score`)."""
    episode = parley_episode(1, 2, 1, 2, tag)
    doc = episode.model_dump(mode="json")
    detail = {name: SCORE for name in names}
    doc.update(
        pk=f"dims-{uuid.uuid4().hex[:12]}",
        tag=tag,
        evaluation_dimension_list_id=list_id,
        rewards=[[OVERALL, {**detail, "overall_score": OVERALL}] for _ in range(2)],
    )
    await client.json().set(EpisodeLog.make_primary_key(doc["pk"]), "$", doc)


@pytest.mark.parametrize("name", ["a\x00b", "overall"], ids=["nul", "overall"])
async def test_a_dimension_name_is_refused_or_has_its_results(
    gql: GraphQLClient, redis_client: redis.Redis, name: str
) -> None:
    payload = await create(gql, [name, "plain"])
    if refused(payload):
        return
    assert payload["userErrors"] == [], payload
    tag = f"dims-{uuid.uuid4().hex[:8]}"
    await judged_with(redis_client, payload["evaluationDimensionList"]["id"], [name, "plain"], tag)
    groups = (await gql.data(RESULTS, {"tag": tag}))["episodeResults"]["groups"]
    for dimension in (name, "plain"):
        stats = [
            (d["count"], d["mean"]) for d in groups[0]["dimensions"] if d["dimension"] == dimension
        ]
        assert (2, SCORE) in stats, (dimension, groups)


async def test_a_list_no_judge_can_use_is_refused_before_any_episode_takes_it(
    gql: GraphQLClient, fake_llm: FakeLLM
) -> None:
    payload = await create(gql, ["overall_score"])
    if refused(payload):
        return
    list_id = payload["evaluationDimensionList"]["id"]
    scenario, agents = await make_world(f"dims-{uuid.uuid4().hex[:8]}")
    input = start_input(scenario, agents, fake_llm.model_name(), evaluationDimensionListId=list_id)
    started = (await gql.data(START, {"input": input}))["startSimulation"]
    assert started["episode"] is None and started["userErrors"], (
        f"list {list_id} with a dimension named 'overall_score' was stored, and an episode "
        f"judged on it is queued to fail: {started}"
    )


REJUDGE = """
mutation($input: RejudgeEpisodesInput!) {
  rejudgeEpisodes(input: $input) { rejudging { id } userErrors { field message code } }
}"""
UNUSABLE = {
    "nul": (["a\x00b"], "cannot contain NUL"),
    "overall": (["overall", "plain"], "'overall' is reserved for the overall score"),
    "overall_score": (["overall_score"], "'overall_score' is reserved for the overall score"),
    "twice": (["plain", "plain"], "two dimensions are named 'plain'"),
}


async def stored_by_another_writer(client: redis.Redis, names: list[str]) -> str:
    """A list of dimensions of these names written straight to Redis, as Sotopia's code may;
    its id."""
    list_id = f"other-{uuid.uuid4().hex[:12]}"
    dimension_ids = [f"{list_id}-{n}" for n in range(len(names))]
    for pk, name in zip(dimension_ids, names, strict=True):
        dimension: dict[str, Any] = {
            "pk": pk,
            "name": name,
            "description": "",
            "range_low": 0,
            "range_high": 10,
        }
        await client.json().set(CustomEvaluationDimension.make_primary_key(pk), "$", dimension)
    listed: dict[str, Any] = {
        "pk": list_id,
        "name": f"list {list_id}",
        "dimension_pks": dimension_ids,
    }
    await client.json().set(CustomEvaluationDimensionList.make_primary_key(list_id), "$", listed)
    return list_id


@pytest.mark.parametrize("case", UNUSABLE)
async def test_a_stored_list_no_judge_can_use_is_refused_in_words_at_the_start(
    gql: GraphQLClient, redis_client: redis.Redis, fake_llm: FakeLLM, unchanged: Any, case: str
) -> None:
    """A list another writer stored with a name the results cannot carry: startSimulation and
    rejudgeEpisodes refuse it on the list's id, in plain words, and write nothing (the episode
    was queued and ended FAILED in the worker, with pydantic's words for `overall_score`)."""
    names, words = UNUSABLE[case]
    list_id = await stored_by_another_writer(redis_client, names)
    scenario, agents = await make_world(f"dims-{uuid.uuid4().hex[:8]}")
    model = fake_llm.model_name()
    input = start_input(scenario, agents, model, evaluationDimensionListId=list_id)
    episode_id = f"judged-{uuid.uuid4().hex[:8]}"
    done = parley_episode(1, 2, 1, 2, "dims").model_dump(mode="json")
    done.update(pk=episode_id, status="COMPLETED")
    await redis_client.json().set(EpisodeLog.make_primary_key(episode_id), "$", done)
    rejudge = {
        "episodeIds": [episode_id],
        "judgeModel": model,
        "evaluationDimensionListId": list_id,
    }
    async with unchanged():
        started = (await gql.data(START, {"input": input}))["startSimulation"]
        rejudged = (await gql.data(REJUDGE, {"input": rejudge}))["rejudgeEpisodes"]
    assert started["episode"] is None and rejudged["rejudging"] is None
    for payload in (started, rejudged):
        [error] = payload["userErrors"]
        assert error["field"] == ["input", "evaluationDimensionListId"], payload
        assert error["code"] == "INVALID", payload
        assert error["message"].startswith(f"evaluation dimension list {list_id!r}: "), payload
        assert words in error["message"] and "pydantic" not in error["message"], payload


IMPORT = {"content-type": "application/x-ndjson"}


async def test_an_import_refuses_the_names_creating_a_list_refuses(
    api_url: str, unchanged: Any
) -> None:
    tag = uuid.uuid4().hex[:8]
    lines = [
        {
            "dimension_list_id": f"import-{tag}-{n}",
            "name": f"import {tag} {n}",
            "dimensions": [{"name": name, "range_low": 0, "range_high": 10} for name in names],
        }
        for n, (names, _) in enumerate(UNUSABLE.values())
    ]
    body = "\n".join(json.dumps(line) for line in lines) + "\n"
    async with unchanged(), httpx.AsyncClient(base_url=api_url, timeout=30) as http:
        response = await http.post("/import", content=body, headers=IMPORT)
    assert response.status_code == 200, response.text
    report = response.json()
    assert report["created"] == {}, report
    reasons = [p["reason"] for p in report["problems"]]
    assert len(reasons) == len(UNUSABLE), report
    for reason, (_, words) in zip(reasons, UNUSABLE.values(), strict=True):
        expected = "must be unique within a list" if words.startswith("two") else words
        assert expected in reason and "pydantic" not in reason, reason
