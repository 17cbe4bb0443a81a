"""A seat credential against a server with API tokens (graph/seat_access.py, and its check on
arrival in graph/security.py and graph/app.py): a made-up one is refused at the door, a real one
runs only its own seat's fields of its own episode, on the operation that actually runs, over
HTTP POST and GET and both websocket protocols. Then the whole matrix: every root field of the
schema, under every kind of credential, over every transport."""

import functools
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import pytest
from graphql import OperationType

from bench.support.fake_llm import FakeLLM
from bench.support.people import START_WITH_SEATS
from bench.support.simulation import make_world, start_input
from parley.graph.seat_access import NAME_THE_OPERATION, REFUSED, SEAT_FIELDS
from parley.storage.models import AgentProfile
from tests.support.operations import RootField
from tests.support.scoped_access import (
    Outcome,
    Transport,
    answer,
    assert_as_expected,
    assert_valid,
    declared_roots,
    http,
    messages,
    opened,
    refused_by_transport,
    run_matrix,
    scoped_document,
    shut_at_the_door,
    start,
)
from tests.support.server import (
    CANCEL,
    LEGACY_WS,
    TRANSPORT_WS,
    graphql,
    send,
    serve,
    socket,
)

API_TOKEN = "alpha"
SECRET = "keeps-a-heliotrope-in-the-drawer"
"""Every agent of the world's episodes has it; no refused request may show it."""
SECRETS = """
query A($tag: String) { agents(first: 2, filter: {tag: $tag}) { nodes { name secret } } }
query B { __typename }"""
STREAM_SECRETS = """
subscription S($id: ID!) { episodeEvents(id: $id) { kind episode { agents { secret } } } }
query B { __typename }"""


@dataclass(frozen=True)
class World:
    """A server with an API token, an episode with human seats 0 and 1 and another episode with
    a human seat 0, all QUEUED (no worker runs them)."""

    url: str
    episode: str
    tokens: dict[int, str]
    other: str
    other_token: str
    tag: str = ""
    """Of the first episode's agents."""


@pytest.fixture(scope="module")
async def world(
    redis_url: str, tmp_path_factory: pytest.TempPathFactory, fake_llm_server: FakeLLM
) -> AsyncIterator[World]:
    async with serve(redis_url, tmp_path_factory.mktemp("seat-access"), tokens=API_TOKEN) as url:
        model = fake_llm_server.model_name()
        started, tags = [], []
        for seats in ([0, 1], [0]):
            tag = f"attack-seat-{uuid.uuid4().hex[:8]}"
            scenario, agents = await make_world(tag)
            for pk in agents:
                agent = await AgentProfile.get(pk)
                agent.secret = SECRET
                await agent.save()
            tags.append(tag)
            variables = {"input": start_input(scenario, agents, model, tag=tag, humanSeats=seats)}
            payload = (await graphql(url, START_WITH_SEATS, variables, API_TOKEN))[
                "startSimulation"
            ]
            assert payload["userErrors"] == [], payload
            tokens = {t["seat"]: t["token"] for t in payload["seatTokens"]}
            started.append((payload["episode"]["id"], tokens))
        (episode, tokens), (other, other_tokens) = started
        yield World(url, episode, tokens, other, other_tokens[0], tags[0])
        for pk in (episode, other):
            await graphql(url, CANCEL, {"id": pk}, API_TOKEN)


# The reported defects


@pytest.mark.parametrize("method", ["POST", "GET"])
async def test_a_made_up_seat_token_opens_nothing_over_http(world: World, method: str) -> None:
    response = await http(world.url, SECRETS, "Seat x", {"tag": world.tag}, method=method)
    assert response.status_code == 401, response.text
    assert SECRET not in response.text


@pytest.mark.parametrize("protocol", [TRANSPORT_WS, LEGACY_WS])
async def test_a_made_up_seat_token_opens_no_websocket(world: World, protocol: str) -> None:
    assert await shut_at_the_door(world.url, protocol, {"seatToken": "x"})


@pytest.mark.parametrize("method", ["POST", "GET"])
async def test_a_seat_cannot_run_the_first_of_several_operations(world: World, method: str) -> None:
    """Without operationName Strawberry runs the first operation; a seat must name it, and then
    the named one is what is judged."""
    seat = f"Seat {world.tokens[0]}"
    tag = {"tag": world.tag}
    unnamed = (await http(world.url, SECRETS, seat, tag, method=method)).json()
    assert unnamed.get("data") is None and messages(unnamed) == [NAME_THE_OPERATION], unnamed
    named = (await http(world.url, SECRETS, seat, tag, operation_name="A", method=method)).json()
    assert named.get("data") is None and messages(named) == [REFUSED], named
    harmless = (await http(world.url, SECRETS, seat, tag, operation_name="B", method=method)).json()
    assert harmless == {"data": {"__typename": "Query"}}
    allowed = (await http(world.url, SECRETS, f"Bearer {API_TOKEN}", tag, "A", method)).json()
    assert [a["secret"] for a in allowed["data"]["agents"]["nodes"]] == [SECRET, SECRET]


@pytest.mark.parametrize("protocol", [TRANSPORT_WS, LEGACY_WS])
async def test_a_seat_websocket_cannot_stream_the_omniscient_episode(
    world: World, protocol: str
) -> None:
    async with socket(world.url, protocol) as ws:
        assert await opened(ws, {"seatToken": world.tokens[0]})
        for operation_id, name, refusal in (("1", None, NAME_THE_OPERATION), ("2", "S", REFUSED)):
            request = {"query": STREAM_SECRETS, "variables": {"id": world.episode}}
            await send(ws, start(protocol, operation_id, {**request, "operationName": name}))
            message = await answer(ws, operation_id)
            assert message["type"] == "error", message
            assert refusal in json.dumps(
                message["payload"], ensure_ascii=False
            ) and SECRET not in str(message)


# What a real seat credential reaches


def seat_view(episode: str, seat: int, token: str) -> dict[str, Any]:
    return {
        "query": "query($id: ID!, $seat: Int!, $token: String!) {"
        " seatView(episodeId: $id, seat: $seat, seatToken: $token) { agentName goal } }",
        "variables": {"id": episode, "seat": seat, "token": token},
    }


async def test_a_seat_credential_reaches_only_its_own_seat(world: World) -> None:
    """Holding seat 0's credential and seat 1's token (or the other episode's) reads neither;
    naming an episode that does not exist is refused in the same words."""
    seat = f"Seat {world.tokens[0]}"
    own = await http(world.url, **seat_view(world.episode, 0, world.tokens[0]), authorization=seat)
    assert own.json()["data"]["seatView"]["goal"], own.text
    for episode, number, token in (
        (world.episode, 1, world.tokens[1]),
        (world.other, 0, world.other_token),
        ("no-such-episode", 0, world.tokens[0]),
    ):
        body = (
            await http(world.url, **seat_view(episode, number, token), authorization=seat)
        ).json()
        assert body == {
            "data": None,
            "errors": [{"message": REFUSED, "extensions": {"code": "FORBIDDEN"}}],
        }
    act = """
    mutation($input: SubmitActionInput!) { submitAction(input: $input) { userErrors { code } } }"""
    action = {"episodeId": world.episode, "seat": 1, "seatToken": world.tokens[1]}
    body = (
        await http(world.url, act, seat, {"input": {**action, "actionType": "NONE"}}, method="POST")
    ).json()
    assert messages(body) == [REFUSED]


OWN_VIEW = "seatView(episodeId: $id, seat: $seat, seatToken: $token) { agentName }"
VIEW_VARIABLES = "query($id: ID!, $seat: Int!, $token: String!)"


@pytest.mark.parametrize(
    "hidden",
    [
        f"{VIEW_VARIABLES} {{ {OWN_VIEW} ... on Query {{ agents {{ totalCount }} }} }}",
        f"{VIEW_VARIABLES} {{ {OWN_VIEW} ...F }} fragment F on Query {{ agents {{ totalCount }} }}",
        f"{VIEW_VARIABLES} {{ {OWN_VIEW} mine: agents {{ totalCount }} }}",
    ],
)
async def test_a_root_field_in_a_fragment_or_alias_is_judged_as_run(
    world: World, hidden: str
) -> None:
    variables = {"id": world.episode, "seat": 0, "token": world.tokens[0]}
    body = (await http(world.url, hidden, f"Seat {world.tokens[0]}", variables)).json()
    assert body.get("data") is None and messages(body) == [REFUSED], body


async def test_a_root_field_that_is_skipped_does_not_run_and_is_not_judged(world: World) -> None:
    skipped = f"{VIEW_VARIABLES} {{ {OWN_VIEW} agents @skip(if: true) {{ totalCount }} }}"
    variables = {"id": world.episode, "seat": 0, "token": world.tokens[0]}
    body = (await http(world.url, skipped, f"Seat {world.tokens[0]}", variables)).json()
    assert body["data"] == {"seatView": {"agentName": body["data"]["seatView"]["agentName"]}}


async def test_without_tokens_a_seat_header_is_meaningless(
    redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The default server is open: a Seat header neither opens nor closes anything."""
    async with serve(redis_url, tmp_path_factory.mktemp("open")) as url:
        response = await http(url, "{ agents(first: 1) { totalCount } }", "Seat made-up")
        assert response.status_code == 200 and "totalCount" in response.json()["data"]["agents"]
        async with socket(url) as ws:
            assert await opened(ws, {"seatToken": "made-up"})
            await send(ws, start(TRANSPORT_WS, "1", {"query": "{ agents { totalCount } }"}))
            message = await answer(ws, "1")
            assert message["type"] == "next" and "errors" not in message["payload"], message


# The matrix: every root field x every credential x every transport


class Credential(StrEnum):
    NONE = "no token"
    WRONG_BEARER = "a wrong bearer token"
    MADE_UP_SEAT = "a made-up seat token"
    OTHER_SEAT = "a real seat of another episode"
    RIGHT_SEAT = "the right seat"
    API_TOKEN = "an API token"


def expected(root: RootField, credential: Credential, transport: Transport) -> Outcome:
    """The one declaration of who may run what: SEAT_FIELDS for a seat credential of that seat,
    an API token for everything, nothing without either."""
    if credential in (Credential.NONE, Credential.WRONG_BEARER, Credential.MADE_UP_SEAT):
        return Outcome.AT_THE_DOOR
    if (refused := refused_by_transport(root, transport)) is not None:
        return refused
    if credential == Credential.API_TOKEN:
        return Outcome.RUNS
    if credential == Credential.RIGHT_SEAT and root.name in SEAT_FIELDS[root.operation]:
        return Outcome.RUNS
    return Outcome.REFUSED


def seat_token(world: World, credential: Credential) -> str:
    return world.other_token if credential == Credential.OTHER_SEAT else world.tokens[0]


def matrix_document(world: World, root: RootField, credential: Credential) -> str:
    """A seat field names seat 0 of the first episode with the credential's seat token, as its
    holder would."""
    token = seat_token(world, credential)
    return scoped_document(root, SEAT_FIELDS, "seatToken", token, world.episode)


def authorization(world: World, credential: Credential) -> str | None:
    return {
        Credential.NONE: None,
        Credential.WRONG_BEARER: "Bearer not-a-token",
        Credential.MADE_UP_SEAT: "Seat not-a-seat-token",
        Credential.OTHER_SEAT: f"Seat {world.other_token}",
        Credential.RIGHT_SEAT: f"Seat {world.tokens[0]}",
        Credential.API_TOKEN: f"Bearer {API_TOKEN}",
    }[credential]


def connection_init(world: World, credential: Credential) -> dict[str, Any]:
    return {
        Credential.NONE: {},
        Credential.WRONG_BEARER: {"authorization": "Bearer not-a-token"},
        Credential.MADE_UP_SEAT: {"seatToken": "not-a-seat-token"},
        Credential.OTHER_SEAT: {"seatToken": world.other_token},
        Credential.RIGHT_SEAT: {"seatToken": world.tokens[0]},
        Credential.API_TOKEN: {"authorization": f"Bearer {API_TOKEN}"},
    }[credential]


@pytest.mark.parametrize("transport", list(Transport))
@pytest.mark.parametrize("credential", list(Credential))
async def test_every_root_field_under_every_credential(
    world: World, credential: Credential, transport: Transport
) -> None:
    found = await run_matrix(
        world.url,
        transport,
        authorization(world, credential),
        connection_init(world, credential),
        lambda root: matrix_document(world, root, credential),
        REFUSED,
    )
    assert_as_expected(
        found,
        lambda root: expected(root, credential, transport),
        own=credential == Credential.RIGHT_SEAT,  # what runs answers with the seat's own data
    )


def test_the_matrix_covers_every_root_field_with_a_valid_document() -> None:
    """A root field the matrix could not send, or a seat declaration that names no field or
    argument of the schema, fails here rather than going untested."""
    roots = declared_roots(SEAT_FIELDS)
    assert {OperationType.QUERY, OperationType.MUTATION, OperationType.SUBSCRIPTION} == {
        operation for operation, _ in roots
    }
    world = World("", "an-episode", {0: "a-token"}, "another", "another-token")
    for credential in Credential:
        assert_valid(functools.partial(matrix_document, world, credential=credential))
