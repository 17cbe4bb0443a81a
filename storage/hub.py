"""One Redis pub/sub connection per process, fanned out to bounded per-subscriber queues.

Subscribers never talk to Redis themselves: the hub subscribes a channel when its first local
subscriber arrives and unsubscribes when the last one leaves. A slow subscriber whose queue is
full is marked for resync instead of blocking the others; when the Redis connection drops, the
hub reconnects, resubscribes, and tells every subscriber to resync from storage (events published
while it was away are not replayed by Redis).
"""

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

import redis.asyncio as redis

from storage.events import EpisodeEvent, parse_event

log = logging.getLogger(__name__)
KEEPALIVE_CHANNEL = "parley:events:hub"
"""Always subscribed, so the connection is read (and a drop noticed) even with no subscribers."""


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
            await pubsub.subscribe(KEEPALIVE_CHANNEL, *self.channels)
            self._pubsub = pubsub

    async def _close_pubsub(self) -> None:
        pubsub, self._pubsub = self._pubsub, None
        if pubsub is not None:
            with contextlib.suppress(redis.RedisError, OSError):
                await pubsub.aclose()  # type: ignore[no-untyped-call]

    async def _listen(self) -> None:
        delay = 0.1
        while True:
            try:
                assert self._pubsub is not None
                message = await self._pubsub.get_message(
                    ignore_subscribe_messages=True, timeout=1.0
                )
                delay = 0.1
            except (redis.ConnectionError, redis.TimeoutError, OSError) as err:
                log.warning("event hub lost Redis (%s); reconnecting", err)
                await self._reconnect(delay)
                delay = min(delay * 2, 5.0)
                continue
            if message is None or message.get("type") != "message":
                continue
            event = parse_event(message["data"])
            if event is None:
                continue
            for subscriber in list(self.channels.get(message["channel"], ())):
                subscriber.deliver(event)

    async def _reconnect(self, delay: float) -> None:
        await self._close_pubsub()
        while True:
            await asyncio.sleep(delay)
            try:
                await self._connect()
                break
            except (redis.ConnectionError, redis.TimeoutError, OSError):
                delay = min(delay * 2, 5.0)
        self.reconnects += 1
        for members in self.channels.values():
            for subscriber in members:
                subscriber.flag_resync()
