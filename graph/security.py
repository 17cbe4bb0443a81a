"""Request guards in front of the app: the Host names it answers, no writes from other sites,
a body size limit and optional bearer tokens."""

import hmac
import json
import logging
from collections.abc import Awaitable, Callable, Iterable
from contextvars import ContextVar
from typing import Any

import redis.asyncio as redis
from starlette.datastructures import Headers, QueryParams
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from strawberry.http.websocket_origin import (
    is_same_origin,
    normalize_allowed_origins,
    normalize_origin,
)

from parley.core.limits import has_utf8_form
from parley.graph.errors import RETRY_AFTER_SECONDS, UNAVAILABLE, unavailable_message
from parley.graph.rater_access import RATER_SCHEME
from parley.graph.seat_access import SEAT_SCHEME
from parley.graph.settings import split
from parley.lifecycle.raters import RaterHolder
from parley.lifecycle.seats import SeatHolder

SeatLookup = Callable[[str], Awaitable[SeatHolder | None]]
"""The seat a seat token is the token of (lifecycle/seats.py `Seats.holder`), or None."""
RaterLookup = Callable[[str], Awaitable[RaterHolder | None]]
"""The rater a rater token is the token of (lifecycle/studies.py `Studies.holder`), or None."""
OPEN_PATHS = frozenset({"/healthz", "/readyz"})
"""Probes answer without a token (they reveal nothing)."""
PAGE_PATHS = frozenset({"/", "/graphql"})
"""The pages a browser opens (the web app, GraphiQL): without a token, as pages only; they ask
for the token and send it with every request they make."""


LOOPBACK_HOSTS = ["localhost", "127.0.0.1", "[::1]"]
EVERY_INTERFACE = frozenset({"", "0.0.0.0", "::", "[::]"})


def trusted_hosts(setting: str, bind: str) -> list[str]:
    """The Host names the API answers (any port): the `setting` (comma-separated, `*` for any,
    `*.example.org` for a domain's names) when given. Otherwise the loopback names and the
    address it is bound to, so that a page whose name was rebound to this machine (DNS
    rebinding) is refused; bound to every interface (0.0.0.0, ::), any name, as the names the
    machine is reached by are not known."""
    listed = split(setting)
    if listed:
        return ["*"] if "*" in listed else listed
    if bind in EVERY_INTERFACE:
        return ["*"]
    host = f"[{bind}]" if ":" in bind else bind
    return LOOPBACK_HOSTS + ([] if host.lower() in LOOPBACK_HOSTS else [host])


INCOMPLETE_HANDSHAKE = "ASGI callable returned without completing handshake."
_refused_handshake: ContextVar[bool] = ContextVar("refused_handshake", default=False)


class RefusedHandshakes:
    """Notes a websocket handshake answered with an HTTP response (TrustedHostMiddleware's 400
    "Invalid host header"), in the context of the server task that runs the connection."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return

        async def noted(message: Message) -> None:
            if message["type"] == "websocket.http.response.start":
                _refused_handshake.set(True)
            await send(message)

        await self.app(scope, receive, noted)


class RefusedHandshakeLog(logging.Filter):
    """Drops uvicorn's ERROR "ASGI callable returned without completing handshake." after a
    refusal that RefusedHandshakes noted: its websockets-sansio protocol logs it for every
    handshake answered with an HTTP response, which it logged at INFO already (with the
    status), as it never marks such a handshake complete."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.msg == INCOMPLETE_HANDSHAKE and _refused_handshake.get())


class TokenChecker:
    """Constant-time comparison against the configured tokens; no tokens means open."""

    def __init__(self, tokens: Iterable[str]) -> None:
        self.tokens = [t.encode() for t in tokens]

    @property
    def enabled(self) -> bool:
        return bool(self.tokens)

    def accepts(self, token: str | None) -> bool:
        if not self.enabled:
            return True
        if not token or not has_utf8_form(token):  # no token configured lacks one
            return False
        given = token.encode()
        return any(hmac.compare_digest(given, t) for t in self.tokens)

    def accepts_header(self, value: str | None) -> bool:
        """An `Authorization: Bearer <token>` value."""
        scheme, _, token = (value or "").partition(" ")
        return self.accepts(token.strip() if scheme.lower() == "bearer" else None)

    def accepts_connection_params(self, params: Any) -> bool:
        """A websocket `connection_init` payload: {"authorization": "Bearer …"} or {"token": …}."""
        if not self.enabled:
            return True
        if not isinstance(params, dict):
            return self.accepts(None)
        token = params.get("token")
        if isinstance(token, str) and self.accepts(token):
            return True
        header = params.get("authorization") or params.get("Authorization")
        return isinstance(header, str) and self.accepts_header(header)


def well_formed(message: object, start: str, stop: str) -> bool:
    """Whether the websocket protocol handlers can read a frame without crashing (they index it
    unchecked): an object with a type; a message that starts or stops an operation (`subscribe`
    and `complete`, or `start` and `stop` in the legacy protocol) with a string id, and one that
    starts it with a payload of a string query, optional object variables and optional string
    operationName."""
    if not isinstance(message, dict) or "type" not in message:
        return False
    if message["type"] not in (start, stop):
        return True
    if not isinstance(message.get("id"), str):
        return False
    payload = message.get("payload")
    return message["type"] == stop or (
        isinstance(payload, dict)
        and isinstance(payload.get("query"), str)
        and isinstance(payload.get("variables"), dict | None)
        and isinstance(payload.get("operationName"), str | None)
    )


async def send_json(send: Send, status: int, body: dict[str, Any], headers: list[Any]) -> None:
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *headers],
        }
    )
    await send({"type": "http.response.body", "body": data})


async def send_unavailable(send: Send, err: BaseException) -> None:
    """503 with a retry hint, as graph/errors.py answers a request that met a Redis outage."""
    body = {"errors": [{"message": unavailable_message(err), "extensions": UNAVAILABLE}]}
    await send_json(send, 503, body, [(b"retry-after", str(RETRY_AFTER_SECONDS).encode())])


class BearerAuth:
    """Every HTTP request needs a valid token, except the probes and the GraphiQL page itself
    with its assets under `open_prefixes` (a browser loads them without headers; its requests
    then carry the header set in GraphiQL). A GraphQL request may instead carry the token of a
    seat that `seats` knows (graph/seat_access.py), or of a rater that `raters` knows
    (graph/rater_access.py). Websockets are checked at `connection_init` by the GraphQL app.
    """

    def __init__(
        self,
        app: ASGIApp,
        checker: TokenChecker,
        open_prefixes: tuple[str, ...] = (),
        seats: SeatLookup | None = None,
        raters: RaterLookup | None = None,
    ) -> None:
        self.app = app
        self.checker = checker
        self.open_prefixes = open_prefixes
        self.seats = seats
        self.raters = raters

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.checker.enabled or self._open(scope):
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        authorization = headers.get(b"authorization", b"").decode("latin-1")
        if self.checker.accepts_header(authorization):
            await self.app(scope, receive, send)
            return
        scheme, _, scoped_token = authorization.partition(" ")
        lookups = {SEAT_SCHEME: ("seat", self.seats), RATER_SCHEME: ("rater", self.raters)}
        kind, lookup = lookups.get(scheme.lower(), ("", None))
        if lookup is not None and scope["path"] == "/graphql":
            try:
                holder = await lookup(scoped_token.strip())
            except (redis.RedisError, OSError) as err:
                await send_unavailable(send, err)
                return
            if holder is not None:  # then only its own fields (graph/seat_access.py)
                scope.setdefault("state", {})[kind] = holder
                await self.app(scope, receive, send)
                return
        message = "a valid bearer token is required (Authorization: Bearer <token>)"
        await send_json(
            send, 401, {"errors": [{"message": message}]}, [(b"www-authenticate", b"Bearer")]
        )

    def _open(self, scope: Scope) -> bool:
        path: str = scope["path"]
        if path in OPEN_PATHS or path.startswith(self.open_prefixes):
            return True
        if path not in PAGE_PATHS:
            return False
        accept = dict(scope["headers"]).get(b"accept", b"")
        # A GET with a `query` parameter is executed even when it asks for HTML, so only a
        # GET without one is the page.
        return (
            scope["method"] == "GET"
            and b"text/html" in accept
            and "query" not in QueryParams(scope["query_string"])
        )


SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
LISTED_ORIGINS = "PARLEY_CORS_ORIGINS (or PARLEY_ALLOWED_ORIGINS)"


class CrossSiteWrites:
    """Refuse (403) a request that may write (any method but GET, HEAD and OPTIONS) that a
    browser sent from a page of another origin: its `Origin` is neither this server's (the
    Host it was sent to, which `trusted_hosts` vouches for) nor listed in `origins`, or it says
    `Sec-Fetch-Site: cross-site` (or `same-site`) and names no origin. A browser sends a
    text/plain POST from any page without asking first; clients that are not browsers send
    neither header and pass."""

    def __init__(self, app: ASGIApp, origins: Iterable[str]) -> None:
        self.app = app
        self.origins = normalize_allowed_origins(list(origins))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in SAFE_METHODS:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        origin = headers.get("origin")
        if self.allows(origin, headers.get("sec-fetch-site"), headers.get("host")):
            await self.app(scope, receive, send)
            return
        message = (
            f"cross-site request refused: a page on {origin or 'another site'} may not send "
            f"writes here; list its origin in {LISTED_ORIGINS} to allow it"
        )
        await send_json(send, 403, {"errors": [{"message": message}]}, [])

    def allows(self, origin: str | None, site: str | None, host: str | None) -> bool:
        if site == "same-origin":  # the browser's word (a proxy may have rewritten the Host)
            return True
        if origin is None:
            return site not in ("cross-site", "same-site")
        return (
            is_same_origin(origin, host)
            or "*" in self.origins
            or normalize_origin(origin) in self.origins
        )


class BodySizeLimit:
    """Refuse HTTP bodies over `limit` bytes with 413, by header or while streaming."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.limit:
            await self._refuse(send)
            return
        seen = 0
        refused = False

        async def limited() -> Message:
            nonlocal seen, refused
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    refused = True
                    raise BodyTooLarge
            return message

        try:
            await self.app(scope, limited, send)
        except BodyTooLarge:
            if refused:
                await self._refuse(send)

    async def _refuse(self, send: Send) -> None:
        message = f"request body is over the limit of {self.limit} bytes"
        await send_json(send, 413, {"errors": [{"message": message}]}, [])


class BodyTooLarge(Exception):
    pass
