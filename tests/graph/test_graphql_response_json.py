"""Status codes and media types of GraphQL over HTTP, per Accept header, over real HTTP.

application/graphql-response+json clients get 400 without `data` for a request that fails before
execution; application/json clients keep 200 with `errors` (and `data: null`).
"""

from typing import Any

import httpx
import pytest

GRAPHQL_RESPONSE = "application/graphql-response+json"
JSON = "application/json"

FAILING_BEFORE_EXECUTION: dict[str, tuple[dict[str, Any], str]] = {
    "syntax error": ({"query": "{ agents(first: 1) { totalCount }"}, "Syntax Error"),
    "validation error": ({"query": "{ noSuchField }"}, "noSuchField"),
    "bad variable": (
        {
            "query": "query($first: Int!) { agents(first: $first) { totalCount } }",
            "variables": {"first": "many"},
        },
        "$first",
    ),
    "subscription over HTTP": (
        {"query": 'subscription Watch { episodeStatus(id: "x") { status } }'},
        "subscriptions are served over a websocket",
    ),
}


async def post(api_url: str, body: dict[str, Any], accept: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=api_url, timeout=30) as http:
        return await http.post("/graphql", json=body, headers={"accept": accept})


@pytest.mark.parametrize("case", FAILING_BEFORE_EXECUTION)
async def test_a_request_error_is_400_without_data_for_graphql_response_json(
    api_url: str, case: str
) -> None:
    body, expected = FAILING_BEFORE_EXECUTION[case]
    response = await post(api_url, body, GRAPHQL_RESPONSE)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == GRAPHQL_RESPONSE
    result = response.json()
    assert "data" not in result, result
    assert any(expected in error["message"] for error in result["errors"]), result


@pytest.mark.parametrize("case", FAILING_BEFORE_EXECUTION)
async def test_a_request_error_is_200_with_errors_for_json(api_url: str, case: str) -> None:
    body, expected = FAILING_BEFORE_EXECUTION[case]
    response = await post(api_url, body, JSON)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == JSON
    result = response.json()
    assert result["data"] is None, result
    assert any(expected in error["message"] for error in result["errors"]), result


async def test_an_error_while_executing_keeps_200_and_data(api_url: str) -> None:
    """A field error (here on a non-null root field, so `data` is null) is not a request error."""
    body = {"query": '{ relationships(filter: {agentIds: ["a"]}) { __typename } }'}
    response = await post(api_url, body, GRAPHQL_RESPONSE)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == GRAPHQL_RESPONSE
    result = response.json()
    assert "data" in result and result["data"] is None, result
    assert result["errors"][0]["path"] == ["relationships"], result


@pytest.mark.parametrize(
    ("accept", "media_type"),
    [
        (GRAPHQL_RESPONSE, GRAPHQL_RESPONSE),
        (f"{GRAPHQL_RESPONSE}, {JSON};q=0.9", GRAPHQL_RESPONSE),
        (f"{JSON};q=0.5, {GRAPHQL_RESPONSE}", GRAPHQL_RESPONSE),
        (f"{JSON}, {GRAPHQL_RESPONSE}", JSON),
        (f"{GRAPHQL_RESPONSE};q=0, */*", JSON),
        (JSON, JSON),
        ("*/*", JSON),
        ("", JSON),
        ("text/plain", JSON),
    ],
)
async def test_a_success_is_sent_as_the_preferred_media_type(
    api_url: str, accept: str, media_type: str
) -> None:
    response = await post(api_url, {"query": "{ __typename }"}, accept)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == media_type
    assert response.json() == {"data": {"__typename": "Query"}}
