"""A seat's live stream in a game offers the phase's action types, as its perspective does."""

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as redis

from bench.support.fake_llm import FakeLLM
from parley.resolvers.importer import import_lines
from tests.support.games import EXAMPLES, game_lines
from tests.support.server import graphql, init, receive, send, serve, socket

START = """
mutation($input: StartSimulationInput!) {
  startSimulation(input: $input) { episode { id } seatTokens { seat token } userErrors { message } }
}"""
STATUS = "query($id: ID!) { episode(id: $id) { status } }"
ACT = """
mutation($id: ID!, $token: String!, $type: ActionType!, $argument: String!) {
  submitAction(input: {episodeId: $id, seat: 0, seatToken: $token, actionType: $type,
                       argument: $argument}) { userErrors { message } }
}"""
WATCH = """
subscription($id: ID!, $token: String!) {
  episodeEvents(id: $id, as: 0, seatToken: $token) {
    kind status yourTurn { turn actionTypes } perspective { yourTurn { actionTypes } }
  }
}"""


@pytest.fixture
async def served(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    async with serve(redis_url, tmp_path_factory.mktemp("games"), worker=True) as url:
        yield url


async def waiting(url: str, episode_id: str) -> None:
    async with asyncio.timeout(30):
        while True:
            if (await graphql(url, STATUS, {"id": episode_id}))["episode"]["status"] == "WAITING":
                return
            await asyncio.sleep(0.05)


async def test_a_werewolf_seat_is_offered_only_its_phase_s_actions(
    served: str, redis_client: redis.Redis, fake_llm: FakeLLM
) -> None:
    report = await import_lines(redis_client, (EXAMPLES / "werewolf.jsonl").open())
    assert report.invalid == 0, report.problems
    lines = game_lines("werewolf")
    model = fake_llm.model_name()
    variables: dict[str, Any] = {
        "input": {
            "scenarioId": next(line["env_id"] for line in lines if "env_id" in line),
            "agentIds": [line["agent_id"] for line in lines if "agent_id" in line],
            "agentModels": [model],
            "judgeModel": model,
            "maxTurns": 80,
            "humanSeats": [0],
        }
    }
    started = (await graphql(served, START, variables))["startSimulation"]
    episode_id, token = started["episode"]["id"], started["seatTokens"][0]["token"]
    await waiting(served, episode_id)
    async with socket(served) as ws:
        await init(ws)
        payload = {"query": WATCH, "variables": {"id": episode_id, "token": token}}
        await send(ws, {"id": "1", "type": "subscribe", "payload": payload})
        snapshot = (await receive(ws))["payload"]["data"]["episodeEvents"]
        assert snapshot["kind"] == "SNAPSHOT"
        assert snapshot["yourTurn"]["actionTypes"] == ["SPEAK"]  # the night's talk
        assert snapshot["perspective"]["yourTurn"]["actionTypes"] == ["SPEAK"]
        act = {"id": episode_id, "token": token, "type": "SPEAK", "argument": "The teacher."}
        assert (await graphql(served, ACT, act))["submitAction"]["userErrors"] == []
        async with asyncio.timeout(30):
            while True:  # the partner answers; then the night's vote waits on seat 0
                event = (await receive(ws))["payload"]["data"]["episodeEvents"]
                if event["status"] == "WAITING" and event["yourTurn"]:
                    break
        assert event["yourTurn"]["actionTypes"] == ["ACTION"]
