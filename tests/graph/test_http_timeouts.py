"""Slow clients against a real `parley serve`: request headers (a websocket handshake's too) and
bodies that do not arrive within their limits get the connection cut; an honest client that
sends a large body within the limit is served."""

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from bench.support.processes import ApiProcess, api_process, parley_env

HEADER_TIMEOUT = 2
BODY_TIMEOUT = 4
GIVE_UP = 20
"""Bytes a trickling client sends, one a second, before the test says it was never cut."""
HEADERS = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"s" * GIVE_UP
HANDSHAKE = (
    b"GET /graphql HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
    b"Sec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n"
)


@pytest.fixture(scope="module")
def api(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiProcess]:
    directory = tmp_path_factory.mktemp("timeouts")
    env = parley_env(
        redis_url,
        directory / "data",
        header_timeout=str(HEADER_TIMEOUT),
        body_timeout=str(BODY_TIMEOUT),
    )
    with api_process(env, directory / "api.log", "--no-worker") as process:
        yield process


async def trickle(api: ApiProcess, head: bytes, drip: bytes) -> tuple[bool, bytes]:
    """Send `head` at once, then `drip` a byte a second. Whether the server closed the
    connection before the last byte, and what it answered."""
    reader, writer = await asyncio.open_connection("127.0.0.1", api.port)
    answer = b""
    try:
        writer.write(head)
        await writer.drain()
        for byte in drip:
            try:
                async with asyncio.timeout(1):
                    while chunk := await reader.read(4096):
                        answer += chunk
                return True, answer  # end of stream: the server closed it
            except TimeoutError:
                pass
            except ConnectionResetError:
                return True, answer
            try:
                writer.write(bytes([byte]))
                await writer.drain()
            except (ConnectionResetError, BrokenPipeError):
                return True, answer
        return False, answer
    finally:
        writer.close()


async def test_headers_trickled_a_byte_a_second_are_cut(api: ApiProcess) -> None:
    began = time.monotonic()
    closed, answer = await trickle(api, b"", HEADERS)
    assert closed, "the server waited for every byte"
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert answer.endswith(b"the headers did not arrive within 2 s")
    assert time.monotonic() - began < GIVE_UP


async def test_a_connection_that_sends_nothing_is_cut(api: ApiProcess) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", api.port)
    try:
        async with asyncio.timeout(GIVE_UP):
            answer = await reader.read()  # until the server closes the connection
    finally:
        writer.close()
    assert answer == b""


async def test_a_websocket_handshake_trickled_is_cut(api: ApiProcess) -> None:
    closed, answer = await trickle(api, b"", HANDSHAKE[:GIVE_UP])
    assert closed
    assert answer.startswith(b"HTTP/1.1 408 "), answer


@pytest.mark.parametrize("path", ["/graphql", "/import"])
async def test_a_body_trickled_a_byte_a_second_is_cut(api: ApiProcess, path: str) -> None:
    body = b'{"query": "' + b" " * GIVE_UP
    content_type = b"application/json" if path == "/graphql" else b"application/x-ndjson"
    head = (
        b"POST %b HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: %b\r\nContent-Length: %d\r\n\r\n"
        % (path.encode(), content_type, len(body) + 10)
    )
    closed, answer = await trickle(api, head, body)
    assert closed, "the server waited for every byte"
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert b"the body did not arrive within 4 s" in answer


async def test_a_large_body_sent_slowly_within_the_limit_is_served(api: ApiProcess) -> None:
    """About 900 kB over about two seconds: slower than most, within the body limit."""
    query = "{ __typename }"
    body = json.dumps({"query": query}).encode()
    body = body[:-1] + b" " * (900_000 - len(body)) + b"}"

    async def parts() -> AsyncIterator[bytes]:
        for start in range(0, len(body), 90_000):
            await asyncio.sleep(0.2)
            yield body[start : start + 90_000]

    async with httpx.AsyncClient(base_url=api.url, timeout=30) as http:
        response = await http.post(
            "/graphql",
            content=parts(),
            headers={"content-type": "application/json", "content-length": str(len(body))},
        )
    assert response.status_code == 200, response.text
    assert response.json() == {"data": {"__typename": "Query"}}
