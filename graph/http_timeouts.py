"""Slow clients are cut: a request's headers must arrive within one limit and its body within
another (`PARLEY_HEADER_TIMEOUT`, `PARLEY_BODY_TIMEOUT`).

uvicorn sets no limit on the time headers take (its keep-alive timer stops at a request's
first byte, and nothing runs before a connection's first byte), so a client that trickles a
byte every few seconds holds its connection, and a task, for as long as it likes. The header
limit is kept in the HTTP protocol uvicorn runs (`parley serve` passes `header_limited`'s
class): httptools, which `uvicorn[standard]` installs and uvicorn prefers. It runs from a
connection's start, and from each later request's first byte, to the request's last header;
a websocket handshake is such a request. The body limit is ASGI middleware (`BodyDeadline`),
from the request reaching the app to its body's last byte, answered 408.
"""

import asyncio
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from parley.graph.security import send_json


def request_timeout(seconds: float) -> bytes:
    """The 408 answer to headers that were late (written as is: no app has the request)."""
    text = f"request timeout: the headers did not arrive within {seconds:g} s".encode()
    return (
        b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
        b"content-length: %d\r\nconnection: close\r\n\r\n%b" % (len(text), text)
    )


class HeaderDeadline(HttpToolsProtocol):
    """uvicorn's httptools protocol, closing a connection whose request headers are not all
    there `header_timeout` seconds after it opened (its first request) or after the request's
    first byte (a later one); a request begun in time gets a 408 first."""

    header_timeout = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.header_timer: asyncio.TimerHandle | None = None
        self.request_begun = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self.request_begun = True
        if self.header_timer is None:  # the first request keeps the connection's deadline
            self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        self.request_begun = False
        super().on_headers_complete()

    def _arm(self) -> None:
        self.header_timer = self.loop.call_later(self.header_timeout, self._headers_late)

    def _disarm(self) -> None:
        if self.header_timer is not None:
            self.header_timer.cancel()
            self.header_timer = None

    def _headers_late(self) -> None:
        self.header_timer = None
        if self.transport.is_closing():
            return
        answering = self.cycle is not None and not self.cycle.response_complete
        if self.request_begun and not answering:
            self.transport.write(request_timeout(self.header_timeout))
        self.transport.close()


def header_limited(header_timeout: float) -> type[asyncio.Protocol]:
    """The protocol class for uvicorn's `http` option, with this header limit."""

    class Limited(HeaderDeadline):
        pass

    Limited.header_timeout = header_timeout
    return Limited


class BodyTooSlow(Exception):
    pass


class BodyDeadline:
    """Answer 408 and close the connection when a request's body has not all arrived
    `timeout` seconds after the request reached the app (only while the app reads it)."""

    def __init__(self, app: ASGIApp, timeout: float) -> None:
        self.app = app
        self.timeout = timeout

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        deadline = asyncio.get_running_loop().time() + self.timeout
        complete = False
        answered = False

        async def timed_receive() -> Message:
            nonlocal complete
            if complete:  # later calls wait for the client to leave (a streamed answer)
                return await receive()
            try:
                async with asyncio.timeout_at(deadline):
                    message = await receive()
            except TimeoutError:
                raise BodyTooSlow from None
            complete = message["type"] != "http.request" or not message.get("more_body", False)
            return message

        async def watched_send(message: Message) -> None:
            nonlocal answered
            answered = answered or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, timed_receive, watched_send)
        except BodyTooSlow:
            if answered:
                raise
            message = f"request timeout: the body did not arrive within {self.timeout:g} s"
            await send_json(
                send, 408, {"errors": [{"message": message}]}, [(b"connection", b"close")]
            )
