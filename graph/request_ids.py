"""Every HTTP request and websocket gets an id, in the response and on every log line it causes.

A client's own `X-Request-ID` (up to 100 letters, digits, `-`, `_`, `.`) is kept, so a caller
can follow its request through Parley's logs; otherwise a new one is made.
"""

import re
import uuid

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from parley.lifecycle import logs

HEADER = b"x-request-id"
ACCEPTED = re.compile(rb"^[A-Za-z0-9_.\-]{1,100}$")


class RequestIds:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        given = dict(scope["headers"]).get(HEADER, b"")
        request_id = given.decode() if ACCEPTED.match(given) else uuid.uuid4().hex[:16]

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (HEADER, request_id.encode())]
            await send(message)

        with logs.about(request=request_id):
            await self.app(scope, receive, send_with_id)
