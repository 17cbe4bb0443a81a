"""A spread of a fragment the document does not define: its message was `'Nope'` (a KeyError
out of the depth rule, which measured the document before it was validated), now the
validation error "Unknown fragment 'Nope'.", over HTTP and on a websocket.

And, with introspection off, validation errors that suggest the names the schema holds."""

from collections.abc import AsyncIterator

import httpx
import pytest

from tests.support.server import GraphQLClient, init, receive, send, serve, socket

UNKNOWN = ["Unknown fragment 'Nope'."]


@pytest.mark.parametrize(
    "document",
    [
        "{ ...Nope }",
        "{ agents { nodes { ...Nope } } }",
        "fragment Known on Query { ...Nope } { ...Known }",
    ],
)
async def test_an_unknown_fragment_is_a_validation_error(gql: GraphQLClient, document: str) -> None:
    body = await gql.post(document)
    assert body["data"] is None
    assert [e["message"] for e in body["errors"]] == UNKNOWN, body
    assert all("extensions" not in e for e in body["errors"]), body


async def test_an_unknown_fragment_in_a_subscription_is_a_validation_error(api_url: str) -> None:
    async with socket(api_url) as ws:
        await init(ws)
        query = 'subscription { episodeStatus(id: "e1") { ...Nope } }'
        await send(ws, {"id": "1", "type": "subscribe", "payload": {"query": query}})
        answer = await receive(ws)
    assert answer["type"] == "error" and answer["id"] == "1", answer
    assert [e["message"] for e in answer["payload"]] == UNKNOWN, answer


@pytest.fixture(scope="module")
async def closed_schema(
    redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[str]:
    """The app as the README advises for a shared deployment: no introspection."""
    async with serve(redis_url, tmp_path_factory.mktemp("closed"), introspection=False) as url:
        yield url


@pytest.mark.parametrize(
    "document",
    [
        "{ agents(frist: 1) { totalCount } }",
        "query($o: SortOrdr) { agents(order: $o) { totalCount } }",
        "{ episodes(filter: {status: COMPLETE}) { totalCount } }",
        "{ episodes(filter: {stauts: COMPLETED}) { totalCount } }",
        '{ agent(id: "a") { ... on Agnet { id } } }',
    ],
)
async def test_without_introspection_no_error_names_what_the_schema_holds(
    closed_schema: str, document: str
) -> None:
    """Field suggestions are off, but an argument, a type, an enum value or an input field
    spelled a little wrong is still answered with the right name ("Did you mean 'first'?"), so
    with PARLEY_INTROSPECTION=false the schema can still be read out by guessing."""
    async with httpx.AsyncClient(base_url=closed_schema, timeout=30) as http:
        body = await GraphQLClient(http).post(document)
    messages = [e["message"] for e in body["errors"]]
    assert messages and not any("Did you mean" in m for m in messages), messages


@pytest.mark.parametrize(
    ("document", "variables"),
    [
        (
            "query($s: EpisodeStatus) { episodes(filter: {status: $s}) { totalCount } }",
            {"s": "COMPLETE"},
        ),
        (
            "query($f: EpisodeFilter) { episodes(filter: $f) { totalCount } }",
            {"f": {"stauts": "COMPLETED"}},
        ),
    ],
)
async def test_without_introspection_no_variable_error_names_what_the_schema_holds(
    closed_schema: str, document: str, variables: dict[str, object]
) -> None:
    """A variable's value is checked when the operation runs, not when the document is
    validated: an enum value or an input field misspelled there was answered "Did you mean
    'COMPLETED'?" too."""
    async with httpx.AsyncClient(base_url=closed_schema, timeout=30) as http:
        body = await GraphQLClient(http).post(document, variables)
    messages = [e["message"] for e in body["errors"]]
    assert messages and not any("Did you mean" in m for m in messages), messages


async def test_without_introspection_a_subscription_names_nothing_the_schema_holds(
    closed_schema: str,
) -> None:
    async with socket(closed_schema) as ws:
        await init(ws)
        query = "subscription { episodeUpdates(aftr: 1) { kind } }"
        await send(ws, {"id": "1", "type": "subscribe", "payload": {"query": query}})
        answer = await receive(ws)
    assert answer["type"] == "error", answer
    assert not any("Did you mean" in e["message"] for e in answer["payload"]), answer


async def test_with_introspection_on_suggestions_are_not_sent_either(gql: GraphQLClient) -> None:
    """One rule whatever the setting: the schema is there to read through introspection, and
    no error message is where a client learns it."""
    body = await gql.post("{ agents(frist: 1) { totalCount } }")
    assert [e["message"] for e in body["errors"]] == [
        "Unknown argument 'frist' on field 'Query.agents'."
    ], body
