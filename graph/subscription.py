"""Subscriptions: the current state first, then every later event, nothing lost in between.

Each stream subscribes (through the process's hub) before it reads the stored state, so an event
published between the read and the first live message is not missed; sequence numbers drop what
the snapshot already covered and reveal gaps, which are filled from storage.
"""

import asyncio
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from functools import partial

import redis.asyncio as redis
import strawberry

from graph.context import Info
from graph.enums import EventKind
from graph.episode_types import EpisodeEvent
from resolvers.episodes import get_episode, list_tagged, stored_events
from resolvers.errors import UserInputError
from resolvers.records import storable
from storage.events import GLOBAL_CHANNEL, episode_channel
from storage.events import EpisodeEvent as StoredEvent
from storage.models import EpisodeLog, EpisodeStatus

Keep = Callable[[StoredEvent], bool]


def snapshot(episode: EpisodeLog) -> EpisodeEvent:
    current = StoredEvent(
        type="status",
        episode_id=str(episode.pk),
        sequence=episode.sequence,
        at=episode.status_history[-1].at if episode.status_history else episode.created_at,
        attempt=episode.attempt,
        tag=episode.tag,
        status=episode.status,
    )
    return EpisodeEvent(event=current, kind=EventKind.SNAPSHOT)


def wrap(event: StoredEvent) -> EpisodeEvent:
    return EpisodeEvent(event=event, kind=EventKind(event.type))


async def follow(info: Info, episode_id: str, keep: Keep) -> AsyncGenerator[EpisodeEvent]:
    if not storable(episode_id):
        raise UserInputError(f"no episode with id {episode_id!r}")
    async with info.context.runtime.hub.subscribe(episode_channel(episode_id)) as subscriber:
        episode = await get_episode(episode_id)
        if episode is None:
            raise UserInputError(f"no episode with id {episode_id!r}")
        yield snapshot(episode)
        last = episode.sequence
        if episode.status.terminal:
            return
        while True:
            event = await subscriber.next()
            if event is not None and event.sequence <= last:
                continue
            if event is None or event.sequence > last + 1:
                stored = await patiently(lambda: get_episode(episode_id))
                if stored is None:
                    return
                missed = stored_events(stored, after=last)
            else:
                missed = [event]
            for item in missed:
                last = item.sequence
                if keep(item):
                    yield wrap(item)
                if item.terminal:
                    return


async def patiently[T](read: Callable[[], Awaitable[T]], patience: float = 60.0) -> T:
    """A resync read, retried while Redis is still coming back (refusing connections, or
    loading its data after a restart), so the stream survives the outage it recovers from."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + patience
    delay = 0.1
    while True:
        try:
            return await read()
        except redis.RedisError:
            if loop.time() + delay > deadline:
                raise
        await asyncio.sleep(delay)
        delay = min(delay * 2, 2.0)


def statuses_only(event: StoredEvent) -> bool:
    return event.type == "status"


def everything(event: StoredEvent) -> bool:
    return True


@strawberry.type(description="Live updates over websockets (graphql-transport-ws or graphql-ws).")
class Subscription:
    @strawberry.subscription(
        description="An episode's status: a SNAPSHOT, then each STATUS change; ends when it ends."
    )
    async def episode_status(self, info: Info, id: strawberry.ID) -> AsyncGenerator[EpisodeEvent]:
        async for item in follow(info, id, statuses_only):
            yield item

    @strawberry.subscription(
        description="An episode's status changes and turns as they happen; ends when it ends."
    )
    async def episode_events(self, info: Info, id: strawberry.ID) -> AsyncGenerator[EpisodeEvent]:
        async for item in follow(info, id, everything):
            yield item

    @strawberry.subscription(
        description="Status changes of every episode with this tag (all episodes when omitted): "
        "a SNAPSHOT of each unfinished one, then each STATUS change. Never ends by itself."
    )
    async def episode_updates(
        self, info: Info, tag: str | None = None
    ) -> AsyncGenerator[EpisodeEvent]:
        async with info.context.runtime.hub.subscribe(GLOBAL_CHANNEL) as subscriber:
            # `seen` holds the last sequence sent per unfinished episode (finished ones leave it,
            # so it stays small on a connection that lives for days); `since` is the time of the
            # last event sent, which tells a resync what this subscriber cannot have seen.
            seen: dict[str, int] = {}
            since = time.time()
            for episode in await unfinished(tag):
                seen[str(episode.pk)] = episode.sequence
                yield snapshot(episode)
            while True:
                event = await subscriber.next()
                missed = (
                    await patiently(partial(catch_up, tag, seen, since))
                    if event is None
                    else [event]
                )
                for item in missed:
                    if (tag is not None and item.tag != tag) or item.sequence <= seen.get(
                        item.episode_id, 0
                    ):
                        continue
                    seen[item.episode_id] = item.sequence
                    since = max(since, item.at)
                    yield wrap(item)
                    if item.terminal:
                        del seen[item.episode_id]


async def unfinished(tag: str | None, limit: int = 100) -> list[EpisodeLog]:
    found: list[EpisodeLog] = []
    for status in (EpisodeStatus.QUEUED, EpisodeStatus.RUNNING, EpisodeStatus.EVALUATING):
        found += await list_tagged(tag, status, limit)
    return found


async def catch_up(tag: str | None, seen: dict[str, int], since: float) -> list[StoredEvent]:
    """Status events missed while the hub was away or this subscriber fell behind: those after
    the last sent for episodes it follows, and those after `since` for any other."""
    candidates = {str(e.pk): e for e in await unfinished(tag)}
    candidates.update({str(e.pk): e for e in await list_tagged(tag)})
    for pk in list(seen):
        if pk not in candidates and (episode := await get_episode(pk)) is not None:
            candidates[pk] = episode
    missed: list[StoredEvent] = []
    for pk, episode in candidates.items():
        for event in stored_events(episode, seen.get(pk, 0)):
            if event.type == "status" and (pk in seen or event.at > since):
                missed.append(event)
    return sorted(missed, key=lambda e: (e.at, e.sequence))
