"""A seat token alone: a participant reads and plays its seat, and reaches nothing else."""

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from bench.support.fake_llm import FakeLLM
from bench.support.simulation import make_world
from parley.graph.seat_access import REFUSED
from tests.support.server import graphql, init, receive, send, serve, socket

START = """
mutation($input: StartSimulationInput!) {
  startSimulation(input: $input) { episode { id } seatTokens { seat token } userErrors { message } }
}"""
VIEW = """
query($id: ID!, $token: String!) {
  seatView(episodeId: $id, seat: 0, seatToken: $token) {
    agentName goal yourTurn { turn actionTypes } seen { speaker text }
  }
}"""
ACT = """
mutation($id: ID!, $token: String!) {
  submitAction(input: {episodeId: $id, seat: 0, seatToken: $token, actionType: SPEAK,
                       argument: "Hello from a person"}) {
    sequence episode { id } perspective { seen { speaker text } } userErrors { code message }
  }
}"""
SEAT_EVENTS = """
subscription($id: ID!, $token: String) {
  episodeEvents(id: $id, as: 0, seatToken: $token) { kind status yourTurn { turn } episode { id } }
}"""


@pytest.fixture
async def locked(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    directory = tmp_path_factory.mktemp("seats")
    async with serve(redis_url, directory, tokens="alpha", worker=True) as url:
        yield url


async def waiting_episode(base_url: str, model: str) -> tuple[str, str]:
    scenario, agents = await make_world(f"seat-access-{uuid.uuid4().hex[:8]}")
    variables: dict[str, Any] = {
        "input": {
            "scenarioId": scenario,
            "agentIds": agents,
            "agentModels": [model],
            "judgeModel": model,
            "maxTurns": 2,
            "humanSeats": [0],
        }
    }
    started = (await graphql(base_url, START, variables, token="alpha"))["startSimulation"]
    assert started["userErrors"] == []
    episode_id, ((seat, token),) = (
        started["episode"]["id"],
        [(t["seat"], t["token"]) for t in started["seatTokens"]],
    )
    assert seat == 0
    status = "{ episode(id: $id) { status } }"
    async with asyncio.timeout(20):
        while True:
            data = await graphql(base_url, f"query($id: ID!) {status}", {"id": episode_id}, "alpha")
            if data["episode"]["status"] == "WAITING":
                return episode_id, token
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


async def test_a_seat_token_reads_and_plays_its_seat_only(locked: str, fake_llm: FakeLLM) -> None:
    episode_id, token = await waiting_episode(locked, fake_llm.model_name())
    variables = {"id": episode_id, "token": token}
    view = (await as_seat(locked, token, VIEW, variables))["data"]["seatView"]
    assert view["yourTurn"]["turn"] == 0 and "SPEAK" in view["yourTurn"]["actionTypes"]
    wrong = await as_seat(locked, token, VIEW, {"id": episode_id, "token": "not-it"})
    assert wrong["data"]["seatView"] is None
    played = (await as_seat(locked, token, ACT, variables))["data"]["submitAction"]
    assert played["userErrors"] == [] and played["sequence"]
    assert played["episode"] is None  # the omniscient episode is not a seat's to read
    assert {"speaker": view["agentName"], "text": 'said: "Hello from a person"'} in played[
        "perspective"
    ]["seen"]
    for refused in (
        "{ agents { totalCount } }",
        f'{{ episode(id: "{episode_id}") {{ agents {{ secret }} }} }}',
        '{ seatView(episodeId: "x", seat: 0, seatToken: "y") { goal } agents { totalCount } }',
        f'mutation {{ cancelSimulation(input: {{id: "{episode_id}"}}) {{ episode {{ id }} }} }}',
    ):
        body = await as_seat(locked, token, refused, {})
        assert body["data"] is None and body["errors"][0]["message"] == REFUSED, refused
    status = "query($id: ID!) { episode(id: $id) { status } }"
    data = await graphql(locked, status, {"id": episode_id}, "alpha")
    assert data["episode"]["status"] != "CANCELLED"


@pytest.mark.parametrize("authorization", ["Seat", "Seats abc", None])
async def test_an_empty_seat_scheme_is_no_token(locked: str, authorization: str | None) -> None:
    headers = {"authorization": authorization} if authorization else {}
    async with httpx.AsyncClient(base_url=locked, timeout=30) as http:
        response = await http.post("/graphql", json={"query": VIEW}, headers=headers)
    assert response.status_code == 401


async def test_a_seat_websocket_follows_only_its_seat(locked: str, fake_llm: FakeLLM) -> None:
    episode_id, token = await waiting_episode(locked, fake_llm.model_name())
    async with socket(locked) as ws:
        await init(ws, {"seatToken": token})
        payload = {"query": SEAT_EVENTS, "variables": {"id": episode_id, "token": token}}
        await send(ws, {"id": "1", "type": "subscribe", "payload": payload})
        first = await receive(ws)
        assert first["type"] == "next", first
        assert first["payload"]["data"]["episodeEvents"]["kind"] == "SNAPSHOT"
        assert first["payload"]["data"]["episodeEvents"]["episode"] is None
        for refused in (
            "subscription($id: ID!) { episodeStatus(id: $id) { kind } }",
            "subscription($id: ID!) { episodeEvents(id: $id) { kind } }",
        ):
            request = {"query": refused, "variables": {"id": episode_id}}
            await send(ws, {"id": "2", "type": "subscribe", "payload": request})
            message = await receive(ws)
            while message.get("id") != "2":
                message = await receive(ws)
            assert message["type"] == "error" and message["payload"][0]["message"] == REFUSED
        wrong = {"query": SEAT_EVENTS, "variables": {"id": episode_id, "token": "not-it"}}
        await send(ws, {"id": "3", "type": "subscribe", "payload": wrong})
        message = await receive(ws)
        while message.get("id") != "3":
            message = await receive(ws)
        assert "wrong or missing seat token" in str(message["payload"])
