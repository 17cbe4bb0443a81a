"""A rater credential against a server with API tokens (graph/rater_access.py, judged with the
seats' in graph/seat_access.py): a forged, renewed (revoked) or closed (expired) one is refused
at the door, another study's or another rater's runs nothing of this rater's, a document of
two operations must name the one to run, and a real one runs only its own rater's three
fields, over HTTP POST and GET and both websocket protocols. Then the whole matrix: every root
field of the schema, under every kind of rater credential, over every transport (the seat
matrix, tests/attacks/test_seat_access.py, covers the rater fields under seat credentials)."""

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import httpx
import pytest
from graphql import OperationType, parse, validate

from parley.graph.app import SUBSCRIPTIONS_OVER_WEBSOCKETS
from parley.graph.rater_access import RATER_FIELDS, RATER_REFUSED
from parley.graph.seat_access import NAME_THE_OPERATION, REFUSED
from tests.attacks.test_seat_access import (
    ROOTS,
    SCHEMA,
    Outcome,
    Transport,
    answer,
    messages,
    opened,
    start,
)
from tests.support.operations import Path, RootField, document
from tests.support.server import (
    LEGACY_WS,
    TRANSPORT_WS,
    WAIT,
    close_code,
    graphql,
    receive,
    send,
    serve,
    socket,
)
from tests.support.studies import CLOSE, CREATE_STUDY, MODEL, RENEW, SECRET, finished_episodes

API_TOKEN = "alpha"
TWO_OPERATIONS = """
query A($tag: String) { agents(first: 2, filter: {tag: $tag}) { nodes { name secret } } }
query B { __typename }"""
STREAM = """
subscription S($id: ID!) {
  episodeEvents(id: $id) { kind episode { agentModels agents { secret } } }
}
query B { __typename }"""


@dataclass(frozen=True)
class World:
    """A server with an API token; study A with two raters, study B with one, a rater whose
    link was renewed (the old token revoked) and a closed study's rater (expired)."""

    url: str
    study: str
    tokens: list[str]
    """Study A's raters' tokens."""
    episode: str
    """An episode of study A."""
    tag: str
    other_study: str = ""
    other_study_token: str = ""
    revoked: str = ""
    expired: str = ""


async def new_study(url: str, episodes: list[str], raters: int) -> tuple[str, list[str]]:
    variables = {"input": {"name": "Access", "episodes": {"ids": episodes}, "raters": raters}}
    payload = (await graphql(url, CREATE_STUDY, variables, API_TOKEN))["createRatingStudy"]
    assert payload["userErrors"] == [], payload
    return payload["study"]["id"], [link["token"] for link in payload["raterLinks"]]


@pytest.fixture(scope="module")
async def world(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[World]:
    async with serve(redis_url, tmp_path_factory.mktemp("rater-access"), tokens=API_TOKEN) as url:
        tag = f"attack-rater-{uuid.uuid4().hex[:8]}"
        episodes = await finished_episodes(tag, 2)
        study, tokens = await new_study(url, episodes, 2)
        other, (other_token,) = await new_study(url, episodes, 1)
        renewed, (revoked,) = await new_study(url, episodes, 1)
        await graphql(url, RENEW, {"study": renewed, "rater": 0}, API_TOKEN)
        closed, (expired,) = await new_study(url, episodes, 1)
        await graphql(url, CLOSE, {"id": closed}, API_TOKEN)
        yield World(url, study, tokens, episodes[0], tag, other, other_token, revoked, expired)


async def http(
    world: World,
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
    async with httpx.AsyncClient(base_url=world.url, timeout=30) as own:
        sender = client or own
        if method == "GET":
            params = {**body, "variables": json.dumps(body["variables"])}
            return await sender.get("/graphql", params=params, headers=headers)
        return await sender.post("/graphql", json=body, headers=headers)


def assignment(study: str, rater: int, token: str) -> dict[str, Any]:
    return {
        "query": "query($study: ID!, $rater: Int!, $token: String!) { raterAssignment("
        "studyId: $study, rater: $rater, raterToken: $token) { rater current { scenario } } }",
        "variables": {"study": study, "rater": rater, "token": token},
    }


# The attacks


@pytest.mark.parametrize("method", ["POST", "GET"])
@pytest.mark.parametrize("kind", ["forged", "revoked", "expired"])
async def test_a_rater_token_that_opens_nothing_is_refused_at_the_door(
    world: World, method: str, kind: str
) -> None:
    token = {"forged": "x" * 32, "revoked": world.revoked, "expired": world.expired}[kind]
    response = await http(world, TWO_OPERATIONS, f"Rater {token}", {"tag": world.tag}, "A", method)
    assert response.status_code == 401, response.text
    assert SECRET not in response.text


@pytest.mark.parametrize("protocol", [TRANSPORT_WS, LEGACY_WS])
@pytest.mark.parametrize("kind", ["forged", "revoked", "expired"])
async def test_a_rater_token_that_opens_nothing_opens_no_websocket(
    world: World, protocol: str, kind: str
) -> None:
    token = {"forged": "x" * 32, "revoked": world.revoked, "expired": world.expired}[kind]
    async with socket(world.url, protocol) as ws:
        assert not await opened(ws, {"raterToken": token})
        code, _ = await close_code(ws)
    assert code == (4403 if protocol == TRANSPORT_WS else 1011)


async def test_another_studys_rater_reads_nothing_of_this_one(world: World) -> None:
    """Holding study B's credential (and its token in the argument), or rater 1's of study A,
    reads nothing of rater 0 of study A; naming a study that does not exist is refused in the
    same words."""
    refused = {
        "data": None,
        "errors": [{"message": RATER_REFUSED, "extensions": {"code": "FORBIDDEN"}}],
    }
    for credential, study, rater, token in (
        (world.other_study_token, world.study, 0, world.other_study_token),
        (world.other_study_token, world.study, 0, world.tokens[0]),
        (world.tokens[1], world.study, 0, world.tokens[0]),
        (world.other_study_token, "no-such-study", 0, world.other_study_token),
    ):
        body = (
            await http(
                world, **assignment(study, rater, token), authorization=f"Rater {credential}"
            )
        ).json()
        assert body == refused
    own = await http(
        world,
        **assignment(world.other_study, 0, world.other_study_token),
        authorization=f"Rater {world.other_study_token}",
    )
    assert own.json()["data"]["raterAssignment"]["current"]["scenario"], own.text


@pytest.mark.parametrize("method", ["POST", "GET"])
async def test_a_rater_cannot_run_the_first_of_several_operations(
    world: World, method: str
) -> None:
    rater = f"Rater {world.tokens[0]}"
    tag = {"tag": world.tag}
    unnamed = (await http(world, TWO_OPERATIONS, rater, tag, method=method)).json()
    assert unnamed.get("data") is None and messages(unnamed) == [NAME_THE_OPERATION], unnamed
    named = (await http(world, TWO_OPERATIONS, rater, tag, "A", method)).json()
    assert named.get("data") is None and messages(named) == [RATER_REFUSED], named
    harmless = (await http(world, TWO_OPERATIONS, rater, tag, "B", method)).json()
    assert harmless == {"data": {"__typename": "Query"}}


@pytest.mark.parametrize("protocol", [TRANSPORT_WS, LEGACY_WS])
async def test_a_rater_websocket_cannot_stream_the_episode_it_rates(
    world: World, protocol: str
) -> None:
    async with socket(world.url, protocol) as ws:
        assert await opened(ws, {"raterToken": world.tokens[0]})
        for operation_id, name, refusal in (
            ("1", None, NAME_THE_OPERATION),
            ("2", "S", RATER_REFUSED),
        ):
            request = {"query": STREAM, "variables": {"id": world.episode}, "operationName": name}
            await send(ws, start(protocol, operation_id, request))
            message = await answer(ws, operation_id)
            assert message["type"] == "error", message
            said = json.dumps(message["payload"], ensure_ascii=False)
            assert refusal in said and SECRET not in said and MODEL not in said


async def test_a_rater_reads_and_saves_only_its_own(world: World) -> None:
    rater = f"Rater {world.tokens[0]}"
    own = (
        await http(world, **assignment(world.study, 0, world.tokens[0]), authorization=rater)
    ).json()
    assert own["data"]["raterAssignment"]["rater"] == 0
    save = """
    mutation($input: SaveRatingInput!) { saveRating(input: $input) { userErrors { code } } }"""
    theirs = {
        "studyId": world.study,
        "rater": 1,
        "raterToken": world.tokens[1],
        "position": 0,
        "scores": [],
    }
    body = (await http(world, save, rater, {"input": theirs})).json()
    assert body.get("data") is None and messages(body) == [RATER_REFUSED]


async def test_without_tokens_a_rater_header_is_meaningless(
    redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    async with serve(redis_url, tmp_path_factory.mktemp("open-raters")) as url:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            response = await client.post(
                "/graphql",
                json={"query": "{ agents(first: 1) { totalCount } }"},
                headers={"authorization": "Rater made-up"},
            )
        assert response.status_code == 200 and "totalCount" in response.json()["data"]["agents"]


# The matrix: every root field x every rater credential x every transport


class Credential(StrEnum):
    FORGED = "a forged rater token"
    REVOKED = "a renewed rater's old token"
    EXPIRED = "a closed study's rater token"
    OTHER_STUDY = "a real rater of another study"
    OTHER_RATER = "another rater of the same study"
    RIGHT_RATER = "the right rater"


def expected(root: RootField, credential: Credential, transport: Transport) -> Outcome:
    """The one declaration of what a rater may run: RATER_FIELDS for its own rater."""
    if credential in (Credential.FORGED, Credential.REVOKED, Credential.EXPIRED):
        return Outcome.AT_THE_DOOR
    over_http = transport in (Transport.POST, Transport.GET)
    if root.operation == OperationType.SUBSCRIPTION and over_http:
        return Outcome.WEBSOCKETS_ONLY
    if root.operation == OperationType.MUTATION and transport == Transport.GET:
        return Outcome.NOT_OVER_GET
    if root.operation != OperationType.SUBSCRIPTION and transport == Transport.LEGACY_WS:
        return Outcome.SUBSCRIPTIONS_ONLY
    if credential == Credential.RIGHT_RATER and root.name in RATER_FIELDS.get(root.operation, {}):
        return Outcome.RUNS
    return Outcome.REFUSED


def token_of(world: World, credential: Credential) -> str:
    return {
        Credential.FORGED: "not-a-rater-token",
        Credential.REVOKED: world.revoked,
        Credential.EXPIRED: world.expired,
        Credential.OTHER_STUDY: world.other_study_token,
        Credential.OTHER_RATER: world.tokens[1],
        Credential.RIGHT_RATER: world.tokens[0],
    }[credential]


def token_paths(root: RootField) -> list[Path]:
    """Where a field takes a rater token: an argument, or an input field, named raterToken."""
    found: list[Path] = []
    for name, argument in root.field.args.items():
        if name == "raterToken":
            found.append((name,))
        inner = getattr(argument.type, "of_type", argument.type)
        if "raterToken" in getattr(inner, "fields", {}):
            found.append((name, "raterToken"))
    return found


def matrix_document(world: World, root: RootField, credential: Credential) -> str:
    """A rater field names rater 0 of study A with the credential's token, as its holder
    would; any other field gets values that name no record."""
    declared = RATER_FIELDS.get(root.operation, {}).get(root.name)
    given: dict[Path, object] = {path: token_of(world, credential) for path in token_paths(root)}
    if declared:
        given |= {declared.study: world.study, declared.rater: 0}
    return document(root, given)


def judged(result: dict[str, Any]) -> Outcome:
    errors = result.get("errors") or []
    if any(e.get("message") in (RATER_REFUSED, REFUSED) for e in errors):
        coded = all((e.get("extensions") or {}).get("code") == "FORBIDDEN" for e in errors)
        rater_words = all(e.get("message") == RATER_REFUSED for e in errors)
        return (
            Outcome.REFUSED
            if coded and rater_words and result.get("data") is None
            else Outcome.OTHER
        )
    if any(e.get("message") == SUBSCRIPTIONS_OVER_WEBSOCKETS for e in errors):
        return Outcome.WEBSOCKETS_ONLY
    if result.get("data") is not None or any(
        "path" in e or (e.get("extensions") or {}).get("code") for e in errors
    ):
        return Outcome.RUNS
    return Outcome.OTHER


def refusal(payload: dict[str, Any] | list[dict[str, Any]]) -> Outcome:
    errors = payload if isinstance(payload, list) else [payload]
    said = [e.get("message", "") for e in errors]
    if said == [RATER_REFUSED]:
        return Outcome.REFUSED
    if len(said) == 1 and (said[0] == "Unexpected error." or "are not allowed" in said[0]):
        return Outcome.SUBSCRIPTIONS_ONLY
    return Outcome.OTHER


async def over_http(
    world: World,
    credential: Credential,
    transport: Transport,
    root: RootField,
    client: httpx.AsyncClient,
) -> tuple[Outcome, str]:
    query = matrix_document(world, root, credential)
    method = "GET" if transport == Transport.GET else "POST"
    response = await http(
        world, query, f"Rater {token_of(world, credential)}", method=method, client=client
    )
    if response.status_code == 401:
        return Outcome.AT_THE_DOOR, response.text
    if response.status_code == 400 and "mutations are not allowed" in response.text:
        return Outcome.NOT_OVER_GET, response.text
    if response.status_code != 200:
        return Outcome.OTHER, f"{response.status_code} {response.text}"
    return judged(response.json()), response.text


async def over_websocket(
    world: World, credential: Credential, transport: Transport, roots: list[RootField]
) -> dict[str, tuple[Outcome, str]]:
    protocol = TRANSPORT_WS if transport == Transport.TRANSPORT_WS else LEGACY_WS
    found: dict[str, tuple[Outcome, str]] = {}
    async with socket(world.url, protocol) as ws:
        if not await opened(ws, {"raterToken": token_of(world, credential)}):
            code, reason = await close_code(ws)
            door = code == (4403 if protocol == TRANSPORT_WS else 1011)
            outcome = Outcome.AT_THE_DOOR if door else Outcome.OTHER
            return {root.name: (outcome, f"closed {code} {reason}") for root in roots}
        for number, root in enumerate(roots):
            query = matrix_document(world, root, credential)
            await send(ws, start(protocol, str(number), {"query": query}))
        while len(found) < len(roots):
            async with asyncio.timeout(WAIT * 2):
                message = await receive(ws)
            if "id" not in message or roots[int(message["id"])].name in found:
                continue
            root = roots[int(message["id"])]
            payload: Any = message.get("payload")
            if message["type"] in ("next", "data"):
                found[root.name] = (judged(payload), json.dumps(message))
                stop = "complete" if protocol == TRANSPORT_WS else "stop"
                await send(ws, {"id": message["id"], "type": stop})
            elif message["type"] == "error":
                found[root.name] = (refusal(payload), json.dumps(message))
            else:
                found[root.name] = (Outcome.OTHER, json.dumps(message))
    return found


@pytest.mark.parametrize("transport", list(Transport))
@pytest.mark.parametrize("credential", list(Credential))
async def test_every_root_field_under_every_rater_credential(
    world: World, credential: Credential, transport: Transport
) -> None:
    if transport in (Transport.POST, Transport.GET):
        async with httpx.AsyncClient(base_url=world.url, timeout=30) as client:
            results = [
                await over_http(world, credential, transport, root, client) for root in ROOTS
            ]
        found = {root.name: result for root, result in zip(ROOTS, results, strict=True)}
    else:
        found = await over_websocket(world, credential, transport, ROOTS)
    wrong = {
        f"{root.operation.value} {root.name}": (
            expected(root, credential, transport),
            found[root.name],
        )
        for root in ROOTS
        if found[root.name][0] != expected(root, credential, transport)
    }
    assert wrong == {}
    if credential == Credential.RIGHT_RATER:  # and what runs answers with the rater's own data
        for root in ROOTS:
            if found[root.name][0] == Outcome.RUNS:
                answered = json.loads(found[root.name][1])
                data = answered.get("payload", answered)["data"]
                assert data[root.name] is not None, (root.name, answered)


def test_the_matrix_covers_every_rater_field_with_a_valid_document() -> None:
    roots = {(root.operation, root.name): root for root in ROOTS}
    for operation, fields in RATER_FIELDS.items():
        for name, declared in fields.items():
            assert (operation, name) in roots, f"{operation.value} {name} is not a root field"
            assert token_paths(roots[operation, name]), f"{name} takes no raterToken"
            for path in declared.paths:
                assert roots[operation, name].field.args.get(path[0]) is not None, (name, path)
    world = World("", "a-study", ["a-token", "b-token"], "an-episode", "a-tag")
    for root in ROOTS:
        for credential in Credential:
            errors = validate(SCHEMA, parse(matrix_document(world, root, credential)))
            assert errors == [], (root.name, errors)
