"""Episode.modelCalls over real HTTP from a served app with its worker: an API token reads an
episode's calls page by page, filtered, their messages resolved; a seat token reads none."""

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from bench.support.fake_llm import FakeLLM
from bench.support.simulation import make_world
from parley.graph.seat_access import REFUSED
from parley.resolvers.model_calls import CALLS as CURSORS
from tests.support.server import graphql, serve

START = """
mutation($input: StartSimulationInput!) {
  startSimulation(input: $input) { episode { id } seatTokens { seat token } userErrors { message } }
}"""
ACT = """
mutation($id: ID!, $token: String!) {
  submitAction(input: {episodeId: $id, seat: 0, seatToken: $token, actionType: SPEAK,
                       argument: "Hello from a person"}) { userErrors { message } }
}"""
CALLS = """
query($id: ID!, $first: Int, $after: String, $turn: Int, $purpose: ModelCallPurpose) {
  episode(id: $id) {
    modelCalls(first: $first, after: $after, turn: $turn, purpose: $purpose) {
      totalCount
      pageInfo { hasNextPage endCursor }
      nodes {
        id purpose seat turn judge model attempt answer promptTokens completionTokens
        latencyMs attempts errorCode requestHash messageHashes params responseFormat
        messages { role content } finishedAt
      }
    }
  }
}"""


@pytest.fixture
async def served(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    directory = tmp_path_factory.mktemp("model-calls")
    async with serve(redis_url, directory, tokens="alpha", worker=True) as url:
        yield url


async def status_of(base_url: str, episode_id: str) -> str:
    query = "query($id: ID!) { episode(id: $id) { status } }"
    data = await graphql(base_url, query, {"id": episode_id}, "alpha")
    status: str = data["episode"]["status"]
    return status


async def until(base_url: str, episode_id: str, wanted: str) -> None:
    async with asyncio.timeout(30):
        while True:
            if await status_of(base_url, episode_id) == wanted:
                return
            await asyncio.sleep(0.05)


async def as_seat(base_url: str, token: str, query: str, variables: dict[str, Any]) -> Any:
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        response = await http.post(
            "/graphql",
            json={"query": query, "variables": variables},
            headers={"authorization": f"Seat {token}"},
        )
    assert response.status_code == 200, response.text
    return response.json()


async def test_an_api_token_reads_an_episodes_calls_and_a_seat_token_none(
    served: str, fake_llm: FakeLLM
) -> None:
    tag = f"model-calls-{uuid.uuid4().hex[:8]}"
    scenario, agents = await make_world(tag)
    model = fake_llm.model_name()
    started = await graphql(
        served,
        START,
        {
            "input": {
                "scenarioId": scenario,
                "agentIds": agents,
                "agentModels": [model],
                "judgeModel": model,
                "maxTurns": 2,
                "humanSeats": [0],
                "tag": tag,
            }
        },
        token="alpha",
    )
    result = started["startSimulation"]
    assert result["userErrors"] == []
    episode_id = result["episode"]["id"]
    token = result["seatTokens"][0]["token"]
    await until(served, episode_id, "WAITING")
    played = await as_seat(served, token, ACT, {"id": episode_id, "token": token})
    assert played["data"]["submitAction"]["userErrors"] == []
    await until(served, episode_id, "COMPLETED")

    everything = await graphql(served, CALLS, {"id": episode_id, "first": 100}, "alpha")
    calls = everything["episode"]["modelCalls"]
    nodes = calls["nodes"]
    assert calls["totalCount"] == len(nodes) > 1
    turns = [n for n in nodes if n["purpose"] == "TURN"]
    assert [(n["seat"], n["turn"]) for n in turns] == [(1, 1)]  # seat 0 is a person's
    assert {n["purpose"] for n in nodes} == {"TURN", "JUDGE"}
    sent = {r.body["messages"][-1]["content"]: r for r in fake_llm.requests if tag in r.text}
    for node in nodes:
        assert node["model"] == model and node["attempts"] == 1 and node["errorCode"] is None
        request = sent[node["messages"][-1]["content"]]
        assert node["messages"] == request.body["messages"]
        assert node["answer"] == request.reply
        assert node["params"]["temperature"] == request.body["temperature"]
        assert node["responseFormat"] == request.body.get("response_format")
        assert len(node["messageHashes"]) == len(node["messages"])

    pages: list[str] = []
    after = None
    while True:
        variables = {"id": episode_id, "first": 1, "after": after}
        page = (await graphql(served, CALLS, variables, "alpha"))["episode"]["modelCalls"]
        pages += [n["id"] for n in page["nodes"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert pages == [n["id"] for n in nodes]
    judged = await graphql(served, CALLS, {"id": episode_id, "purpose": "JUDGE"}, "alpha")
    judge_calls = judged["episode"]["modelCalls"]
    assert judge_calls["totalCount"] == len(nodes) - 1
    in_turn = await graphql(served, CALLS, {"id": episode_id, "turn": 1}, "alpha")
    assert [n["id"] for n in in_turn["episode"]["modelCalls"]["nodes"]] == [turns[0]["id"]]

    forged = CURSORS.cursor(("0-0 + 1",))  # a cursor of the list naming no entry id
    wrong: list[dict[str, object]] = [
        {"after": "not-a-cursor"},
        {"after": forged},
        {"after": CURSORS.cursor(("99999999999999999999999-0",))},
        {"turn": -1},
    ]
    for bad in wrong:
        async with httpx.AsyncClient(base_url=served, timeout=30) as http:
            response = await http.post(
                "/graphql",
                json={"query": CALLS, "variables": {"id": episode_id, **bad}},
                headers={"authorization": "Bearer alpha"},
            )
        error = response.json()["errors"][0]
        assert error["extensions"]["code"] == "BAD_USER_INPUT", error

    refused = await as_seat(served, token, CALLS, {"id": episode_id})
    assert refused["data"] is None and refused["errors"][0]["message"] == REFUSED
