"""Stored JSON of records, kept in the process for as long as Redis says it is unchanged.

One connection of its own turns on Redis's client-side caching support (`CLIENT TRACKING ON`,
RESP3) and reads on it the documents to hold (`read()`): Redis then remembers each key read
there and pushes its name once anyone changes it (Parley, Sotopia, a hand edit, an expiry; a
flush pushes "everything"). Only keys read there are tracked, so records nobody lists cost no
pushes however often they are written (a running episode, turn after turn). A list read asks
for the keys of its page, takes each document from here when it is held, and reads the rest.

Redis tracks the keys a command declares, and RedisJSON declares only the first argument of
JSON.MGET as its key (`COMMAND INFO JSON.MGET`: first and last key 1): an MGET would leave every
document but the first untracked, held and never invalidated. So each document is read with a
command of its own (`JSON.GET key path...`), the reads of a page sent together.

Two fences keep what is held from being staler than Redis:
- A read that uses what is held sends its search for keys on the tracking connection itself
  (`ask()`). Redis sends every invalidation of a write it executed before that search ahead of
  the search's reply, and the reader applies them in order before handing the reply over, so a
  write that completed before the read began is never answered from before it.
- A document read while an invalidation of its key was being applied is not kept: `ticket()`
  is taken before the read, and `keep()` refuses a key invalidated since.

When the connection drops, everything held is forgotten (invalidations may have been missed)
and reads fetch documents as usual until it is back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import redis.asyncio as redis

from parley.core.backoff import Backoff

log = logging.getLogger(__name__)

ASK_TIMEOUT = 2.0
"""Seconds a command on the tracking connection waits for its reply before the connection is
taken as lost."""
HELD_BYTES = 64 * 2**20
"""Stored JSON text held at most (least recently used first out)."""
RECONNECT = Backoff(base=0.1, cap=5.0)
PUSHED = object()
"""What the reader reads for a push (applied as it was read), as opposed to a reply."""
TOUCHED_KEPT = 4_096
"""Invalidated keys remembered for fetches in flight before the oldest are pruned."""


@dataclass
class Asked:
    """Commands sent together, and their replies as they come back."""

    count: int
    answered: asyncio.Future[list[Any]]
    replies: list[Any] = field(default_factory=list)


@dataclass(frozen=True)
class Held:
    """A record's fetched JSON text per path, and the digest a Hit carries for it."""

    values: dict[str, str]
    version: bytes

    @cached_property
    def size(self) -> int:
        return sum(len(text) for text in self.values.values())


class TrackedDocuments:
    def __init__(self, client: redis.Redis, prefixes: Sequence[str]) -> None:
        self.prefixes = tuple(prefixes)
        """Key prefixes of the records that may be held."""
        self._client = client
        self._held: OrderedDict[tuple[str, tuple[str, ...]], Held] = OrderedDict()
        self._by_key: dict[str, set[tuple[str, ...]]] = {}
        self._bytes = 0
        self._sequence = 0
        """Counts invalidations applied (and forgettings): what a ticket is measured against."""
        self._touched: dict[str, int] = {}
        self._forgot_at = 0
        self._tickets: dict[int, int] = {}
        self._connection: Any = None
        self._waiting: deque[Asked] = deque()
        """What was sent and is not yet answered, in the order it was sent."""
        self._task: asyncio.Task[None] | None = None
        self.hits = 0
        self.misses = 0
        self.reconnects = 0
        self.invalidated = 0
        """Keys Redis said changed (each at most once per read of it)."""
        self.client_id: int | None = None
        """The tracking connection's id in Redis (CLIENT LIST), while connected."""

    @property
    def active(self) -> bool:
        return self._connection is not None

    @contextlib.asynccontextmanager
    async def running(self) -> Any:
        """Track while the block runs (the API's lifespan); reads fall back to fetching until
        the first connection is made, and whenever it is lost."""
        try:
            await self._connect()
        except (redis.RedisError, OSError) as err:
            log.warning("document tracking could not connect (%s); retrying", err)
            await self._drop()
        self._task = asyncio.create_task(self._run())
        try:
            yield self
        finally:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            await self._drop()

    # --- reads --------------------------------------------------------------------------

    async def ask(self, *command: str | int) -> Any:
        """`command`'s reply, read after every invalidation Redis sent before executing it has
        been applied; None when not tracking (then nothing held may be used)."""
        replies = await self.ask_all([command])
        return None if replies is None else replies[0]

    async def ask_all(self, commands: Sequence[Sequence[str | int]]) -> list[Any] | None:
        """The replies of `commands`, sent together, as `ask` reads each; None when not
        tracking. A command Redis refused raises its error."""
        connection = self._connection
        if connection is None:
            return None
        if not commands:
            return []
        asked = Asked(len(commands), asyncio.get_running_loop().create_future())
        # Commands go out in the order they are queued here (send_packed_command writes before
        # it first waits) and the reader hands replies over in the order they come back.
        self._waiting.append(asked)
        try:
            packed = connection.pack_commands(commands)
            await connection.send_packed_command(packed, check_health=False)
            replies = await asyncio.wait_for(asked.answered, ASK_TIMEOUT)
        except (redis.ConnectionError, redis.TimeoutError, OSError) as err:
            log.warning("document tracking lost Redis (%s); fetching documents", err)
            await self._drop()
            return None
        for reply in replies:
            if isinstance(reply, BaseException):
                raise reply
        return replies if self._connection is connection else None

    async def read(self, keys: Sequence[str], paths: Sequence[str]) -> list[str | None] | None:
        """Each key's stored JSON at `paths`, as JSON.GET answers it (for one path, the JSON
        array of its matches; for several, an object of such arrays by path; None for a key
        that is gone), read on the tracking connection so that Redis will say when any of them
        changes; None when not tracking."""
        return await self.ask_all([("JSON.GET", key, *paths) for key in keys])

    def held(self, key: str, paths: tuple[str, ...]) -> Held | None:
        found = self._held.get((key, paths))
        if found is None:
            self.misses += 1
            return None
        self._held.move_to_end((key, paths))
        self.hits += 1
        return found

    def ticket(self) -> int:
        """Taken before fetching documents to keep; handed back to `keep` or `release`."""
        ticket = self._sequence
        self._tickets[ticket] = self._tickets.get(ticket, 0) + 1
        return ticket

    def keep(self, ticket: int, key: str, paths: tuple[str, ...], held: Held) -> None:
        """Hold `held` unless its key was invalidated (or all was forgotten) since `ticket`."""
        if self._connection is None or ticket < self._forgot_at:
            return
        if self._touched.get(key, -1) > ticket:
            return
        self._forget((key, paths))
        self._held[(key, paths)] = held
        self._by_key.setdefault(key, set()).add(paths)
        self._bytes += held.size
        while self._bytes > HELD_BYTES and self._held:
            self._forget(next(iter(self._held)))

    def release(self, ticket: int) -> None:
        left = self._tickets.pop(ticket) - 1
        if left:
            self._tickets[ticket] = left
        if not self._tickets:
            self._touched.clear()
        elif len(self._touched) > TOUCHED_KEPT:
            oldest = min(self._tickets)
            self._touched = {k: s for k, s in self._touched.items() if s >= oldest}

    # --- invalidation -------------------------------------------------------------------

    async def on_invalidation(self, keys: list[str] | None) -> None:
        """Called by the reader for each push, in the order Redis sent them."""
        self.invalidate(keys)

    def invalidate(self, keys: Iterable[str] | None) -> None:
        """Drop what is held of `keys` (None: of everything), as Redis's push says."""
        self._sequence += 1
        if keys is None:
            self._forget_all()
            return
        for key in keys:
            self.invalidated += 1
            self._touched[key] = self._sequence
            for paths in self._by_key.pop(key, ()):
                held = self._held.pop((key, paths), None)
                if held is not None:
                    self._bytes -= held.size

    def _forget(self, entry: tuple[str, tuple[str, ...]]) -> None:
        held = self._held.pop(entry, None)
        if held is None:
            return
        self._bytes -= held.size
        paths = self._by_key.get(entry[0])
        if paths is not None:
            paths.discard(entry[1])
            if not paths:
                del self._by_key[entry[0]]

    def _forget_all(self) -> None:
        self._sequence += 1
        self._forgot_at = self._sequence
        self._held.clear()
        self._by_key.clear()
        self._bytes = 0

    # --- the connection -----------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            for delay in RECONNECT.delays():
                if self._connection is not None:
                    break
                await asyncio.sleep(delay)
                try:
                    await self._connect()
                except (redis.RedisError, OSError) as err:
                    log.warning("document tracking could not connect (%s)", err)
                    await self._drop()
            try:
                await self._read()
            except (redis.RedisError, OSError) as err:
                log.warning("document tracking lost Redis (%s); reconnecting", err)
            except Exception:
                log.exception("document tracking failed; reconnecting")
            await self._drop()
            self.reconnects += 1

    async def _connect(self) -> None:
        pool = self._client.connection_pool
        connection = pool.connection_class(**{**pool.connection_kwargs, "socket_timeout": None})
        try:
            client_id = await self._track(connection)
        except BaseException:
            with contextlib.suppress(redis.RedisError, OSError):
                await connection.disconnect()
            raise
        self._forget_all()  # what was pushed while not connected is unknown
        self._connection, self.client_id = connection, client_id

    async def _track(self, connection: Any) -> int:
        """Connect `connection` and turn tracking on for it; its id in Redis."""
        await connection.connect()
        if connection.protocol != 3:
            raise redis.RedisError("document tracking needs RESP3")

        async def on_push(push: list[Any]) -> object:
            await self.on_invalidation(push[1])
            return PUSHED

        connection._parser.set_invalidation_push_handler(on_push)
        await connection.send_command("CLIENT", "ID")
        client_id = int(await connection.read_response())
        await connection.send_command("CLIENT", "TRACKING", "ON")
        reply = await connection.read_response()
        if reply not in ("OK", b"OK"):
            raise redis.RedisError(f"CLIENT TRACKING answered {reply!r}")
        return client_id

    async def _read(self) -> None:
        """Apply pushes as they come and hand each reply to the commands waiting for it."""
        connection = self._connection
        assert connection is not None
        while True:
            try:
                reply = await connection.read_response(push_request=True)
            except redis.ResponseError as refused:
                reply = refused
            if reply is PUSHED:
                continue
            asked = self._waiting[0]
            asked.replies.append(reply)
            if len(asked.replies) == asked.count:
                self._waiting.popleft()
                if not asked.answered.done():
                    asked.answered.set_result(asked.replies)

    async def _drop(self) -> None:
        connection, self._connection, self.client_id = self._connection, None, None
        self._forget_all()
        lost = redis.ConnectionError("document tracking lost Redis")
        for asked in self._waiting:
            if not asked.answered.done():
                asked.answered.set_exception(lost)
        self._waiting.clear()
        if connection is not None:
            with contextlib.suppress(redis.RedisError, OSError):
                await connection.disconnect()
