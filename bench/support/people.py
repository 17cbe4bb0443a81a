"""People in the loop over the API, for tests and benchmarks: starting episodes with human
seats, a person's action, run control, and a seat's own stream over a real websocket."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import websockets
from websockets.asyncio.client import ClientConnection

from bench.support.simulation import post

START_WITH_SEATS = """
mutation($input: StartSimulationInput!) {
  startSimulation(input: $input) {
    episode { id status }
    seatTokens { seat token }
    userErrors { field message code }
  }
}"""
START_MANY_WITH_SEATS = """
mutation($inputs: [StartSimulationInput!]!) {
  startSimulations(inputs: $inputs) {
    episodes { id status }
    seatTokens { seat token }
    userErrors { field message code }
  }
}"""
SUBMIT = """
mutation($input: SubmitActionInput!) {
  submitAction(input: $input) {
    sequence
    episode { status }
    userErrors { field message code }
  }
}"""
CONTROL = """
mutation($id: ID!) {{
  {field}(input: {{id: $id}}) {{
    episode {{ id status pauseAt }}
    userErrors {{ field message code }}
  }}
}}"""
INJECT = """
mutation($input: InjectEventInput!) {
  injectEvent(input: $input) {
    environmentMessage { sequence turn text to }
    userErrors { field message code }
  }
}"""
CANCEL = """
mutation($id: ID!) { cancelSimulation(input: {id: $id}) { userErrors { code } } }"""
EPISODE = """
query($id: ID!) {
  episode(id: $id) {
    id status attempt error progress { turn maxTurns }
    statusHistory { status attempt reason resumedFromTurn }
    turns { turn agentIndex speaker actionType argument to sequence }
    rewards { agentIndex overall }
    messages
    waiting { turn seats deadline }
    pauseAt
    environmentMessages { sequence turn text to }
    humanSeats { seat claimed }
  }
}"""
SEAT_EVENTS = """
subscription($id: ID!, $seat: Int, $token: String) {
  episodeEvents(id: $id, as: $seat, seatToken: $token) {
    kind sequence status reason
    turn { turn agentIndex speaker actionType argument to }
    environmentMessage { text to turn }
    waiting { turn seats }
    yourTurn { turn deadline actionTypes }
    episode { id }
    perspective { seat agentName goal }
  }
}"""
TERMINAL = ("COMPLETED", "FAILED", "CANCELLED")


async def start_with_seats(base_url: str, variables: dict[str, Any]) -> tuple[str, dict[int, str]]:
    """Start one episode; its id and its seat tokens by seat."""
    payload = (await post(base_url, START_WITH_SEATS, {"input": variables}))["startSimulation"]
    assert payload["userErrors"] == [], payload
    tokens = {t["seat"]: t["token"] for t in payload["seatTokens"]}
    episode_id: str = payload["episode"]["id"]
    return episode_id, tokens


def rating(
    study: str,
    rater: int,
    token: str,
    position: int,
    scores: Iterable[tuple[int, str, int]],
    revision: int = 0,
) -> dict[str, Any]:
    """saveRating's input: a rater's scores (agent, dimension, score) of one of their episodes,
    based on the `revision` of it they have seen."""
    return {
        "studyId": study,
        "rater": rater,
        "raterToken": token,
        "position": position,
        "revision": revision,
        "scores": [{"agent": a, "dimension": d, "score": score} for a, d, score in scores],
    }


def speak(episode_id: str, seat: int, token: str, words: str, **extra: Any) -> dict[str, Any]:
    return {
        "episodeId": episode_id,
        "seat": seat,
        "seatToken": token,
        "actionType": "SPEAK",
        "argument": words,
        **extra,
    }


async def submit(base_url: str, action: dict[str, Any]) -> dict[str, Any]:
    """A submitAction's payload."""
    found: dict[str, Any] = (await post(base_url, SUBMIT, {"input": action}))["submitAction"]
    return found


async def control(base_url: str, name: str, episode_id: str) -> dict[str, Any]:
    """pauseSimulation, resumeSimulation or stepSimulation's payload."""
    query = CONTROL.format(field=name)
    found: dict[str, Any] = (await post(base_url, query, {"id": episode_id}))[name]
    return found


async def inject(base_url: str, episode_id: str, text: str, to: list[str] | None = None) -> Any:
    variables = {"input": {"episodeId": episode_id, "text": text, "to": to or []}}
    return (await post(base_url, INJECT, variables))["injectEvent"]


def codes(payload: dict[str, Any]) -> list[str]:
    return [e["code"] for e in payload["userErrors"]]


Choose = Callable[[dict[str, Any]], Awaitable[None]]


@dataclass
class SeatStream:
    """Follows `episodeEvents(id, as: seat, seatToken)` over its own websocket until the server
    completes it; `on_your_turn` is awaited for each event that says it is this seat's turn."""

    url: str
    episode_id: str
    seat: int
    token: str
    on_your_turn: Choose | None = None
    events: list[dict[str, Any]] = field(default_factory=list)
    subscribed: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once the snapshot arrived."""

    async def run(self, timeout: float = 90) -> list[dict[str, Any]]:
        async with asyncio.timeout(timeout):
            await self._run()
        return self.events

    @asynccontextmanager
    async def _subscribed(self) -> AsyncIterator[ClientConnection]:
        """A websocket with this seat's subscription sent on it."""
        ws_url = self.url.replace("http://", "ws://") + "/graphql"
        async with websockets.connect(
            ws_url, subprotocols=[websockets.Subprotocol("graphql-transport-ws")]
        ) as ws:
            await ws.send(json.dumps({"type": "connection_init"}))
            assert json.loads(await ws.recv()) == {"type": "connection_ack"}
            variables = {"id": self.episode_id, "seat": self.seat, "token": self.token}
            payload = {"query": SEAT_EVENTS, "variables": variables}
            await ws.send(json.dumps({"type": "subscribe", "id": "1", "payload": payload}))
            yield ws

    async def _run(self) -> None:
        async with self._subscribed() as ws:
            async for raw in ws:
                message = json.loads(raw)
                if message["type"] == "ping":
                    await ws.send(json.dumps({"type": "pong"}))
                    continue
                if message["type"] == "complete":
                    return
                if message["type"] != "next" or message["payload"].get("errors"):
                    raise RuntimeError(f"subscription ended: {message}")
                event = message["payload"]["data"]["episodeEvents"]
                self.events.append(event)
                self.subscribed.set()
                if event["yourTurn"] is not None and self.on_your_turn is not None:
                    await self.on_your_turn(event)
            raise RuntimeError("connection closed by the server")

    async def errors(self) -> list[dict[str, Any]]:
        """The errors of a subscription the server must refuse."""
        async with self._subscribed() as ws, asyncio.timeout(10):
            message = json.loads(await ws.recv())
        assert message["type"] in ("error", "next"), message
        found: list[dict[str, Any]] = (
            message["payload"] if message["type"] == "error" else message["payload"]["errors"]
        )
        return found
