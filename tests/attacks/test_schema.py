"""A spread of a fragment the document does not define: its message was `'Nope'` (a KeyError
out of the depth rule, which measured the document before it was validated), now the
validation error "Unknown fragment 'Nope'.", over HTTP and on a websocket."""

import pytest

from tests.support.server import GraphQLClient, init, receive, send, socket

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
