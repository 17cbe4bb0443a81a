"""Document limits, refused requests and masked errors, over real HTTP and websockets.

Most checks run one request against an app with tight settings (`guarded`) and, where the
point is that the setting does it, the same request against the default app (`api_url`),
where it must succeed.
"""

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import websockets

from parley.resolvers import agents
from tests.support.server import init, receive, send, serve, socket
from tests.support.tagged import CREATE_TAGGED_AGENT, new_tag, tagged

LISTED_ORIGIN = "https://parley.example"
CORS_ORIGIN = "https://app.example"
FOREIGN_ORIGIN = "https://evil.example"
BODY_LIMIT = 2_000
GUARDED = {
    "max_depth": 3,
    "max_aliases": 2,
    "max_tokens": 60,
    "max_body_bytes": BODY_LIMIT,
    "introspection": False,
    "graphiql": False,
    "allowed_origins": LISTED_ORIGIN,
    "cors_origins": CORS_ORIGIN,
}
SECRET = "secret internal detail"

DEEP = "{ agents(first: 1) { edges { node { relationships { otherAgentId } } } } }"
ALIASED = "{ a: agents { totalCount } b: agents { totalCount } c: agents { totalCount } }"
LONG = "{ agents { " + "totalCount " * 80 + "} }"
INTROSPECTION = "{ __schema { types { name } } }"


@pytest.fixture(scope="module")
async def guarded(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    async with serve(redis_url, tmp_path_factory.mktemp("guarded"), **GUARDED) as url:
        yield url


async def post(base_url: str, body: Any, **options: Any) -> httpx.Response:
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        return await http.post("/graphql", json=body, **options)


async def messages(base_url: str, query: str) -> list[str]:
    """The GraphQL error messages of one POSTed document (none when it succeeded)."""
    response = await post(base_url, {"query": query})
    assert response.status_code == 200, response.text
    return [e["message"] for e in response.json().get("errors", [])]


# --- document limits ------------------------------------------------------------------------


async def test_a_document_deeper_than_max_depth_is_refused(guarded: str, api_url: str) -> None:
    assert await messages(guarded, DEEP) == ["'anonymous' exceeds maximum operation depth of 3"]
    assert await messages(api_url, DEEP) == []
    assert await messages(guarded, "{ agents(first: 1) { edges { node { id } } } }") == []


async def test_a_subscription_deeper_than_max_depth_is_refused(guarded: str) -> None:
    deep = "episode { agents { relationships { otherAgentId } } }"
    within = "episode { agents { id } }"
    async with socket(guarded) as ws:
        await init(ws)
        for number, selection in enumerate((deep, within), start=1):
            query = f'subscription {{ episodeStatus(id: "x") {{ {selection} }} }}'
            await send(ws, {"id": str(number), "type": "subscribe", "payload": {"query": query}})
        refused = await receive(ws)
        assert refused["type"] == "error" and refused["id"] == "1"
        assert (
            refused["payload"][0]["message"] == "'anonymous' exceeds maximum operation depth of 3"
        )
        # within the limit the resolver runs, and reports the unknown episode
        ran = await receive(ws)
        assert ran["id"] == "2" and ran["type"] == "next"
        assert ran["payload"]["errors"][0]["message"] == "no episode with id 'x'"


async def test_more_aliases_than_max_aliases_are_refused(guarded: str, api_url: str) -> None:
    assert await messages(guarded, ALIASED) == ["3 aliases found. Allowed: 2"]
    assert await messages(api_url, ALIASED) == []


async def test_a_document_over_max_tokens_is_refused(guarded: str, api_url: str) -> None:
    errors = await messages(guarded, LONG)
    assert len(errors) == 1 and "more than 60 tokens" in errors[0], errors
    assert await messages(api_url, LONG) == []


# --- HTTP bodies ----------------------------------------------------------------------------


def padded(size: int) -> bytes:
    """A valid JSON request of exactly `size` bytes (the padding is insignificant whitespace)."""
    body = json.dumps({"query": "{ __typename }"}).encode()
    return body[:-1] + b" " * (size - len(body)) + b"}"


async def test_a_body_over_max_body_bytes_is_refused_by_its_length(
    guarded: str, api_url: str
) -> None:
    headers = {"content-type": "application/json"}
    async with httpx.AsyncClient(base_url=guarded, timeout=30) as http:
        refused = await http.post("/graphql", content=padded(BODY_LIMIT + 1), headers=headers)
        accepted = await http.post("/graphql", content=padded(BODY_LIMIT), headers=headers)
    assert refused.status_code == 413
    assert refused.json() == {
        "errors": [{"message": f"request body is over the limit of {BODY_LIMIT} bytes"}]
    }
    assert accepted.status_code == 200 and accepted.json() == {"data": {"__typename": "Query"}}
    async with httpx.AsyncClient(base_url=api_url, timeout=30) as http:
        default = await http.post("/graphql", content=padded(BODY_LIMIT + 1), headers=headers)
    assert default.status_code == 200


async def test_a_declared_length_over_the_limit_is_refused_before_the_body_arrives(
    guarded: str,
) -> None:
    """A client announcing a huge body gets 413 at once, without the server waiting for it."""
    url = httpx.URL(guarded)
    assert url.port is not None
    reader, writer = await asyncio.open_connection(url.host, url.port)
    try:
        writer.write(
            b"POST /graphql HTTP/1.1\r\nHost: %b\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n{" % (url.netloc, 1000 * BODY_LIMIT)
        )
        await writer.drain()
        async with asyncio.timeout(5):
            status = await reader.readline()
    finally:
        writer.close()
    assert status.startswith(b"HTTP/1.1 413 "), status


async def test_a_streamed_body_over_max_body_bytes_is_refused(guarded: str) -> None:
    """No Content-Length (chunked transfer): the limit is enforced while reading."""
    body = padded(4 * BODY_LIMIT)

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(body), 500):
            yield body[start : start + 500]

    async with httpx.AsyncClient(base_url=guarded, timeout=30) as http:
        request = http.build_request(
            "POST", "/graphql", content=chunks(), headers={"content-type": "application/json"}
        )
        assert "content-length" not in request.headers
        assert request.headers["transfer-encoding"] == "chunked"
        response = await http.send(request)
    assert response.status_code == 413
    assert f"limit of {BODY_LIMIT} bytes" in response.json()["errors"][0]["message"]


# --- refused requests -----------------------------------------------------------------------


async def test_a_batch_is_refused_and_nothing_runs(api_url: str) -> None:
    tag = new_tag("sec")
    batch = [{"query": CREATE_TAGGED_AGENT, "variables": {"tag": tag}}] * 2
    response = await post(api_url, batch)
    assert response.status_code == 400
    assert "Batching is not enabled" in response.text
    assert await tagged(api_url, tag) == 0


async def test_a_misspelled_field_gets_no_suggestion(api_url: str) -> None:
    assert await messages(api_url, "{ agnts { totalCount } }") == [
        "Cannot query field 'agnts' on type 'Query'."
    ]


async def test_introspection_can_be_switched_off(guarded: str, api_url: str) -> None:
    refused = await messages(guarded, INTROSPECTION)
    assert refused and all("introspection has been disabled" in m for m in refused), refused
    assert await messages(guarded, "{ __typename agents { totalCount } }") == []
    response = await post(api_url, {"query": INTROSPECTION})
    names = {t["name"] for t in response.json()["data"]["__schema"]["types"]}
    assert {"Query", "Agent", "EpisodeEvent"} <= names


async def test_graphiql_can_be_switched_off(guarded: str, api_url: str) -> None:
    browser = {"accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
    async with httpx.AsyncClient(timeout=30) as http:
        off = await http.get(f"{guarded}/graphql", headers=browser)
        on = await http.get(f"{api_url}/graphql", headers=browser)
    assert off.status_code == 404
    assert on.status_code == 200
    assert on.headers["content-type"].startswith("text/html")
    assert "graphiql" in on.text.lower()


async def test_a_mutation_over_get_is_refused(api_url: str) -> None:
    tag = new_tag("sec")
    async with httpx.AsyncClient(base_url=api_url, timeout=30) as http:
        response = await http.get(
            "/graphql",
            params={"query": CREATE_TAGGED_AGENT, "variables": json.dumps({"tag": tag})},
        )
        query_over_get = await http.get("/graphql", params={"query": "{ __typename }"})
    assert response.status_code == 400
    assert "mutations are not allowed when using GET" in response.text
    assert query_over_get.status_code == 200  # the refusal is about mutations, not GET
    assert await tagged(api_url, tag) == 0


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"],
)
async def test_a_form_or_text_post_is_refused(api_url: str, content_type: str) -> None:
    """Content types a cross-site form may send without a preflight (CSRF)."""
    tag = new_tag("sec")
    body = json.dumps({"query": CREATE_TAGGED_AGENT, "variables": {"tag": tag}})
    async with httpx.AsyncClient(base_url=api_url, timeout=30) as http:
        response = await http.post("/graphql", content=body, headers={"content-type": content_type})
    assert response.status_code == 400
    assert "Unsupported content type" in response.text
    assert await tagged(api_url, tag) == 0


# --- masked errors --------------------------------------------------------------------------


async def crash(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError(SECRET)


async def test_a_crash_is_masked_and_other_errors_are_not(
    api_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(agents, "get_agent", crash)
    response = await post(api_url, {"query": '{ agent(id: "a1") { id } }'})
    assert response.status_code == 200
    assert [e["message"] for e in response.json()["errors"]] == ["Unexpected error."]
    assert SECRET not in response.text
    assert "RuntimeError" not in response.text
    # user-input and validation errors keep their message
    wrong_pair = '{ relationships(filter: {agentIds: ["a1"]}) { totalCount } }'
    assert await messages(api_url, wrong_pair) == ["agentIds takes exactly two ids, got 1"]
    assert await messages(api_url, '{ agent(id: "a1") { nope } }') == [
        "Cannot query field 'nope' on type 'Agent'."
    ]


async def test_a_crash_in_a_subscription_is_masked(
    api_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The resolver's generator raises before its first event."""
    monkeypatch.setattr("parley.lifecycle.follow.get_or_none", crash)
    async with socket(api_url) as ws:
        await init(ws)
        query = 'subscription { episodeStatus(id: "e1") { kind } }'
        await send(ws, {"id": "1", "type": "subscribe", "payload": {"query": query}})
        failed = await receive(ws)
        completed = await receive(ws)
    assert failed["type"] == "next" and failed["id"] == "1"
    assert [e["message"] for e in failed["payload"]["errors"]] == ["Unexpected error."]
    assert completed == {"id": "1", "type": "complete"}
    assert SECRET not in json.dumps(failed)


# --- browsers: websocket origins and CORS ---------------------------------------------------


async def test_a_websocket_from_a_foreign_origin_is_refused(guarded: str, api_url: str) -> None:
    """Only listed origins may open a socket; with none listed, only the same origin."""
    for base, origin in (
        (guarded, FOREIGN_ORIGIN),
        (api_url, FOREIGN_ORIGIN),
        (api_url, LISTED_ORIGIN),
    ):
        with pytest.raises(websockets.InvalidStatus) as refused:
            async with socket(base, origin=origin):
                pass
        assert refused.value.response.status_code == 403


@pytest.mark.parametrize("origin", [LISTED_ORIGIN, "same", None])
async def test_a_websocket_from_a_listed_or_the_same_origin_is_accepted(
    guarded: str, origin: str | None
) -> None:
    async with socket(guarded, origin=guarded if origin == "same" else origin) as ws:
        await init(ws)


async def test_cors_preflight_answers_only_listed_origins(guarded: str) -> None:
    async def preflight(origin: str) -> httpx.Response:
        async with httpx.AsyncClient(timeout=30) as http:
            return await http.options(
                f"{guarded}/graphql",
                headers={
                    "origin": origin,
                    "access-control-request-method": "POST",
                    "access-control-request-headers": "authorization, content-type",
                },
            )

    listed = await preflight(CORS_ORIGIN)
    assert listed.status_code == 200
    assert listed.headers["access-control-allow-origin"] == CORS_ORIGIN
    assert "POST" in listed.headers["access-control-allow-methods"]
    unlisted = await preflight(FOREIGN_ORIGIN)
    assert "access-control-allow-origin" not in unlisted.headers
    simple = await post(guarded, {"query": "{ __typename }"}, headers={"origin": CORS_ORIGIN})
    assert simple.headers["access-control-allow-origin"] == CORS_ORIGIN
