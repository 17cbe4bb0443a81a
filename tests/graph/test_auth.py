"""Bearer tokens: every HTTP request and every websocket needs one, except the probes and the
GraphiQL page."""

import logging
import uuid
from collections.abc import AsyncIterator

import httpx
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
from tests.support.tagged import CREATE_TAGGED_AGENT, tagged

TOKENS = "alpha,beta"
BROWSER = "text/html,application/xhtml+xml,*/*;q=0.8"


@pytest.fixture(scope="module")
async def locked(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    async with serve(redis_url, tmp_path_factory.mktemp("locked"), tokens=TOKENS) as url:
        yield url


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer gamma", "Bearer alph", "Bearer", "Basic beta", "beta", "Bearer alpha,beta"],
)
async def test_a_request_without_a_valid_token_is_refused_before_it_runs(
    locked: str, authorization: str | None
) -> None:
    tag = f"auth-{uuid.uuid4().hex[:10]}"
    headers = {"authorization": authorization} if authorization is not None else {}
    async with httpx.AsyncClient(base_url=locked, timeout=30) as http:
        response = await http.post(
            "/graphql",
            json={"query": CREATE_TAGGED_AGENT, "variables": {"tag": tag}},
            headers=headers,
        )
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert "bearer token is required" in response.json()["errors"][0]["message"]
    assert await tagged(locked, tag, token="alpha") == 0


@pytest.mark.parametrize("authorization", ["Bearer beta", "bearer alpha", "Bearer  alpha"])
async def test_a_request_with_a_valid_token_runs(locked: str, authorization: str) -> None:
    async with httpx.AsyncClient(base_url=locked, timeout=30) as http:
        response = await http.post(
            "/graphql",
            json={"query": "{ __typename agents { totalCount } }"},
            headers={"authorization": authorization},
        )
    assert response.status_code == 200, response.text
    assert response.json()["data"]["__typename"] == "Query"


async def test_the_graphiql_page_loads_without_a_token_but_runs_nothing(locked: str) -> None:
    """A browser opens the page without headers; a GET that carries a query is not the page."""
    async with httpx.AsyncClient(base_url=locked, timeout=30) as http:
        page = await http.get("/graphql", headers={"accept": BROWSER})
        query = await http.get(
            "/graphql",
            params={"query": "{ agents { totalCount } }"},
            headers={"accept": BROWSER},
        )
        plain_get = await http.get("/graphql", params={"query": "{ agents { totalCount } }"})
    assert page.status_code == 200 and "graphiql" in page.text.lower()
    assert query.status_code == 401, query.text
    assert "totalCount" not in query.text
    assert plain_get.status_code == 401


async def test_probes_are_open_and_metrics_are_not(locked: str) -> None:
    async with httpx.AsyncClient(base_url=locked, timeout=30) as http:
        healthz = await http.get("/healthz")
        readyz = await http.get("/readyz")
        metrics = await http.get("/metrics")
        metrics_as_page = await http.get("/metrics", headers={"accept": BROWSER})
        metrics_with_token = await http.get("/metrics", headers={"authorization": "Bearer alpha"})
    assert healthz.json() == {"status": "ok"}
    assert readyz.json() == {"status": "ready"}
    assert metrics.status_code == 401
    assert metrics_as_page.status_code == 401  # only the two pages open without a token
    assert metrics_with_token.status_code == 200 and "subscribers" in metrics_with_token.json()


@pytest.mark.parametrize(
    "payload",
    [None, {}, {"authorization": "Bearer gamma"}, {"token": "gamma"}, {"token": ""}, "alpha"],
)
async def test_a_websocket_without_a_valid_token_is_closed_4403(
    locked: str, payload: object
) -> None:
    async with socket(locked) as ws:
        message: dict[str, object] = {"type": "connection_init"}
        if payload is not None:
            message["payload"] = payload
        await send(ws, message)
        code, _ = await close_code(ws)
    # a payload that is not an object is a protocol error (4400) before any token check
    assert code == (4400 if isinstance(payload, str) else 4403)


async def test_a_websocket_with_a_bearer_token_can_subscribe(
    locked: str, fake_llm: FakeLLM
) -> None:
    async with (
        queued_episode(locked, fake_llm.model_name(), "auth-ws", token="beta") as episode_id,
        socket(locked) as ws,
    ):
        await init(ws, {"authorization": "Bearer alpha"})
        payload = {"query": STATUS, "variables": {"id": episode_id}}
        await send(ws, {"id": "1", "type": "subscribe", "payload": payload})
        message = await receive(ws)
        assert message["type"] == "next", message
        assert message["payload"]["data"]["episodeStatus"]["kind"] == "SNAPSHOT"
        assert message["payload"]["data"]["episodeStatus"]["status"] == "QUEUED"


async def test_a_websocket_with_a_token_field_can_subscribe(locked: str) -> None:
    async with socket(locked) as ws:
        await init(ws, {"token": "beta"})
        payload = {"query": STATUS, "variables": {"id": "no-such-episode"}}
        await send(ws, {"id": "1", "type": "subscribe", "payload": payload})
        message = await receive(ws)
        assert message["type"] == "next", message
        errors = message["payload"]["errors"]
        assert errors[0]["message"] == "no episode with id 'no-such-episode'"


async def test_the_legacy_protocol_needs_a_token_too(locked: str) -> None:
    async with socket(locked, protocol=LEGACY_WS) as ws:
        await send(ws, {"type": "connection_init", "payload": {}})
        assert (await receive(ws))["type"] == "connection_error"
        code, _ = await close_code(ws)
    assert code == 1011
    async with socket(locked, protocol=LEGACY_WS) as ws:
        await send(ws, {"type": "connection_init", "payload": {"authorization": "Bearer beta"}})
        assert (await receive(ws))["type"] == "connection_ack"


async def test_the_legacy_protocol_cannot_start_before_connection_init(locked: str) -> None:
    """Starting an operation without connection_init would skip the token check."""
    async with socket(locked, protocol=LEGACY_WS) as ws:
        payload = {"query": STATUS, "variables": {"id": "no-such-episode"}}
        await send(ws, {"id": "1", "type": "start", "payload": payload})
        code, _ = await close_code(ws)
    assert code == 4401


async def test_an_open_api_says_so_at_start_up(
    redis_url: str, tmp_path_factory: pytest.TempPathFactory, caplog: pytest.LogCaptureFixture
) -> None:
    warning = "no PARLEY_TOKENS set"
    with caplog.at_level(logging.WARNING, logger="parley.graph.app"):
        async with serve(redis_url, tmp_path_factory.mktemp("open"), tokens=""):
            pass
        assert any(warning in r.getMessage() for r in caplog.records)
        caplog.clear()
        async with serve(redis_url, tmp_path_factory.mktemp("closed"), tokens=TOKENS):
            pass
        assert not any(warning in r.getMessage() for r in caplog.records)
