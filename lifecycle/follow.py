"""Following episodes: one pub/sub connection per process, and streams that lose nothing.

The hub holds the process's only Redis pub/sub connection and fans events out to bounded
per-subscriber queues; subscribers never talk to Redis themselves. A slow subscriber whose queue is
full is marked for resync instead of blocking the others; when the connection drops, the hub
reconnects, resubscribes, and tells every subscriber to resync (Redis does not replay what was
published meanwhile).

A stream subscribes through the hub before it reads the stored state, so an event published
between the read and the first live message is not missed; sequence numbers drop what the snapshot
already covered and reveal gaps, which are filled from storage.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from functools import partial

import redis.asyncio as redis

from parley.core import metrics
from parley.core.backoff import Backoff
from parley.resolvers.episodes import find_episodes
from parley.storage import keys
from parley.storage.events import (
    EpisodeEvent,
    EventKind,
    MalformedEvent,
    parse_event,
    snapshot_event,
    stored_events,
)
from parley.storage.events_log import EventsLog, log_position
from parley.storage.models import UNFINISHED, EpisodeLog, EpisodeStatus
from parley.storage.outages import is_outage
from parley.storage.records import get_or_none

log = logging.getLogger(__name__)
RECONNECT = Backoff(base=0.1, cap=5.0)
RESYNC_READ = Backoff(base=0.1, cap=2.0)


@dataclass(eq=False)
class Subscriber:
    channel: str
    queue: asyncio.Queue[EpisodeEvent | None]
    resync: bool = False
    """Events may have been lost (queue overflow or a Redis drop): re-read stored state."""

    async def next(self) -> EpisodeEvent | None:
        """The next event, or None when the subscriber must resync from storage.

        Always yields to the event loop first: a subscriber with a backlog would otherwise
        deliver all of it before any other request or subscriber got a turn.
        """
        await asyncio.sleep(0)
        if self.resync:
            self.resync = False
            return None
        item = await self.queue.get()
        if item is None or self.resync:
            self.resync = False
            return None
        return item

    def deliver(self, event: EpisodeEvent) -> None:
        metrics.delivered()
        try:
            self.queue.put_nowait(event)
        except asyncio.QueueFull:
            self.flag_resync()

    def flag_resync(self) -> None:
        self.resync = True
        with contextlib.suppress(asyncio.QueueFull):
            self.queue.put_nowait(None)


class EventHub:
    def __init__(self, client: redis.Redis, queue_size: int = 256) -> None:
        self.queue_size = queue_size
        self.channels: dict[str, set[Subscriber]] = {}
        self._client = client
        self._pubsub: redis.client.PubSub | None = None
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self.reconnects = 0
        self.malformed = 0
        """Payloads on our channels that were not events (logged; a sign of a version mix)."""

    async def start(self) -> None:
        """Open the hub's own pub/sub connection (taken from the client's pool)."""
        await self._connect()
        self._task = asyncio.create_task(self._listen())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self._close_pubsub()

    @property
    def subscriber_count(self) -> int:
        return sum(len(s) for s in self.channels.values())

    @contextlib.asynccontextmanager
    async def subscribe(self, channel: str) -> AsyncIterator[Subscriber]:
        subscriber = Subscriber(channel, asyncio.Queue(maxsize=self.queue_size))
        members = self.channels.setdefault(channel, set())
        members.add(subscriber)
        try:
            if len(members) == 1:
                await self._redis_subscribe(channel)
            yield subscriber
        finally:
            members.discard(subscriber)
            if not members and self.channels.get(channel) is members:
                del self.channels[channel]
                await self._redis_unsubscribe(channel)

    async def _redis_subscribe(self, channel: str) -> None:
        async with self._lock:
            try:
                if self._pubsub is not None:
                    await self._pubsub.subscribe(channel)
            except redis.RedisError:
                pass  # the listener resubscribes every channel when it reconnects

    async def _redis_unsubscribe(self, channel: str) -> None:
        async with self._lock:
            with contextlib.suppress(redis.RedisError):
                if self._pubsub is not None and channel not in self.channels:
                    await asyncio.wait_for(self._pubsub.unsubscribe(channel), 2)

    async def _connect(self) -> None:
        async with self._lock:
            pubsub = self._client.pubsub()
            await pubsub.subscribe(keys.HUB_KEEPALIVE, *self.channels)
            assert pubsub.connection is not None
            # redis-py reconnects a dropped pub/sub connection by itself (and resubscribes) on
            # the next read; what was published meanwhile is gone, so that is a resync too.
            pubsub.connection.register_connect_callback(self._reconnected)
            self._pubsub = pubsub

    def _reconnected(self, connection: object) -> None:
        self.reconnects += 1
        log.warning("event hub's Redis connection was re-established; subscribers resync")
        self._resync_all()

    def _resync_all(self) -> None:
        for members in self.channels.values():
            for subscriber in members:
                subscriber.flag_resync()

    async def _close_pubsub(self) -> None:
        pubsub, self._pubsub = self._pubsub, None
        if pubsub is not None:
            with contextlib.suppress(redis.RedisError, OSError):
                await pubsub.aclose()  # type: ignore[no-untyped-call]

    async def _listen(self) -> None:
        while True:
            try:
                assert self._pubsub is not None
                message = await self._pubsub.get_message(
                    ignore_subscribe_messages=True, timeout=1.0
                )
            except (redis.ConnectionError, redis.TimeoutError, OSError) as err:
                log.warning("event hub lost Redis (%s); reconnecting", err)
                await self._reconnect()
                continue
            if message is None or message.get("type") != "message":
                continue
            try:
                event = parse_event(message["data"])
            except MalformedEvent as err:
                self.malformed += 1
                log.error("dropped a malformed event on %s: %s", message.get("channel"), err)
                continue
            for subscriber in list(self.channels.get(message["channel"], ())):
                subscriber.deliver(event)

    async def _reconnect(self) -> None:
        await self._close_pubsub()
        for delay in RECONNECT.delays():
            await asyncio.sleep(delay)
            try:
                await self._connect()
                break
            except (redis.ConnectionError, redis.TimeoutError, OSError):
                continue
        self.reconnects += 1
        self._resync_all()


class UnknownEpisode(LookupError):
    """A stream was asked for an episode that is not stored."""


Keep = Callable[[EpisodeEvent], bool]


def statuses_only(event: EpisodeEvent) -> bool:
    return event.type == EventKind.STATUS


def everything(event: EpisodeEvent) -> bool:
    return True


async def follow(
    hub: EventHub, episode_id: str, keep: Keep, after: int | None = None
) -> AsyncGenerator[EpisodeEvent]:
    """A SNAPSHOT of the episode, then every later event `keep` accepts; ends after its end.

    With `after` (a sequence number a client saw), no snapshot: every stored event after it,
    then the live ones.
    """
    async with hub.subscribe(keys.episode_channel(episode_id)) as subscriber:
        episode = await get_or_none(EpisodeLog, episode_id)
        if episode is None:
            raise UnknownEpisode(episode_id)
        if after is None:
            yield snapshot_event(episode)
            last, missed = episode.sequence, []
        else:
            last, missed = after, stored_events(episode, after=after)
        if not missed and episode.status.terminal and last >= episode.sequence:
            return
        while True:
            for item in missed:
                last = item.sequence
                if keep(item):
                    yield item
                if item.terminal:
                    return
            event = await subscriber.next()
            if event is not None and event.sequence <= last:
                missed = []
            elif event is None or event.sequence > last + 1:
                stored = await patiently(lambda: get_or_none(EpisodeLog, episode_id))
                if stored is None:
                    return
                missed = stored_events(stored, after=last)
            else:
                missed = [event]


async def follow_tag(
    hub: EventHub, log: EventsLog, tag: str | None, after: str | None = None
) -> AsyncGenerator[EpisodeEvent]:
    """Status events of every episode with `tag` (any tag when None), each with its events-log
    id. Without `after`: a SNAPSHOT of each unfinished episode, then every status change. With
    `after` (a log id a client saw): every status change since then, terminal ones included,
    or, when the log no longer reaches back that far, a CURSOR_EXPIRED event and the snapshots.
    Never ends by itself; a dropped or overflowing subscription re-reads the log, so nothing is
    missed or repeated."""
    async with hub.subscribe(keys.EPISODES_CHANNEL) as subscriber:
        seen: dict[str, int] = {}
        """The last sequence sent per unfinished episode (the snapshots' included)."""
        if after is not None and not await log.expired(after):
            position = after
        else:
            position = await log.head()
            if after is not None:
                yield EpisodeEvent(
                    type=EventKind.CURSOR_EXPIRED,
                    episode_id="",
                    sequence=0,
                    at=time.time(),
                    log_id=position,
                    reason=f"events after {after} are no longer kept; the current state follows",
                )
            for episode in await unfinished(tag):
                seen[str(episode.pk)] = episode.sequence
                yield snapshot_event(episode).model_copy(update={"log_id": position})
        missed = await patiently(partial(log.since, position))
        while True:
            for item in missed:
                assert item.log_id is not None
                if log_position(item.log_id) <= log_position(position):
                    continue
                position = item.log_id
                if tag is not None and item.tag != tag:
                    continue
                if item.sequence <= seen.get(item.episode_id, 0):
                    continue
                seen[item.episode_id] = item.sequence
                yield item
                if item.terminal:
                    del seen[item.episode_id]
            event = await subscriber.next()
            if event is None or event.log_id is None:
                missed = await patiently(partial(log.since, position))
            else:
                missed = [event]


async def patiently[T](read: Callable[[], Awaitable[T]], patience: float = 60.0) -> T:
    """A resync read, retried while Redis is still coming back (refusing connections, or
    loading its data after a restart), so the stream survives the outage it recovers from. A
    read Redis refuses (a ResponseError) fails at once: asked again, it would be again."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + patience
    for delay in RESYNC_READ.delays():
        try:
            return await read()
        except redis.RedisError as err:
            if not is_outage(err) or loop.time() + delay > deadline:
                raise
        await asyncio.sleep(delay)
    raise AssertionError("unreachable")


async def tagged(
    tag: str | None, status: EpisodeStatus | None = None, first: int = 100
) -> list[EpisodeLog]:
    """Up to `first` episodes, newest first, whose tag is exactly `tag` (any tag when None).

    The index narrows the search (it matches tags ignoring case); the exact match is made here.
    """
    page = await find_episodes(tag=tag, status=status, first=first)
    episodes: list[EpisodeLog] = [hit.record for hit in page.items]
    return [e for e in episodes if tag is None or e.tag == tag]


async def unfinished(tag: str | None, limit: int = 100) -> list[EpisodeLog]:
    found: list[EpisodeLog] = []
    for status in UNFINISHED:
        found += await tagged(tag, status, limit)
    return found
