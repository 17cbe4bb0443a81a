"""Connecting to Redis: capability check, binding the models, creating Parley's indexes, and
creating them again when Redis comes back without them."""

import asyncio
import logging
import re
from contextvars import ContextVar
from typing import Any

import redis.asyncio as redis
from aredis_om import Migrator
from aredis_om.model import model as model_module
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import SentinelConnectionPool
from redis.backoff import NoBackoff

from parley.storage import keys
from parley.storage.durability import ReplicaAcks, expect_acks
from parley.storage.models import MODELS
from parley.storage.results_index import ResultsIndex
from parley.storage.sentinel import is_sentinel_url, sentinel_pool
from parley.storage.sentinel import parse as parse_sentinel
from parley.storage.studies import create_annotation_index

log = logging.getLogger(__name__)


class RedisCapabilityError(RuntimeError):
    """The configured Redis lacks a module Parley needs."""


async def check_capabilities(client: redis.Redis) -> None:
    """Fail with one clear line when JSON or Search is missing."""
    missing = []
    probes = (
        (("JSON.GET", keys.CAPABILITY_PROBE), "JSON (RedisJSON)"),
        (("FT._LIST",), "Search (RediSearch)"),
    )
    for command, module in probes:
        try:
            await client.execute_command(*command)  # type: ignore[no-untyped-call]
        except redis.ResponseError as err:
            if "unknown command" in str(err).lower():
                missing.append(module)
            else:
                raise
    if missing:
        raise RedisCapabilityError(
            f"Redis at {describe(client)} lacks {' and '.join(missing)}: use Redis 8, "
            "Redis Stack 7.2+, or leave REDIS_URL unset for the embedded server"
        )


def describe(client: redis.Redis) -> str:
    pool = client.connection_pool
    if isinstance(pool, SentinelConnectionPool):
        return f"the primary of Sentinel service {pool.service_name!r}"
    kwargs = pool.connection_kwargs
    return f"{kwargs.get('host', '?')}:{kwargs.get('port', '?')}"


MAX_CONNECTIONS = 64
SEARCHES = frozenset({"FT.SEARCH", "FT.AGGREGATE", "FT.TAGVALS"})
REBUILD_WAIT = 5.0
"""Seconds a search waits for Parley's indexes to be made again before it is answered that
storage is unavailable (IndexesRebuilding)."""


class IndexesRebuilding(redis.RedisError):
    """Parley's indexes are being made again (Redis came back without them) and do not cover
    every stored record yet: a search now could miss some. Retry shortly."""


def missing_index(error: BaseException) -> bool:
    """Whether Redis refused a search (alone, or in a pipeline) for want of its index (FT.SEARCH
    and FT.AGGREGATE say "no such index", FT.TAGVALS and FT.INFO "Unknown Index name")."""
    text = str(error).lower()
    return isinstance(error, redis.ResponseError) and (
        "no such index" in text or "unknown index" in text
    )


REBUILDING: ContextVar[bool] = ContextVar("rebuilding", default=False)
"""Set in the task that makes the indexes again: its own searches neither wait for it nor
start it again."""


class Client(redis.Redis):
    """A client whose searches outlive a Redis that comes back empty (restarted without
    persistence, or flushed): its indexes are gone with the data, and a search refused for want
    of one makes them all again (`restore_indexes`) and is sent once more."""

    _rebuild: "asyncio.Task[None] | None" = None

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        searching = bool(args) and str(args[0]).upper() in SEARCHES and not REBUILDING.get()
        if searching:
            await self.indexes_ready()
        try:
            return await super().execute_command(*args, **options)  # type: ignore[no-untyped-call]
        except redis.ResponseError as err:
            if not (searching and missing_index(err)):
                raise
        await self.restore_indexes()
        return await super().execute_command(*args, **options)  # type: ignore[no-untyped-call]

    async def restore_indexes(self) -> None:
        """Make Parley's indexes again, once for every search that asks at the same time."""
        if self._rebuild is None or self._rebuild.done():
            log.warning(
                "Redis has lost Parley's indexes (restarted empty, or flushed): making them"
            )
            self._rebuild = asyncio.ensure_future(self._make_indexes())
        await self.indexes_ready()

    async def _make_indexes(self) -> None:
        REBUILDING.set(True)  # in this task's own context
        try:
            await create_indexes(self)
        except redis.RedisError as err:  # its searches fail as they did, and ask again
            log.warning("Parley's indexes not made again: %s", err)

    async def indexes_ready(self) -> None:
        """Wait up to REBUILD_WAIT for indexes being made again; IndexesRebuilding after."""
        rebuild = self._rebuild
        if rebuild is None or rebuild.done():
            return
        try:
            await asyncio.wait_for(asyncio.shield(rebuild), REBUILD_WAIT)
        except TimeoutError:
            raise IndexesRebuilding(
                "Parley's indexes are being made again after Redis lost them"
            ) from None


async def indexes_ready(client: redis.Redis) -> None:
    """`Client.indexes_ready`, for a search sent outside `execute_command` (a pipeline)."""
    if isinstance(client, Client):
        await client.indexes_ready()


async def restore_indexes(client: redis.Redis) -> None:
    """`Client.restore_indexes`, for a search sent outside `execute_command` (a pipeline)."""
    if isinstance(client, Client):
        await client.restore_indexes()
    else:
        await create_indexes(client)


def open_client(
    url: str, max_connections: int = MAX_CONNECTIONS, acks: ReplicaAcks | None = None
) -> redis.Redis:
    """The shared client: decoded strings (as redis-om expects) over a bounded pool.

    The pool makes callers wait for a free connection instead of failing with "Too many
    connections" when hundreds of episodes or requests touch Redis at the same moment. After a
    Redis restart every pooled connection leads to a server that is gone; a connection idle for a
    few seconds is pinged before reuse, and a command that fails on a dead connection is sent once
    more on a new one, so a restart costs no request an error; a search that finds its index
    gone makes Parley's indexes again (`Client`).

    A `redis+sentinel://` URL (storage/sentinel.py) makes every new connection ask the
    Sentinels for the primary, so the client follows a failover. On any URL, a READONLY answer
    (the node was a primary and has been demoted) counts as a dead connection: it is dropped and
    the command sent once more on a new one. With `acks`, the acknowledged scripts wait for
    that many replicas (storage/durability.py).
    """
    options: dict[str, Any] = {
        "decode_responses": True,
        "max_connections": max_connections,
        "timeout": 30,
        "health_check_interval": 5,
        "retry": Retry(NoBackoff(), 1),
    }
    pool: redis.ConnectionPool
    if is_sentinel_url(url):
        pool = sentinel_pool(parse_sentinel(url), **options)
    else:
        pool = redis.BlockingConnectionPool.from_url(url, **options)
        pool.connection_class = following_failover(pool.connection_class)
    client = Client.from_pool(pool)
    expect_acks(client, acks)
    return client


class ReadOnlyReconnects:
    """A connection on which READONLY (its node demoted to a replica) is a lost connection: it
    disconnects and raises ConnectionError, which the client's retry answers by sending the
    command once more on a new connection (the name may lead to the new primary by now). The
    mixin redis-py's Sentinel connection has built in, for plain URLs."""

    async def read_response(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return await super().read_response(*args, **kwargs)  # type: ignore[misc]
        except redis.ReadOnlyError as err:
            await self.disconnect()  # type: ignore[attr-defined]
            raise redis.ConnectionError(f"{err} (the node is a replica now)") from err


class FailoverConnection(ReadOnlyReconnects, redis.Connection):
    pass


class FailoverSSLConnection(ReadOnlyReconnects, redis.SSLConnection):
    pass


class FailoverUnixConnection(ReadOnlyReconnects, redis.UnixDomainSocketConnection):
    pass


FAILOVER_CLASSES: dict[type[Any], type[Any]] = {
    redis.Connection: FailoverConnection,
    redis.SSLConnection: FailoverSSLConnection,
    redis.UnixDomainSocketConnection: FailoverUnixConnection,
}


def following_failover(connection_class: type[Any]) -> type[Any]:
    """The connection class to use for `connection_class` (the URL's): one that reconnects on
    READONLY, for each of redis-py's own."""
    return FAILOVER_CLASSES.get(connection_class, connection_class)


TAG_SPECIALS = re.compile(r"[\x00-\x1f\x7f!-/:-@\[-`{-~\s]")
"""Every ASCII character that is not a letter or digit, and whitespace: escaped in TAG queries.

redis-om's own list leaves out some (`?`, a backquote, `|`, `_`, control characters), and a
filter value holding one makes RediSearch refuse the whole query.
"""


async def prepare(client: redis.Redis) -> None:
    """Check modules, point every model at `client`, and create or update Parley's indexes.

    The one place where process-wide state is set, because redis-om keeps it per class:
    - each model's `_meta.database` is the connection its `get`, `find` and `save` use (so a
      process has one Redis client, this one);
    - redis-om's TAG escaper is made to escape every character in TAG_SPECIALS.
    Everything else that talks to Redis is handed `client` explicitly.
    """
    await check_capabilities(client)
    model_module.escaper.escaped_chars_re = TAG_SPECIALS
    for model in MODELS:
        model._meta.database = client
    await create_indexes(client)


async def create_indexes(client: redis.Redis) -> None:
    """Create (or update) Parley's indexes, and wait until they cover the stored records."""
    await Migrator().run()
    await create_annotation_index(client)
    await wait_indexed(client)  # the stored dimension names are read through their index
    await ResultsIndex(client).prepare()
    await wait_indexed(client)


INDEXING_TIMEOUT = 900.0


async def wait_indexed(client: redis.Redis, timeout: float = INDEXING_TIMEOUT) -> None:
    """Wait until every Parley index covers the records already stored.

    A new index (the first start against a database Sotopia or an older Parley filled, a dump
    just opened) is filled in the background; until then searches miss records. After
    `timeout` seconds the start goes on with a warning.
    """
    try:
        async with asyncio.timeout(timeout):
            names = [keys.index_name(model.__name__) for model in MODELS]
            for name in [*names, keys.RESULTS_INDEX, keys.EVALUATIONS_INDEX]:
                while not _indexed(await _info(client, name)):  # noqa: ASYNC110 - Redis has no event for it
                    await asyncio.sleep(0.1)
    except TimeoutError:
        log.warning("indexes still filling after %.0f s: searches may miss records", timeout)


async def _info(client: redis.Redis, index: str) -> Any:
    """FT.INFO of an index; None for one that is missing (one the start could not create has
    been reported)."""
    try:
        return await client.execute_command("FT.INFO", index)  # type: ignore[no-untyped-call]
    except redis.ResponseError as err:
        if missing_index(err):
            return None
        raise


def _indexed(info: Any) -> bool:
    if info is None:
        return True
    if isinstance(info, list):
        info = dict(zip(info[::2], info[1::2], strict=True))
    return int(info.get("indexing", 0)) == 0 and float(info.get("percent_indexed", 1)) >= 1.0
