"""The address a user gives a command, and a server's refusal said in words."""

import json

import pytest

from parley.client.server_url import TOKEN_HINT, refusal, server_root


@pytest.mark.parametrize(
    "given",
    [
        "http://localhost:8000",
        "http://localhost:8000/",
        "http://localhost:8000/graphql",
        " localhost:8000/graphql/ ",
        "localhost:8000",
    ],
)
def test_every_way_of_giving_the_address_reaches_the_root(given: str) -> None:
    assert server_root(given) == "http://localhost:8000"


def test_a_given_scheme_is_kept() -> None:
    assert server_root("https://parley.example/graphql") == "https://parley.example"


def test_a_401_says_how_to_give_a_token() -> None:
    assert (
        refusal("http://h", 401, "")
        == f"http://h answered 401: it needs a valid access token; {TOKEN_HINT}"
    )


def test_graphql_errors_are_their_messages() -> None:
    body = json.dumps({"errors": [{"message": "one"}, {"message": "two"}]})
    assert refusal("http://h", 400, body) == "one; two"


@pytest.mark.parametrize("body", ["<html>busy</html>", "[]", '{"errors": "x"}', '{"data": 1}'])
def test_any_other_body_is_shown_with_the_status(body: str) -> None:
    assert refusal("http://h", 502, f"  {body}\n") == f"http://h answered 502: {body}"


def test_a_long_body_is_cut() -> None:
    assert refusal("http://h", 500, "x" * 1000) == "http://h answered 500: " + "x" * 300
