"""JSON nested deeper than 64 levels, in every JSON a client sends the GraphQL endpoint: a POST
body, GET `variables` and `extensions`, a websocket message. It is a malformed request (HTTP
400, websocket close 4400), where 5,000 levels were an HTTP 500 (a RecursionError). And JSON of
the wrong shape (a body or a GET parameter that is no object, a websocket message without a type
or with an id that is no string) is malformed too, never a crash."""

import json

import httpx
import pytest

from parley.resolvers.client_json import MAX_DEPTH
from tests.support.server import LEGACY_WS, close_code, init, receive, send, socket

MODELS = "{ models { name } }"
REASON = f"JSON nested deeper than {MAX_DEPTH} levels"


def nested(levels: int) -> str:
    """JSON text of arrays `levels` deep."""
    return "[" * levels + "]" * levels


def body(levels: int) -> str:
    """A request body `levels` deep in all: the body and `variables` are two of them."""
    return json.dumps({"query": MODELS, "variables": {"unused": "@"}}).replace(
        '"@"', nested(levels - 2)
    )


async def get_with(api_url: str, parameter: str, text: str) -> httpx.Response:
    """A GET of a small query with `parameter` (variables or extensions) as `text`."""
    async with httpx.AsyncClient(base_url=api_url, timeout=30) as http:
        return await http.get(
            "/graphql",
            params={"query": MODELS, parameter: text},
            headers={"accept": "application/json"},
        )


async def test_a_body_nested_past_the_limit_is_malformed(api_url: str) -> None:
    async with httpx.AsyncClient(base_url=api_url, timeout=30) as http:
        answers = {
            levels: await http.post(
                "/graphql", content=body(levels), headers={"content-type": "application/json"}
            )
            for levels in (MAX_DEPTH, MAX_DEPTH + 1, 5_000)
        }
    served = answers.pop(MAX_DEPTH)
    assert served.status_code == 200 and "errors" not in served.json(), served.text
    for response in answers.values():
        assert response.status_code == 400, response.text
        assert REASON in response.text


@pytest.mark.parametrize("parameter", ["variables", "extensions"])
@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 5_000])
async def test_get_parameters_nested_too_deep_are_malformed(
    api_url: str, parameter: str, levels: int
) -> None:
    text = '{"x": ' + nested(levels - 1) + "}"
    response = await get_with(api_url, parameter, text)
    assert response.status_code == 400, response.text
    assert REASON in response.text


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 5_000])
async def test_a_websocket_message_nested_too_deep_closes_4400(api_url: str, levels: int) -> None:
    async with socket(api_url) as ws:
        await init(ws)
        message = json.dumps(
            {"id": "1", "type": "subscribe", "payload": {"query": MODELS, "variables": "@"}}
        )
        await ws.send(message.replace('"@"', nested(levels - 2)))
        assert await close_code(ws) == (4400, "WebSocket message must be valid JSON")


async def test_the_legacy_protocol_ignores_a_message_nested_too_deep(api_url: str) -> None:
    async with socket(api_url, protocol=LEGACY_WS) as ws:
        await ws.send(nested(5_000))
        await send(ws, {"type": "connection_init", "payload": {}})
        assert await receive(ws) == {"type": "connection_ack"}


async def test_a_query_over_the_legacy_protocol_is_refused_in_words_not_as_a_crash(
    api_url: str,
) -> None:
    """graphql-ws carries subscriptions only: a query sent there is told so, with no INTERNAL."""
    async with socket(api_url, protocol=LEGACY_WS) as ws:
        await send(ws, {"type": "connection_init", "payload": {}})
        assert await receive(ws) == {"type": "connection_ack"}
        await send(ws, {"id": "1", "type": "start", "payload": {"query": MODELS}})
        answer = await receive(ws)
        while answer["type"] == "ka":  # keep-alives come first
            answer = await receive(ws)
    assert answer["type"] in {"error", "data"}, answer
    text = json.dumps(answer)
    assert "INTERNAL" not in text and "Unexpected error" not in text, answer
    assert answer["payload"]["message"] == "queries are not allowed", answer


@pytest.mark.parametrize("text", ['"query"', "null", "1", "1e999999", "true"])
async def test_a_body_that_is_json_but_no_object_is_malformed(api_url: str, text: str) -> None:
    """A POST body of valid JSON that is not an object (a string, null, a number: `1e999999`
    reads as infinity) reached Strawberry's `data.get("query")`: HTTP 500, an AttributeError
    logged at ERROR. An array is refused as a batch, and an object of the wrong shape as 400."""
    async with httpx.AsyncClient(base_url=api_url, timeout=30) as http:
        response = await http.post(
            "/graphql", content=text, headers={"content-type": "application/json"}
        )
    assert response.status_code == 400, (response.status_code, response.text)


@pytest.mark.parametrize("parameter", ["variables", "extensions"])
@pytest.mark.parametrize("text", ['"x"', "1", "[1]", "true", "1e999999"])
async def test_get_parameters_of_json_that_is_no_object_are_malformed(
    api_url: str, parameter: str, text: str
) -> None:
    """GET `variables` and `extensions` are read as JSON of any type, and refused (400) when
    that is not an object, as Strawberry refuses them in a body."""
    response = await get_with(api_url, parameter, text)
    assert response.status_code == 400, response.text
    assert f"`{parameter}` must be an object or null" in response.text


@pytest.mark.parametrize("operation_id", [[1], {}, None])
async def test_a_complete_message_naming_no_operation_closes_4400(
    api_url: str, operation_id: object
) -> None:
    """A `complete` whose id is a list or an object crashed the handler (an unhashable key:
    logged at ERROR, the socket dropped with 1006); an id that is no string is malformed."""
    async with socket(api_url) as ws:
        await init(ws)
        await send(ws, {"id": operation_id, "type": "complete"})
        assert await close_code(ws) == (4400, "Failed to parse message")


async def test_the_legacy_protocol_ignores_a_message_of_no_type(api_url: str) -> None:
    """A legacy graphql-ws message without `type` (`{}`) crashed the handler (a KeyError: logged
    at ERROR, the socket dropped with 1006); it is ignored, as a frame that is no JSON is."""
    async with socket(api_url, protocol=LEGACY_WS) as ws:
        await send(ws, {"type": "connection_init", "payload": {}})
        assert await receive(ws) == {"type": "connection_ack"}
        await send(ws, {})
        await send(ws, {"type": "stop"})
        await send(ws, {"id": "1", "type": "start", "payload": {"query": MODELS}})
        answer = await receive(ws)
        while answer["type"] == "ka":
            answer = await receive(ws)
    assert answer == {"type": "error", "id": "1", "payload": {"message": "queries are not allowed"}}
