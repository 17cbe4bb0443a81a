"""A rater credential against a server with API tokens (graph/rater_access.py, judged with the
seats' in graph/seat_access.py): a forged, renewed (revoked) or closed (expired) one is refused
at the door, another study's or another rater's runs nothing of this rater's, a document of
two operations must name the one to run, and a real one runs only its own rater's three
fields, over HTTP POST and GET and both websocket protocols. Then the whole matrix: every root
field of the schema, under every kind of rater credential, over every transport (the seat
matrix, tests/attacks/test_seat_access.py, covers the rater fields under seat credentials)."""

import functools
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import pytest

from parley.graph.rater_access import RATER_FIELDS, RATER_REFUSED
from parley.graph.seat_access import NAME_THE_OPERATION
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
    token_paths,
)
from tests.support.server import (
    LEGACY_WS,
    TRANSPORT_WS,
    graphql,
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
    response = await http(
        world.url, TWO_OPERATIONS, f"Rater {token}", {"tag": world.tag}, "A", method
    )
    assert response.status_code == 401, response.text
    assert SECRET not in response.text


@pytest.mark.parametrize("protocol", [TRANSPORT_WS, LEGACY_WS])
@pytest.mark.parametrize("kind", ["forged", "revoked", "expired"])
async def test_a_rater_token_that_opens_nothing_opens_no_websocket(
    world: World, protocol: str, kind: str
) -> None:
    token = {"forged": "x" * 32, "revoked": world.revoked, "expired": world.expired}[kind]
    assert await shut_at_the_door(world.url, protocol, {"raterToken": token})


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
                world.url, **assignment(study, rater, token), authorization=f"Rater {credential}"
            )
        ).json()
        assert body == refused
    own = await http(
        world.url,
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
    unnamed = (await http(world.url, TWO_OPERATIONS, rater, tag, method=method)).json()
    assert unnamed.get("data") is None and messages(unnamed) == [NAME_THE_OPERATION], unnamed
    named = (await http(world.url, TWO_OPERATIONS, rater, tag, "A", method)).json()
    assert named.get("data") is None and messages(named) == [RATER_REFUSED], named
    harmless = (await http(world.url, TWO_OPERATIONS, rater, tag, "B", method)).json()
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
        await http(world.url, **assignment(world.study, 0, world.tokens[0]), authorization=rater)
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
    body = (await http(world.url, save, rater, {"input": theirs})).json()
    assert body.get("data") is None and messages(body) == [RATER_REFUSED]


async def test_without_tokens_a_rater_header_is_meaningless(
    redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    async with serve(redis_url, tmp_path_factory.mktemp("open-raters")) as url:
        response = await http(url, "{ agents(first: 1) { totalCount } }", "Rater made-up")
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
    if (refused := refused_by_transport(root, transport)) is not None:
        return refused
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


def matrix_document(world: World, root: RootField, credential: Credential) -> str:
    """A rater field names rater 0 of study A with the credential's token, as its holder
    would."""
    return scoped_document(
        root, RATER_FIELDS, "raterToken", token_of(world, credential), world.study
    )


@pytest.mark.parametrize("transport", list(Transport))
@pytest.mark.parametrize("credential", list(Credential))
async def test_every_root_field_under_every_rater_credential(
    world: World, credential: Credential, transport: Transport
) -> None:
    token = token_of(world, credential)
    found = await run_matrix(
        world.url,
        transport,
        f"Rater {token}",
        {"raterToken": token},
        lambda root: matrix_document(world, root, credential),
        RATER_REFUSED,
    )
    assert_as_expected(
        found,
        lambda root: expected(root, credential, transport),
        own=credential == Credential.RIGHT_RATER,  # what runs answers with the rater's own data
    )


def test_the_matrix_covers_every_rater_field_with_a_valid_document() -> None:
    roots = declared_roots(RATER_FIELDS)
    for operation, fields in RATER_FIELDS.items():
        for name in fields:
            assert token_paths(roots[operation, name], "raterToken"), f"{name} takes no raterToken"
    world = World("", "a-study", ["a-token", "b-token"], "an-episode", "a-tag")
    for credential in Credential:
        assert_valid(functools.partial(matrix_document, world, credential=credential))
