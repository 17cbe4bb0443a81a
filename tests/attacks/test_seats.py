"""The fields that take a seat token (graph/seats.py: submitAction, seatView, claimSeat;
episodeEvents(as:, seatToken:)) and the seat tokens themselves (lifecycle/seats.py): a refusal
tells nothing of the seat, and says the same whether the episode and the seat exist or not; what
is stored of a token is its hash, by which a seat credential is found, for a seat given out at
the start, claimed later, stored before credentials were looked up by key, or imported."""

import hashlib
import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import redis.asyncio as redis

from bench.support.fake_llm import FakeLLM
from bench.support.people import START_WITH_SEATS
from bench.support.simulation import make_world, start_input
from parley.resolvers.importer import import_lines
from parley.resolvers.sotopia_format import episode_line
from parley.storage import keys
from parley.storage import seats as seat_writes
from parley.storage.models import EpisodeLog
from tests.support.server import (
    CANCEL,
    GraphQLClient,
    close_code,
    graphql,
    receive,
    send,
    serve,
    socket,
)

API_TOKEN = "alpha"
WHISPER = "Only seat zero hears this: the code word is heliotrope."
SUBMIT = """
mutation($input: SubmitActionInput!) {
  submitAction(input: $input) {
    sequence
    episode { id agents { secret } }
    perspective { goal secret seen { text } }
    userErrors { field message code }
  }
}"""
VIEW = """
query($id: ID!, $seat: Int!, $token: String!) {
  seatView(episodeId: $id, seat: $seat, seatToken: $token) { goal seen { text } }
}"""
CLAIM = """
mutation($id: ID!, $seat: Int!) {
  claimSeat(input: {episodeId: $id, seat: $seat}) { seatToken { token } userErrors { code } }
}"""
INJECT = """
mutation($input: InjectEventInput!) { injectEvent(input: $input) { userErrors { code } } }"""
DELETE = "mutation($id: ID!) { deleteEpisode(input: {id: $id}) { userErrors { code } } }"
WATCH = """
subscription($id: ID!, $seat: Int, $token: String) {
  episodeEvents(id: $id, as: $seat, seatToken: $token) { kind perspective { goal } }
}"""
WRONG = [
    {
        "field": ["input", "seatToken"],
        "message": "wrong or missing seat token for this seat",
        "code": "FORBIDDEN",
    }
]


@dataclass(frozen=True)
class Seated:
    """A server with an API token and a QUEUED episode of two agents (Ava0 and Ava1 of
    `tag`) whose seat 0 a person holds, with an environment message only seat 0 sees."""

    url: str
    episode: str
    token: str
    tag: str
    start: dict[str, Any]


@pytest.fixture(scope="module")
async def seated(
    redis_url: str, tmp_path_factory: pytest.TempPathFactory, fake_llm_server: FakeLLM
) -> AsyncIterator[Seated]:
    async with serve(redis_url, tmp_path_factory.mktemp("seats"), tokens=API_TOKEN) as url:
        tag = f"attack-seats-{uuid.uuid4().hex[:8]}"
        scenario, agents = await make_world(tag)
        start = start_input(scenario, agents, fake_llm_server.model_name(), tag=tag)
        pk, tokens = await started(url, {**start, "humanSeats": [0]})
        message = {"episodeId": pk, "text": WHISPER, "to": [f"Ava0 {tag}"]}
        injected = await graphql(url, INJECT, {"input": message}, API_TOKEN)
        assert injected["injectEvent"]["userErrors"] == []
        yield Seated(url, pk, tokens[0], tag, start)
        await graphql(url, CANCEL, {"id": pk}, API_TOKEN)


async def started(url: str, start: dict[str, Any]) -> tuple[str, dict[int, str]]:
    payload = (await graphql(url, START_WITH_SEATS, {"input": start}, API_TOKEN))["startSimulation"]
    assert payload["userErrors"] == [], payload
    return payload["episode"]["id"], {t["seat"]: t["token"] for t in payload["seatTokens"]}


async def post(
    url: str, query: str, variables: dict[str, Any], authorization: str
) -> httpx.Response:
    # ASCII-escaped JSON, so any Python string (a lone surrogate too) reaches the server.
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        return await client.post(
            "/graphql",
            content=json.dumps({"query": query, "variables": variables}),
            headers={"authorization": authorization, "content-type": "application/json"},
        )


def action(episode: str, seat: int, token: str) -> dict[str, Any]:
    return {
        "input": {
            "episodeId": episode,
            "seat": seat,
            "seatToken": token,
            "actionType": "SPEAK",
            "argument": "Let me in.",
        }
    }


@pytest.mark.parametrize("authorization", [f"Bearer {API_TOKEN}", "Seat made-up"])
async def test_a_refused_action_discloses_nothing_of_the_seat(
    seated: Seated, authorization: str
) -> None:
    """A wrong token for seat 0 (whose episode id is in its link) gets FORBIDDEN and nothing
    else: not the seat's goal, not the messages meant for it, not the episode; a made-up seat
    credential does not even get in."""
    response = await post(seated.url, SUBMIT, action(seated.episode, 0, "guessed"), authorization)
    assert WHISPER not in response.text and "Pick a place" not in response.text
    if authorization.startswith("Seat"):
        assert response.status_code == 401
        return
    payload = response.json()["data"]["submitAction"]
    assert payload == {"sequence": None, "episode": None, "perspective": None, "userErrors": WRONG}


async def test_a_refused_action_says_the_same_whatever_it_names(seated: Seated) -> None:
    """A wrong token, an episode that does not exist, a model's seat, a seat past the last: the
    same refusal, so it tells nothing of which episodes and seats there are."""
    for episode, seat, token in (
        (seated.episode, 0, "guessed"),
        (seated.episode, 0, ""),
        ("no-such-episode", 0, seated.token),
        (seated.episode, 1, seated.token),
        (seated.episode, 7, seated.token),
    ):
        response = await post(
            seated.url, SUBMIT, action(episode, seat, token), f"Bearer {API_TOKEN}"
        )
        assert response.json()["data"]["submitAction"]["userErrors"] == WRONG, (episode, seat)


async def test_a_refused_seat_view_says_the_same_whatever_it_names(seated: Seated) -> None:
    for episode, seat, token in (
        (seated.episode, 0, "guessed"),
        ("no-such-episode", 0, seated.token),
        (seated.episode, 1, seated.token),
    ):
        variables = {"id": episode, "seat": seat, "token": token}
        response = await post(seated.url, VIEW, variables, f"Bearer {API_TOKEN}")
        assert response.json() == {"data": {"seatView": None}}, (episode, seat)


async def test_a_refused_seat_stream_says_the_same_whatever_it_names(seated: Seated) -> None:
    said = []
    async with socket(seated.url) as ws:
        await send(ws, {"type": "connection_init", "payload": {"token": API_TOKEN}})
        assert (await receive(ws))["type"] == "connection_ack"
        for number, (episode, seat, token) in enumerate(
            (
                (seated.episode, 0, "guessed"),
                ("no-such-episode", 0, seated.token),
                (seated.episode, 1, seated.token),
            )
        ):
            variables = {"id": episode, "seat": seat, "token": token}
            request = {"query": WATCH, "variables": variables}
            await send(ws, {"id": str(number), "type": "subscribe", "payload": request})
            message = await receive(ws)
            while message.get("id") != str(number):
                message = await receive(ws)
            said.append(message["payload"])
    assert (
        said
        == [
            {
                "data": None,
                "errors": [
                    {
                        "message": "wrong or missing seat token for this seat",
                        "extensions": {"code": "BAD_USER_INPUT"},
                    }
                ],
            }
        ]
        * 3
    )


async def test_a_claimed_seat_is_its_credential_and_stores_only_a_hash(
    seated: Seated, redis_client: redis.Redis
) -> None:
    pk, tokens = await started(seated.url, {**seated.start, "humanSeats": [0, 1]})
    claimable, none = await started(
        seated.url, {**seated.start, "humanSeats": [1], "claimableSeats": True}
    )
    assert none == {}
    claimed = await graphql(seated.url, CLAIM, {"id": claimable, "seat": 1}, API_TOKEN)
    token = claimed["claimSeat"]["seatToken"]["token"]
    again = await graphql(seated.url, CLAIM, {"id": claimable, "seat": 1}, API_TOKEN)
    assert again["claimSeat"] == {"seatToken": None, "userErrors": [{"code": "CONFLICT"}]}
    for episode, seat, secret in ((pk, 0, tokens[0]), (pk, 1, tokens[1]), (claimable, 1, token)):
        variables = {"id": episode, "seat": seat, "token": secret}
        response = await post(seated.url, VIEW, variables, f"Seat {secret}")
        assert response.json()["data"]["seatView"]["goal"], response.text
        digest = hashlib.sha256(secret.encode()).hexdigest()
        entry = str(await redis_client.get(keys.seat_token(digest)))
        assert json.loads(entry) == [episode, seat]
        record = json.dumps(await redis_client.json().get(EpisodeLog.make_primary_key(episode)))
        assert digest in record and secret not in record + entry
    for episode in (pk, claimable):
        await graphql(seated.url, CANCEL, {"id": episode}, API_TOKEN)


async def test_a_deleted_episode_takes_its_seat_credentials_with_it(
    seated: Seated, redis_client: redis.Redis
) -> None:
    pk, tokens = await started(seated.url, seated.start | {"humanSeats": [0]})
    await graphql(seated.url, CANCEL, {"id": pk}, API_TOKEN)
    deleted = await graphql(seated.url, DELETE, {"id": pk}, API_TOKEN)
    assert deleted["deleteEpisode"]["userErrors"] == []
    digest = hashlib.sha256(tokens[0].encode()).hexdigest()
    assert await redis_client.exists(keys.seat_token(digest)) == 0
    variables = {"id": pk, "seat": 0, "token": tokens[0]}
    assert (await post(seated.url, VIEW, variables, f"Seat {tokens[0]}")).status_code == 401


async def test_a_seat_key_left_behind_opens_nothing(
    seated: Seated, redis_client: redis.Redis
) -> None:
    """A key naming a seat whose stored hash is another (or an episode that is gone) is not a
    credential: the record decides."""
    pk, _ = await started(seated.url, seated.start | {"humanSeats": [0]})
    forged = "a-token-that-was-never-given"
    digest = hashlib.sha256(forged.encode()).hexdigest()
    await redis_client.set(keys.seat_token(digest), json.dumps([pk, 0]))
    variables = {"id": pk, "seat": 0, "token": forged}
    assert (await post(seated.url, VIEW, variables, f"Seat {forged}")).status_code == 401
    await redis_client.delete(keys.seat_token(digest))
    await graphql(seated.url, CANCEL, {"id": pk}, API_TOKEN)


async def test_a_seat_stored_before_credentials_had_keys_is_found_after_a_start(
    seated: Seated, redis_client: redis.Redis
) -> None:
    pk, tokens = await started(seated.url, seated.start | {"humanSeats": [0]})
    digest = hashlib.sha256(tokens[0].encode()).hexdigest()
    await redis_client.delete(keys.seat_token(digest), keys.SEAT_TOKENS_INDEXED)
    variables = {"id": pk, "seat": 0, "token": tokens[0]}
    assert (await post(seated.url, VIEW, variables, f"Seat {tokens[0]}")).status_code == 401
    assert await seat_writes.index_tokens(redis_client) >= 1
    assert await seat_writes.index_tokens(redis_client) == 0  # once per database
    response = await post(seated.url, VIEW, variables, f"Seat {tokens[0]}")
    assert response.json()["data"]["seatView"]["goal"], response.text
    await graphql(seated.url, CANCEL, {"id": pk}, API_TOKEN)


async def test_an_imported_seat_is_claimed_anew(seated: Seated, redis_client: redis.Redis) -> None:
    """A token hash in an imported line (a file made elsewhere) opens nothing here: the seat
    comes in open, and the token claimSeat gives is its credential."""
    scenario, agents = seated.start["scenarioId"], seated.start["agentIds"]
    pk = f"imported-{uuid.uuid4().hex[:12]}"
    elsewhere = "a-token-given-by-another-server"
    doc = {
        "pk": pk,
        "environment": scenario,
        "agents": agents,
        "rewards": [[5.0, {"believability": 5.0}], [5.0, {"believability": 5.0}]],
        "status": "COMPLETED",
        "human_seats": [{"seat": 0, "token_hash": ""}],
    }
    line = episode_line(doc, None, [None, None])
    line["parley"]["human_seats"] = [
        {"seat": 0, "token_hash": hashlib.sha256(elsewhere.encode()).hexdigest()}
    ]
    report = await import_lines(redis_client, [json.dumps(line)])
    assert report.as_json()["created"]["episodes"] == 1, report.as_json()
    stored = await EpisodeLog.get(pk)
    assert [s.token_hash for s in stored.human_seats] == [""]
    variables = {"id": pk, "seat": 0, "token": elsewhere}
    assert (await post(seated.url, VIEW, variables, f"Seat {elsewhere}")).status_code == 401
    claimed = await graphql(seated.url, CLAIM, {"id": pk, "seat": 0}, API_TOKEN)
    token = claimed["claimSeat"]["seatToken"]["token"]
    variables = {"id": pk, "seat": 0, "token": token}
    response = await post(seated.url, VIEW, variables, f"Seat {token}")
    assert response.json()["data"]["seatView"]["goal"], response.text
    assert (await graphql(seated.url, DELETE, {"id": pk}, API_TOKEN))["deleteEpisode"][
        "userErrors"
    ] == []


async def test_claiming_a_seat_of_an_id_without_a_utf8_form_is_not_found(
    gql: GraphQLClient,
) -> None:
    """A lone surrogate in the episode id has no UTF-8 form to send to Redis: INTERNAL before
    (found by tests/graph/test_fuzz_schema.py), now NOT_FOUND as for any id of no episode."""
    variables = {"id": "e\udfff", "seat": 0}
    body = await gql.post(CLAIM, variables)
    assert "errors" not in body, body
    payload = body["data"]["claimSeat"]
    assert payload["seatToken"] is None
    assert [e["code"] for e in payload["userErrors"]] == ["NOT_FOUND"], payload


SPLIT = "\ud800"
"""A lone surrogate: it has no UTF-8 form, so no stored token can match it."""


async def test_a_seat_token_without_a_utf8_form_is_refused_in_words(seated: Seated) -> None:
    """episodeEvents(as:, seatToken:) with a lone surrogate for the token: INTERNAL, where any
    other wrong token is the BAD_USER_INPUT "wrong or missing seat token" (token_hash encodes
    the token to UTF-8 and raises)."""
    async with socket(seated.url) as ws:
        await send(ws, {"type": "connection_init", "payload": {"token": API_TOKEN}})
        assert (await receive(ws))["type"] == "connection_ack"
        variables = {"id": seated.episode, "seat": 0, "token": SPLIT}
        request = {"query": WATCH, "variables": variables}
        await send(ws, {"id": "1", "type": "subscribe", "payload": request})
        message = await receive(ws)
    assert message["payload"]["errors"] == [
        {
            "message": "wrong or missing seat token for this seat",
            "extensions": {"code": "BAD_USER_INPUT"},
        }
    ], message


@pytest.mark.parametrize("payload", [{"seatToken": SPLIT}, {"token": SPLIT}])
async def test_a_connection_init_token_without_a_utf8_form_closes_4403(
    seated: Seated, payload: dict[str, str]
) -> None:
    """A connection_init whose token or seat token is a lone surrogate crashed the websocket
    handler (an exception in the ASGI application, logged at ERROR with its traceback) and the
    socket dropped without a close code, where a wrong token is closed with 4403."""
    async with socket(seated.url) as ws:
        await send(ws, {"type": "connection_init", "payload": payload})
        code, _ = await close_code(ws)
    assert code == 4403


async def test_every_field_refuses_a_seat_token_without_a_utf8_form_in_words(
    seated: Seated,
) -> None:
    """seatView hashes the token it is given as episodeEvents does: the same refusal as for any
    wrong token. submitAction validates its input first, and says that such a token is no text,
    as it says of any field (and of a token over 200 characters); neither tells anything of the
    seat."""
    response = await post(
        seated.url, SUBMIT, action(seated.episode, 0, SPLIT), f"Bearer {API_TOKEN}"
    )
    assert response.json()["data"]["submitAction"] == {
        "sequence": None,
        "episode": None,
        "perspective": None,
        "userErrors": [
            {"field": ["input", "seatToken"], "message": "must be text (UTF-8)", "code": "INVALID"}
        ],
    }, response.text
    variables = {"id": seated.episode, "seat": 0, "token": SPLIT}
    response = await post(seated.url, VIEW, variables, f"Bearer {API_TOKEN}")
    assert response.json() == {"data": {"seatView": None}}, response.text


async def test_a_connection_init_bearer_header_without_a_utf8_form_closes_4403(
    seated: Seated,
) -> None:
    async with socket(seated.url) as ws:
        await send(ws, {"type": "connection_init", "payload": {"authorization": f"Bearer {SPLIT}"}})
        code, _ = await close_code(ws)
    assert code == 4403
