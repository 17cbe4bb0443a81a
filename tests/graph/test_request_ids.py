"""Every request gets an id, in its response and on its log lines; a client's own well-formed
`X-Request-ID` is kept."""

import re

import httpx
import pytest
from starlette.types import Receive, Scope, Send

from parley.graph.request_ids import RequestIds
from parley.lifecycle import logs

NEW_ID = re.compile(r"[0-9a-f]{16}")


async def test_a_clients_own_id_is_answered_back(api_url: str) -> None:
    async with httpx.AsyncClient() as http:
        answer = await http.get(f"{api_url}/healthz", headers={"X-Request-ID": "run-7.step_2"})
    assert answer.headers["x-request-id"] == "run-7.step_2"


@pytest.mark.parametrize("given", [None, "", "has space", "x" * 101, "semi;colon"])
async def test_a_missing_or_malformed_id_is_replaced_by_a_new_one(
    api_url: str, given: str | None
) -> None:
    headers = {} if given is None else {"X-Request-ID": given}
    async with httpx.AsyncClient() as http:
        answers = [await http.get(f"{api_url}/healthz", headers=headers) for _ in range(2)]
    ids = [a.headers["x-request-id"] for a in answers]
    assert all(NEW_ID.fullmatch(i) for i in ids) and ids[0] != ids[1]


async def test_the_id_is_on_the_log_context_while_the_request_runs() -> None:
    seen: list[dict[str, str]] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        seen.append(logs.current())
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    transport = httpx.ASGITransport(app=RequestIds(app))
    async with httpx.AsyncClient(transport=transport, base_url="http://parley") as http:
        answer = await http.get("/", headers={"X-Request-ID": "abc"})
    assert answer.headers["x-request-id"] == "abc"
    assert seen == [{"request": "abc"}]
    assert "request" not in logs.current()
