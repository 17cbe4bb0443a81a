"""graphql-transport-ws conformance: each rule a server must enforce, and its close code."""

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from bench.support.fake_llm import FakeLLM
from bench.support.simulation import STATUS
from tests.support.server import (
    LEGACY_WS,
    close_code,
    init,
    queued_episode,
    receive,
    send,
    serve,
    socket,
)

INIT_TIMEOUT = 1.0


@pytest.fixture(scope="module")
async def app(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    data_dir = tmp_path_factory.mktemp("transport")
    async with serve(redis_url, data_dir, ws_init_timeout=INIT_TIMEOUT) as url:
        yield url


async def test_no_connection_init_in_time_closes_4408(app: str) -> None:
    began = time.monotonic()
    async with socket(app) as ws:
        code, reason = await close_code(ws, timeout=INIT_TIMEOUT + 3)
    assert (code, reason) == (4408, "Connection initialisation timeout")
    assert time.monotonic() - began >= INIT_TIMEOUT * 0.9


async def test_connection_init_in_time_keeps_the_socket_open(app: str) -> None:
    async with socket(app) as ws:
        await init(ws)
        await asyncio.sleep(INIT_TIMEOUT + 0.5)
        await send(ws, {"type": "ping"})
        assert await receive(ws) == {"type": "pong"}


async def test_a_second_subscribe_with_an_active_id_closes_4409(
    app: str, fake_llm: FakeLLM
) -> None:
    async with (
        queued_episode(app, fake_llm.model_name(), "transport-4409") as episode_id,
        socket(app) as ws,
    ):
        await init(ws)
        subscribe = {
            "id": "same",
            "type": "subscribe",
            "payload": {"query": STATUS, "variables": {"id": episode_id}},
        }
        await send(ws, subscribe)
        first = await receive(ws)
        assert first["payload"]["data"]["episodeStatus"]["status"] == "QUEUED"
        await send(ws, subscribe)  # the first is still waiting for the next status
        code, reason = await close_code(ws)
    assert (code, reason) == (4409, "Subscriber for same already exists")


async def test_an_id_is_free_again_once_completed(app: str) -> None:
    async with socket(app) as ws:
        await init(ws)
        subscribe = {"id": "1", "type": "subscribe", "payload": {"query": "{ __typename }"}}
        for _ in range(2):
            await send(ws, subscribe)
            assert await receive(ws) == {
                "id": "1",
                "type": "next",
                "payload": {"data": {"__typename": "Query"}},
            }
            assert await receive(ws) == {"id": "1", "type": "complete"}


async def test_subscribe_before_connection_ack_closes_4401(app: str) -> None:
    async with socket(app) as ws:
        payload = {"query": STATUS, "variables": {"id": "no-such-episode"}}
        await send(ws, {"id": "1", "type": "subscribe", "payload": payload})
        code, reason = await close_code(ws)
    assert (code, reason) == (4401, "Unauthorized")


async def test_a_second_connection_init_closes_4429(app: str) -> None:
    async with socket(app) as ws:
        await init(ws)
        await send(ws, {"type": "connection_init", "payload": {}})
        code, reason = await close_code(ws)
    assert (code, reason) == (4429, "Too many initialisation requests")


@pytest.mark.parametrize(
    ("frame", "reason"),
    [
        ("not json", "WebSocket message must be valid JSON"),
        ('{"type": "no_such_type"}', "Unknown message type: no_such_type"),
        ('{"id": "1", "type": "subscribe"}', "Failed to parse message"),
        ('{"payload": {}}', "Failed to parse message"),
    ],
)
async def test_a_malformed_message_closes_4400(app: str, frame: str, reason: str) -> None:
    async with socket(app) as ws:
        await init(ws)
        await ws.send(frame)
        assert await close_code(ws) == (4400, reason)


@pytest.mark.parametrize(
    "frame",
    [
        "[]",
        "42",
        "null",
        '"subscribe"',
        '{"id": "1", "type": "subscribe", "payload": "{ __typename }"}',
        '{"id": "1", "type": "subscribe", "payload": {"query": 5}}',
        '{"id": "1", "type": "subscribe", "payload": {"query": "{ __typename }", "variables": 1}}',
        '{"id": 1, "type": "subscribe", "payload": {"query": "{ __typename }"}}',
    ],
)
async def test_a_message_of_the_wrong_shape_closes_4400(app: str, frame: str) -> None:
    """Valid JSON that is not a message object, or a subscribe with a malformed payload: a
    protocol error, not a crash of the connection (which the client sees as 1006)."""
    async with socket(app) as ws:
        await init(ws)
        await ws.send(frame)
        assert await close_code(ws) == (4400, "Failed to parse message")


async def test_the_legacy_protocol_ignores_messages_of_the_wrong_shape(app: str) -> None:
    async with socket(app, protocol=LEGACY_WS) as ws:
        for frame in ("[]", "null", '{"id": "1", "type": "start", "payload": []}'):
            await ws.send(frame)
        await send(ws, {"type": "connection_init", "payload": {}})
        assert await receive(ws) == {"type": "connection_ack"}
        payload = {"query": STATUS, "variables": {"id": "no-such-episode"}}
        await send(ws, {"id": "1", "type": "start", "payload": payload})
        message = await receive(ws)
        while message["type"] == "ka":  # keep-alive, sent right after the ack
            message = await receive(ws)
        assert message["type"] == "data" and message["id"] == "1", message
        assert message["payload"]["errors"][0]["message"] == "no episode with id 'no-such-episode'"


async def test_ping_gets_pong(app: str) -> None:
    async with socket(app) as ws:
        await send(ws, {"type": "ping"})  # allowed even before connection_init
        assert await receive(ws) == {"type": "pong"}
        await init(ws)
        await send(ws, {"type": "ping", "payload": {"at": 1}})
        assert (await receive(ws))["type"] == "pong"


@pytest.mark.parametrize("protocol", ["graphql-over-carrier-pigeon", None])
async def test_an_unsupported_subprotocol_closes_4406(app: str, protocol: str | None) -> None:
    async with socket(app, protocol=protocol) as ws:
        assert ws.subprotocol is None
        code, reason = await close_code(ws)
    assert (code, reason) == (4406, "Subprotocol not acceptable")
