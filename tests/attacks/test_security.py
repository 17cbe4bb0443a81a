"""Cross-site writes and DNS rebinding, against a real uvicorn serving the default (token-less)
app.

A page on another site can POST to Parley with a content type a browser sends without asking
first (text/plain), and a page whose name was rebound to 127.0.0.1 talks to Parley as if it were
its own origin, under its own Host. Both are refused, over HTTP and on websocket handshakes,
while the server's own pages, listed origins and clients that are not browsers keep working.
"""

import asyncio
import json
import logging
from collections.abc import AsyncIterator

import httpx
import pytest

from parley.graph.security import (
    INCOMPLETE_HANDSHAKE,
    LOOPBACK_HOSTS,
    RefusedHandshakeLog,
    trusted_hosts,
)
from tests.support.server import WAIT, serve
from tests.support.tagged import CREATE_TAGGED_AGENT, agent_line, new_tag, tagged

FOREIGN = "https://evil.example"
CORS_ORIGIN = "https://app.example"
WS_ORIGIN = "https://ws.example"
READ = "/graphql?query=%7B__typename%7D"


@pytest.fixture(scope="module")
async def listed(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    """The app with one CORS origin and one websocket origin listed."""
    directory = tmp_path_factory.mktemp("listed")
    async with serve(
        redis_url, directory, cors_origins=CORS_ORIGIN, allowed_origins=WS_ORIGIN
    ) as url:
        yield url


async def create_agent(base_url: str, tag: str, headers: dict[str, str]) -> httpx.Response:
    body = json.dumps({"query": CREATE_TAGGED_AGENT, "variables": {"tag": tag}})
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        return await http.post(
            "/graphql", content=body, headers={"content-type": "application/json", **headers}
        )


# --- writes from other sites ----------------------------------------------------------------


@pytest.mark.parametrize(
    "headers",
    [
        {"origin": FOREIGN},
        {"origin": "null"},  # a sandboxed frame, a file:// page
        {"origin": FOREIGN, "sec-fetch-site": "cross-site"},
        {"sec-fetch-site": "cross-site"},
        {"origin": "http://127.0.0.1:1"},  # another local service's page
    ],
)
async def test_a_graphql_write_from_another_site_is_refused(
    api_url: str, headers: dict[str, str]
) -> None:
    tag = new_tag("xsite")
    response = await create_agent(api_url, tag, headers)
    assert response.status_code == 403, response.text
    assert "cross-site request refused" in response.json()["errors"][0]["message"]
    assert await tagged(api_url, tag) == 0


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-ndjson", None])
async def test_an_import_from_another_site_is_refused(
    api_url: str, content_type: str | None
) -> None:
    """The reported write: a page's `fetch(…/import, {method: "POST", body})` is sent as
    text/plain with no preflight."""
    tag = new_tag("xsite")
    headers = {"origin": FOREIGN, **({"content-type": content_type} if content_type else {})}
    async with httpx.AsyncClient(base_url=api_url, timeout=30) as http:
        response = await http.post("/import", content=agent_line(tag), headers=headers)
    assert response.status_code == 403, response.text
    assert await tagged(api_url, tag) == 0


@pytest.mark.parametrize(
    "headers",
    [
        {},  # not a browser: the CLI, the typed client, scripts
        {"origin": "same"},
        {"origin": "same", "sec-fetch-site": "same-origin"},
        {"sec-fetch-site": "same-origin"},
        {"sec-fetch-site": "none"},
        {"origin": CORS_ORIGIN, "sec-fetch-site": "cross-site"},
        {"origin": WS_ORIGIN, "sec-fetch-site": "cross-site"},
    ],
)
async def test_writes_from_the_same_or_a_listed_origin_and_from_non_browsers_are_served(
    listed: str, headers: dict[str, str]
) -> None:
    tag = new_tag("xsite")
    if headers.get("origin") == "same":
        headers = {**headers, "origin": listed}
    response = await create_agent(listed, tag, headers)
    assert response.status_code == 200, response.text
    assert await tagged(listed, tag) == 1


async def test_reads_from_another_site_are_left_to_cors(listed: str) -> None:
    """A cross-site GET changes nothing; whether its page may read the answer is CORS's to say."""
    async with httpx.AsyncClient(base_url=listed, timeout=30) as http:
        response = await http.get(READ, headers={"origin": FOREIGN})
    assert response.status_code == 200
    assert "access-control-allow-origin" not in response.headers


# --- Host: DNS rebinding --------------------------------------------------------------------


async def status_for(base_url: str, host: str, *, websocket: bool = False) -> int:
    """The status line's code for a request to `base_url` naming `host` in its Host header."""
    url = httpx.URL(base_url)
    assert url.port is not None
    lines = [f"GET {'/graphql' if websocket else READ} HTTP/1.1", f"Host: {host}"]
    if websocket:
        lines += [
            "Upgrade: websocket",
            "Connection: Upgrade",
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
            "Sec-WebSocket-Version: 13",
            "Sec-WebSocket-Protocol: graphql-transport-ws",
        ]
    else:
        lines.append("Connection: close")
    reader, writer = await asyncio.open_connection(url.host, url.port)
    try:
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        await writer.drain()
        async with asyncio.timeout(WAIT):
            status = await reader.readline()
    finally:
        writer.close()
    assert status.startswith(b"HTTP/1.1 "), status
    return int(status.split()[1])


@pytest.mark.parametrize(
    "host", ["attacker.example", "attacker.example:{port}", "127.0.0.1.attacker.example:{port}"]
)
@pytest.mark.parametrize("websocket", [False, True])
async def test_a_request_naming_another_host_is_refused(
    api_url: str, host: str, websocket: bool
) -> None:
    """What a browser sends after `attacker.example` was rebound to 127.0.0.1."""
    host = host.format(port=httpx.URL(api_url).port)
    assert await status_for(api_url, host, websocket=websocket) == 400


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "[::1]", "LOCALHOST"])
@pytest.mark.parametrize("websocket", [False, True])
async def test_loopback_names_are_served_with_any_port(
    api_url: str, host: str, websocket: bool
) -> None:
    port = httpx.URL(api_url).port
    for named in (host, f"{host}:{port}"):
        assert await status_for(api_url, named, websocket=websocket) == (101 if websocket else 200)


async def test_the_allowed_hosts_can_be_configured(
    redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    async with serve(
        redis_url, tmp_path_factory.mktemp("hosts"), allowed_hosts="parley.example, *.lab.example"
    ) as url:
        assert await status_for(url, "parley.example:8000") == 200
        assert await status_for(url, "gpu.lab.example") == 200
        assert await status_for(url, "parley.example", websocket=True) == 101
        assert await status_for(url, "attacker.example") == 400
        assert await status_for(url, "127.0.0.1") == 400  # a list replaces the defaults
    async with serve(redis_url, tmp_path_factory.mktemp("any"), allowed_hosts="*") as url:
        assert await status_for(url, "attacker.example") == 200


@pytest.mark.parametrize(
    ("setting", "bind", "expected"),
    [
        ("", "127.0.0.1", LOOPBACK_HOSTS),
        ("", "localhost", LOOPBACK_HOSTS),
        ("", "::1", LOOPBACK_HOSTS),
        ("", "127.0.0.2", [*LOOPBACK_HOSTS, "127.0.0.2"]),
        ("", "192.168.1.5", [*LOOPBACK_HOSTS, "192.168.1.5"]),
        ("", "fd00::5", [*LOOPBACK_HOSTS, "[fd00::5]"]),
        ("", "0.0.0.0", ["*"]),
        ("", "::", ["*"]),
        ("a.example, b.example", "0.0.0.0", ["a.example", "b.example"]),
        ("*", "127.0.0.1", ["*"]),
    ],
)
def test_the_default_hosts_follow_the_bind_address(
    setting: str, bind: str, expected: list[str]
) -> None:
    assert LOOPBACK_HOSTS == ["localhost", "127.0.0.1", "[::1]"]
    assert trusted_hosts(setting, bind) == expected


async def test_a_refused_websocket_handshake_is_not_logged_as_an_error(
    api_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Each handshake naming another Host (a rebinding page retrying) was refused with 400 and
    logged at ERROR ("ASGI callable returned without completing handshake."), the level kept
    for unexpected errors; the same refusal over HTTP is not."""
    with caplog.at_level(logging.INFO):
        assert await status_for(api_url, "attacker.example", websocket=True) == 400
        assert await status_for(api_url, "attacker.example") == 400
        await asyncio.sleep(0.2)  # the server logs after answering
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == []


def test_an_incomplete_handshake_without_a_refusal_is_still_an_error() -> None:
    """Only the message of a handshake refused with a response is dropped: an application that
    returned without answering one is still logged at ERROR."""
    record = logging.LogRecord(
        "uvicorn.error", logging.ERROR, __file__, 1, INCOMPLETE_HANDSHAKE, None, None
    )
    assert RefusedHandshakeLog().filter(record)
