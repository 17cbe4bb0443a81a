"""An in-process uvicorn serving the app with chosen settings, an HTTP GraphQL client and a raw
websocket client."""

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn
import websockets
from starlette.applications import Starlette
from websockets.asyncio.client import ClientConnection

from bench.support.simulation import START, make_world, start_input
from parley.graph.app import create_app
from parley.graph.settings import Settings
from parley.storage.embedded import free_port

TRANSPORT_WS = websockets.Subprotocol("graphql-transport-ws")
LEGACY_WS = websockets.Subprotocol("graphql-ws")
WAIT = 5.0
"""Seconds to wait for an answer the server must give promptly."""


CREATE_AGENT = """
mutation($input: CreateAgentInput!) {
  createAgent(input: $input) {
    agent { id firstName lastName name age occupation gender secret moralValues tag }
    userErrors { field message code }
  }
}"""
CREATE_SCENARIO = """
mutation($input: CreateScenarioInput!) {
  createScenario(input: $input) { scenario { id } userErrors { field message code } }
}"""


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

    async def mutate(
        self, field: str, input_type: str, input: dict[str, Any], returns: str = ""
    ) -> dict[str, Any]:
        """The payload of mutation `field(input:)`, with `returns` selected; it must succeed
        with no userErrors."""
        document = (
            f"mutation($input: {input_type}!) {{ {field}(input: $input) "
            f"{{ {returns} userErrors {{ field message code }} }} }}"
        )
        payload: dict[str, Any] = (await self.data(document, {"input": input}))[field]
        assert payload["userErrors"] == [], payload
        return payload


@asynccontextmanager
async def serve(redis_url: str, data_dir: Path, **overrides: Any) -> AsyncIterator[str]:
    """The app with `overrides` on test settings (no seeding, no worker unless overridden); yields
    its base URL."""
    async with serve_app(redis_url, data_dir, **overrides) as (url, _):
        yield url


@asynccontextmanager
async def serve_app(
    redis_url: str, data_dir: Path, **overrides: Any
) -> AsyncIterator[tuple[str, Starlette]]:
    """As `serve`, yielding the app too (its state holds the running services)."""
    options: dict[str, Any] = {"seed": False, "worker": False, **overrides}
    settings = Settings(redis_url=redis_url, data_dir=data_dir, **options)
    port = free_port()
    app = create_app(settings)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
            raise RuntimeError("uvicorn stopped before it started")
        await asyncio.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}", app
    finally:
        server.should_exit = True
        await task


async def graphql(
    base_url: str, query: str, variables: dict[str, Any] | None = None, token: str | None = None
) -> dict[str, Any]:
    """POST a document that must succeed; its data."""
    headers = {"authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        response = await http.post(
            "/graphql", json={"query": query, "variables": variables}, headers=headers
        )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert "errors" not in body, body
    data: dict[str, Any] = body["data"]
    return data


CANCEL = "mutation($id: ID!) { cancelSimulation(input: {id: $id}) { userErrors { message } } }"


@asynccontextmanager
async def queued_episode(
    base_url: str, model: str, tag: str, token: str | None = None
) -> AsyncIterator[str]:
    """An episode that stays QUEUED (the app runs no worker); cancelled afterwards so that no
    later worker picks it up."""
    scenario, agents = await make_world(tag)
    variables = {"input": start_input(scenario, agents, model, tag=tag)}
    started = (await graphql(base_url, START, variables, token))["startSimulation"]
    assert started["userErrors"] == [] and started["episode"]["status"] == "QUEUED", started
    episode_id: str = started["episode"]["id"]
    try:
        yield episode_id
    finally:
        await graphql(base_url, CANCEL, {"id": episode_id}, token)


def ws_url(base_url: str) -> str:
    return base_url.replace("http://", "ws://") + "/graphql"


@asynccontextmanager
async def socket(
    base_url: str,
    protocol: str | None = TRANSPORT_WS,
    origin: str | None = None,
) -> AsyncIterator[ClientConnection]:
    """A raw websocket to /graphql offering one subprotocol (or none)."""
    async with websockets.connect(
        ws_url(base_url),
        subprotocols=[websockets.Subprotocol(protocol)] if protocol else None,
        origin=websockets.Origin(origin) if origin else None,
        open_timeout=WAIT,
    ) as ws:
        yield ws


async def send(ws: ClientConnection, message: dict[str, Any]) -> None:
    await ws.send(json.dumps(message))


async def receive(ws: ClientConnection) -> dict[str, Any]:
    """The next message; fails if the server is silent or closes the socket."""
    async with asyncio.timeout(WAIT):
        raw = await ws.recv()
    message: dict[str, Any] = json.loads(raw)
    return message


async def init(ws: ClientConnection, payload: dict[str, Any] | None = None) -> None:
    """connection_init, and insist on connection_ack."""
    await send(ws, {"type": "connection_init", "payload": payload or {}})
    assert await receive(ws) == {"type": "connection_ack"}


async def close_code(ws: ClientConnection, timeout: float = WAIT) -> tuple[int | None, str]:
    """Wait for the server to close the socket (ignoring messages); its code and reason."""
    async with asyncio.timeout(timeout):
        await ws.wait_closed()
    reason = ws.close_reason or ""
    return ws.close_code, reason


async def create_agent(gql: GraphQLClient, **fields: Any) -> dict[str, Any]:
    base = {"firstName": "Ada", "lastName": "Byron", "tag": "agents-test"}
    payload = (await gql.data(CREATE_AGENT, {"input": {**base, **fields}}))["createAgent"]
    assert payload["userErrors"] == []
    agent: dict[str, Any] = payload["agent"]
    return agent
