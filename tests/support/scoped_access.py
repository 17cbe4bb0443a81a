"""The authorization matrix for a scoped credential (a seat token, a rater token): every root
field of the schema, sent under one credential over one transport, each answer judged as one
`Outcome`; and the requests, websocket steps and judgements the attacks on such credentials
share."""

import asyncio
import json
from collections.abc import Callable
from enum import StrEnum
from typing import Any

import httpx
import websockets
from graphql import GraphQLInputObjectType, GraphQLNonNull, OperationType, parse, validate
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from parley.graph.app import SUBSCRIPTIONS_OVER_WEBSOCKETS
from parley.graph.rater_access import RATER_REFUSED
from parley.graph.schema import build_schema
from parley.graph.scoped_fields import ScopedField
from parley.graph.seat_access import REFUSED
from tests.support.operations import Path, RootField, document, root_fields
from tests.support.server import LEGACY_WS, TRANSPORT_WS, WAIT, close_code, receive, send, socket

SCHEMA = build_schema()._schema
ROOTS = root_fields(SCHEMA)
DOOR: dict[str, int] = {TRANSPORT_WS: 4403, LEGACY_WS: 1011}
"""The close code of a websocket refused at connection_init, by protocol."""
REFUSALS = (REFUSED, RATER_REFUSED)
"""The words of every scoped credential's refusal."""


class Transport(StrEnum):
    """How a request travels; a websocket one's value is its subprotocol."""

    POST = "HTTP POST"
    GET = "HTTP GET"
    TRANSPORT_WS = TRANSPORT_WS
    LEGACY_WS = LEGACY_WS


class Outcome(StrEnum):
    AT_THE_DOOR = "refused before any operation (HTTP 401, websocket closed at connection_init)"
    REFUSED = "refused as outside the credential's scope (FORBIDDEN), nothing run"
    RUNS = "run: its resolver answered"
    NOT_OVER_GET = "refused by Strawberry: a GET carries only queries (HTTP 400)"
    SUBSCRIPTIONS_ONLY = "refused by Strawberry: graphql-ws carries only subscriptions"
    WEBSOCKETS_ONLY = "refused: subscriptions are served over websockets only"
    OTHER = "anything else (a document the schema refuses, a crash)"


Found = dict[str, tuple[Outcome, str]]
"""Each root field's outcome, by name, with the answer it was judged from."""


async def http(
    url: str,
    query: str,
    authorization: str | None,
    variables: dict[str, Any] | None = None,
    operation_name: str | None = None,
    method: str = "POST",
    client: httpx.AsyncClient | None = None,
) -> httpx.Response:
    headers = {"authorization": authorization} if authorization else {}
    body: dict[str, Any] = {"query": query, "variables": variables or {}}
    if operation_name:
        body["operationName"] = operation_name
    if client is None:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            return await http(url, query, authorization, variables, operation_name, method, client)
    if method == "GET":
        params = {**body, "variables": json.dumps(body["variables"])}
        return await client.get("/graphql", params=params, headers=headers)
    return await client.post("/graphql", json=body, headers=headers)


def messages(body: dict[str, Any]) -> list[str]:
    return [error["message"] for error in body.get("errors") or []]


async def answer(ws: ClientConnection, operation_id: str) -> dict[str, Any]:
    """The first message about `operation_id` (keep-alives and others' skipped)."""
    while True:
        message = await receive(ws)
        if message.get("id") == operation_id:
            return message


async def opened(ws: ClientConnection, payload: dict[str, Any]) -> bool:
    """Send connection_init; whether it was acknowledged (else the server refused it)."""
    await send(ws, {"type": "connection_init", "payload": payload})
    try:
        while True:
            message = await receive(ws)
            if message["type"] == "connection_ack":
                return True
            if message["type"] == "connection_error":
                return False
    except ConnectionClosed:
        return False


async def shut_at_the_door(url: str, protocol: str, payload: dict[str, Any]) -> bool:
    """Whether a websocket offering `payload` in connection_init is refused and closed with
    the protocol's refusal code."""
    async with socket(url, protocol) as ws:
        if await opened(ws, payload):
            return False
        code, _ = await close_code(ws)
    return code == DOOR[protocol]


def start(protocol: str, operation_id: str, payload: dict[str, Any]) -> dict[str, Any]:
    kind = "subscribe" if protocol == TRANSPORT_WS else "start"
    return {"id": operation_id, "type": kind, "payload": payload}


def token_paths(root: RootField, name: str) -> list[Path]:
    """Where a field takes a credential's token: an argument, or an input field, named `name`
    (seatToken, raterToken)."""
    found: list[Path] = []
    for argument_name, argument in root.field.args.items():
        if argument_name == name:
            found.append((argument_name,))
        inner = (
            argument.type.of_type if isinstance(argument.type, GraphQLNonNull) else argument.type
        )
        if isinstance(inner, GraphQLInputObjectType) and name in inner.fields:
            found.append((argument_name, name))
    return found


type Declarations = dict[OperationType, dict[str, ScopedField]]
"""A credential's fields, as graph/seat_access.py and graph/rater_access.py declare them."""


def scoped_document(
    root: RootField, declarations: Declarations, token_name: str, token: str, record: str
) -> str:
    """`root` with `token` wherever it takes `token_name`; a declared field names part 0 of
    `record`, as the credential's holder would, and any other field gets values that name no
    record."""
    declared = declarations.get(root.operation, {}).get(root.name)
    given: dict[Path, object] = {path: token for path in token_paths(root, token_name)}
    if declared:
        given |= {declared.record: record, declared.part: 0}
    return document(root, given)


def declared_roots(declarations: Declarations) -> dict[tuple[OperationType, str], RootField]:
    """The schema's root fields by operation and name, once each declared field is checked to
    be one of them and each path of its declaration to start at one of its arguments."""
    roots = {(root.operation, root.name): root for root in ROOTS}
    for operation, fields in declarations.items():
        for name, declared in fields.items():
            assert (operation, name) in roots, f"{operation.value} {name} is not a root field"
            for path in declared.paths:
                assert roots[operation, name].field.args.get(path[0]) is not None, (name, path)
    return roots


def assert_valid(matrix_document: Callable[[RootField], str]) -> None:
    """Every root field's document is one the schema accepts."""
    for root in ROOTS:
        errors = validate(SCHEMA, parse(matrix_document(root)))
        assert errors == [], (root.name, errors)


def refused_by_transport(root: RootField, transport: Transport) -> Outcome | None:
    """What a transport refuses whatever the credential: a subscription over HTTP, a mutation
    over GET, a query or mutation over graphql-ws; None when it carries the field."""
    over_http = transport in (Transport.POST, Transport.GET)
    if root.operation == OperationType.SUBSCRIPTION and over_http:
        return Outcome.WEBSOCKETS_ONLY
    if root.operation == OperationType.MUTATION and transport == Transport.GET:
        return Outcome.NOT_OVER_GET
    if root.operation != OperationType.SUBSCRIPTION and transport == Transport.LEGACY_WS:
        return Outcome.SUBSCRIPTIONS_ONLY
    return None


def judged(result: dict[str, Any], refusal_words: str) -> Outcome:
    """A GraphQL result: refused (in the credential's own words, coded, nothing run), or run
    (data, an error of a field, or an error coded by a resolver), or neither."""
    errors = result.get("errors") or []
    if any(e.get("message") in REFUSALS for e in errors):
        coded = all((e.get("extensions") or {}).get("code") == "FORBIDDEN" for e in errors)
        own_words = all(e.get("message") == refusal_words for e in errors)
        nothing_run = result.get("data") is None
        return Outcome.REFUSED if coded and own_words and nothing_run else Outcome.OTHER
    if any(e.get("message") == SUBSCRIPTIONS_OVER_WEBSOCKETS for e in errors):
        return Outcome.WEBSOCKETS_ONLY
    if result.get("data") is not None or any(
        "path" in e or (e.get("extensions") or {}).get("code") for e in errors
    ):
        return Outcome.RUNS
    return Outcome.OTHER


def refusal(payload: dict[str, Any] | list[dict[str, Any]], refusal_words: str) -> Outcome:
    """A websocket `error` message's payload (a list of errors, one in graphql-ws): the
    credential's refusal, or graphql-ws's refusal of a query or mutation (which the error policy
    masks as an unexpected error when Strawberry raises it as an exception)."""
    errors = payload if isinstance(payload, list) else [payload]
    said = [e.get("message", "") for e in errors]
    if said == [refusal_words]:
        return Outcome.REFUSED
    if len(said) == 1 and (said[0] == "Unexpected error." or "are not allowed" in said[0]):
        return Outcome.SUBSCRIPTIONS_ONLY
    return Outcome.OTHER


async def over_http(
    client: httpx.AsyncClient,
    transport: Transport,
    query: str,
    authorization: str | None,
    refusal_words: str,
) -> tuple[Outcome, str]:
    method = "GET" if transport == Transport.GET else "POST"
    response = await http(str(client.base_url), query, authorization, method=method, client=client)
    if response.status_code == 401:
        return Outcome.AT_THE_DOOR, response.text
    if response.status_code == 400 and "mutations are not allowed" in response.text:
        return Outcome.NOT_OVER_GET, response.text
    if response.status_code != 200:
        return Outcome.OTHER, f"{response.status_code} {response.text}"
    return judged(response.json(), refusal_words), response.text


async def over_websocket(
    url: str,
    transport: Transport,
    connection_init: dict[str, Any],
    queries: dict[str, str],
    refusal_words: str,
) -> Found:
    """Every field's query (by field name) as one operation of one connection: each one's first
    answer judged."""
    protocol = websockets.Subprotocol(transport)
    names = list(queries)
    found: Found = {}
    async with socket(url, protocol) as ws:
        if not await opened(ws, connection_init):
            code, reason = await close_code(ws)
            door = code == DOOR[protocol]
            outcome = Outcome.AT_THE_DOOR if door else Outcome.OTHER
            return {name: (outcome, f"closed {code} {reason}") for name in names}
        for number, name in enumerate(names):
            await send(ws, start(protocol, str(number), {"query": queries[name]}))
        while len(found) < len(names):
            async with asyncio.timeout(WAIT * 2):
                message = await receive(ws)
            if "id" not in message or names[int(message["id"])] in found:
                continue
            name = names[int(message["id"])]
            payload: Any = message.get("payload")
            if message["type"] in ("next", "data"):
                found[name] = (judged(payload, refusal_words), json.dumps(message))
                stop = "complete" if protocol == TRANSPORT_WS else "stop"
                await send(ws, {"id": message["id"], "type": stop})
            elif message["type"] == "error":
                found[name] = (refusal(payload, refusal_words), json.dumps(message))
            else:
                found[name] = (Outcome.OTHER, json.dumps(message))
    return found


async def run_matrix(
    url: str,
    transport: Transport,
    authorization: str | None,
    connection_init: dict[str, Any],
    matrix_document: Callable[[RootField], str],
    refusal_words: str,
) -> Found:
    """Every root field's `matrix_document` sent under one credential (its `authorization`
    header over HTTP, its `connection_init` payload over a websocket) over `transport`."""
    queries = {root.name: matrix_document(root) for root in ROOTS}
    if transport not in (Transport.POST, Transport.GET):
        return await over_websocket(url, transport, connection_init, queries, refusal_words)
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        return {
            name: await over_http(client, transport, query, authorization, refusal_words)
            for name, query in queries.items()
        }


def assert_as_expected(found: Found, expected: Callable[[RootField], Outcome], own: bool) -> None:
    """Every root field's outcome is the expected one; with `own` (the right credential), each
    that runs answers with data of its own."""
    wrong = {
        f"{root.operation.value} {root.name}": (expected(root), found[root.name])
        for root in ROOTS
        if found[root.name][0] != expected(root)
    }
    assert wrong == {}
    if own:
        for root in ROOTS:
            if found[root.name][0] == Outcome.RUNS:
                answered = json.loads(found[root.name][1])
                data = answered.get("payload", answered)["data"]
                assert data[root.name] is not None, (root.name, answered)
