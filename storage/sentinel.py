"""Reaching Redis through Sentinel, so that every connection follows a failover by itself.

The URL form (redis-py parses none for Sentinel):

    redis+sentinel://[[username]:password@]host[:port][,host[:port]...]/service[/db]
        [?sentinel_password=...&sentinel_username=...]

- the hosts are the Sentinels (port 26379 when left out; an IPv6 address in brackets);
- `service` is the name the Sentinels monitor the primary under (`sentinel monitor <service>`);
- the user and password before `@` are the data nodes' (the primary's and its replicas');
- `sentinel_password` (and `sentinel_username`) are the Sentinels' own, when they ask for one;
- every part is percent-decoded, so a password may hold any character.

A client opened on such a URL asks the Sentinels for the primary's address whenever a connection
is (re)made: a connection to a primary that died fails, is made again to the new one, and the
command is sent once more; one to a primary demoted since answers READONLY, which redis-py's
Sentinel connection turns into the same reconnect.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit, urlunsplit

from redis.asyncio.connection import BlockingConnectionPool
from redis.asyncio.sentinel import Sentinel, SentinelConnectionPool

SCHEME = "redis+sentinel"
DEFAULT_PORT = 26379
SENTINEL_TIMEOUT = 1.0
"""Seconds a Sentinel may take to connect and to answer which node is the primary before the
next one is asked."""
QUERY = ("sentinel_password", "sentinel_username")


@dataclass(frozen=True)
class SentinelTarget:
    """What a `redis+sentinel://` URL names."""

    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int = 0
    username: str | None = None
    password: str | None = None
    sentinel_username: str | None = None
    sentinel_password: str | None = None

    def url(self) -> str:
        """This target as a URL `parse` reads back."""
        auth = ""
        if self.username is not None or self.password is not None:
            auth = f"{_quoted(self.username)}:{_quoted(self.password)}@"
        hosts = ",".join(f"{_host(host)}:{port}" for host, port in self.sentinels)
        query = "&".join(
            f"{name}={quote(value, safe='')}"
            for name, value in (
                ("sentinel_password", self.sentinel_password),
                ("sentinel_username", self.sentinel_username),
            )
            if value is not None
        )
        db = f"/{self.db}" if self.db else ""
        return f"{SCHEME}://{auth}{hosts}/{quote(self.service, safe='')}{db}" + (
            f"?{query}" if query else ""
        )

    def redacted(self) -> str:
        """Where this target is, with no password: for logs and messages."""
        hosts = ",".join(f"{_host(host)}:{port}" for host, port in self.sentinels)
        return f"Sentinel service {self.service!r} at {hosts}"


def is_sentinel_url(url: str) -> bool:
    return url.lower().startswith(f"{SCHEME}://")


def parse(url: str) -> SentinelTarget:
    """The Sentinels, service, database and passwords a `redis+sentinel://` URL names;
    ValueError saying what is wrong with one that is not of that form."""
    if not is_sentinel_url(url):
        raise ValueError(f"a Sentinel URL starts with {SCHEME}://")
    rest = url[len(SCHEME) + 3 :]
    rest, _, fragment = rest.partition("#")
    if fragment:
        raise ValueError("a Sentinel URL has no #fragment")
    rest, _, query = rest.partition("?")
    location, slash, path = rest.partition("/")
    if location.count("@") > 1:
        raise ValueError("a Sentinel URL has one @: write an @ in a user or password as %40")
    _decoded(rest)  # every %-escape well formed
    auth, at, hosts = location.rpartition("@")
    if not slash or not path.strip("/"):
        raise ValueError(
            "a Sentinel URL names the service the Sentinels monitor: "
            f"{SCHEME}://host:port,host:port/service"
        )
    username = password = None
    if at:
        user, colon, secret = auth.partition(":")
        username = unquote(user) or None
        password = unquote(secret) if colon else None
    service, *more = path.split("/")
    if len(more) > 1 or (more and not more[0].isdigit()):
        raise ValueError(f"after the service comes only a database number, not {path!r}")
    options = _options(query)
    return SentinelTarget(
        sentinels=tuple(_address(part) for part in hosts.split(",")),
        service=unquote(service),
        db=int(more[0]) if more else 0,
        username=username,
        password=password,
        sentinel_username=options.get("sentinel_username"),
        sentinel_password=options.get("sentinel_password"),
    )


def from_settings(
    sentinels: str,
    service: str,
    password: str | None = None,
    sentinel_password: str | None = None,
) -> SentinelTarget:
    """A target from `PARLEY_SENTINELS` ("host:port,host:port"), `PARLEY_SENTINEL_SERVICE`
    and the two passwords."""
    if not service:
        raise ValueError("name the service the Sentinels monitor (PARLEY_SENTINEL_SERVICE)")
    return SentinelTarget(
        sentinels=tuple(_address(part.strip()) for part in sentinels.split(",")),
        service=service,
        password=password or None,
        sentinel_password=sentinel_password or None,
    )


_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


def _decoded(text: str) -> str:
    """`text` percent-decoded; ValueError for a % not followed by two hex digits."""
    if _ESCAPE.search(text):
        raise ValueError("a Sentinel URL writes % only as %XX (two hex digits)")
    return unquote(text)


def _options(query: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for name, values in parse_qs(query, keep_blank_values=True, strict_parsing=False).items():
        if name not in QUERY:
            raise ValueError(f"a Sentinel URL takes {' and '.join(QUERY)}, not {name!r}")
        if len(values) > 1:
            raise ValueError(f"a Sentinel URL gives {name} once")
        found[name] = values[0]
    return found


def _address(part: str) -> tuple[str, int]:
    """(host, port) of one `host[:port]` (`[v6 address][:port]`)."""
    if not part:
        raise ValueError("a Sentinel URL names at least one Sentinel, each as host:port")
    if part.startswith("["):
        host, bracket, port_text = part[1:].partition("]")
        if not bracket or (port_text and not port_text.startswith(":")):
            raise ValueError("a Sentinel's IPv6 address is written [address]:port")
        port_text = port_text[1:]
    else:
        host, _, port_text = part.partition(":")
    if not host:
        raise ValueError("a Sentinel written with no host: write host:port")
    if not port_text:
        return host, DEFAULT_PORT
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"Sentinel {host!r} has no port from 1 to 65535")  # the port unsaid
    return host, int(port_text)


def _host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _quoted(value: str | None) -> str:
    return quote(value, safe="") if value is not None else ""


def check_url(url: str) -> str:
    """`url` unchanged if it is no Sentinel URL or a well-formed one; ValueError otherwise
    (for settings: a bad URL is refused at start, in one line)."""
    if is_sentinel_url(url):
        parse(url)
    else:
        scheme = urlsplit(url).scheme.lower()
        if scheme.endswith("+sentinel"):
            raise ValueError(f"{scheme}:// is not supported: use {SCHEME}://")
    return url


class BlockingSentinelPool(SentinelConnectionPool, BlockingConnectionPool):
    """A Sentinel pool that makes a caller wait for a free connection, as Parley's plain pool
    does (storage/connection.py), instead of failing with "Too many connections"."""

    sentinel_manager: Sentinel

    async def disconnect(self, inuse_connections: bool = True) -> None:
        """Also close the connections to the Sentinels when the client is closed (a new
        primary found disconnects only the idle connections, and keeps them)."""
        await super().disconnect(inuse_connections)
        if inuse_connections:
            for sentinel in self.sentinel_manager.sentinels:
                await sentinel.connection_pool.disconnect()


def sentinel_pool(target: SentinelTarget, **connection: Any) -> BlockingSentinelPool:
    """A pool of connections to the primary of `target`'s service, found through its
    Sentinels whenever a connection is made; `connection` holds the pool's and the data
    connections' settings."""
    sentinel_kwargs: dict[str, Any] = {
        "socket_timeout": SENTINEL_TIMEOUT,
        "socket_connect_timeout": SENTINEL_TIMEOUT,
        "decode_responses": True,
    }
    if target.sentinel_password is not None:
        sentinel_kwargs["password"] = target.sentinel_password
    if target.sentinel_username is not None:
        sentinel_kwargs["username"] = target.sentinel_username
    manager = Sentinel(list(target.sentinels), sentinel_kwargs=sentinel_kwargs)  # type: ignore[no-untyped-call]
    return BlockingSentinelPool(  # type: ignore[no-untyped-call]
        target.service,
        manager,
        is_master=True,
        db=target.db,
        username=target.username,
        password=target.password,
        **connection,
    )


def shown_url(url: str) -> str:
    """Where a Redis URL points, with no password or query: for messages and logs."""
    if is_sentinel_url(url):
        try:
            return parse(url).redacted()
        except ValueError:
            return "a Sentinel URL that does not parse"
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))
