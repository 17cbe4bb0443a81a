"""The event hub and the streams over it, in this process with a real Redis: reconnect, gaps,
overflow and malformed payloads, each ending with exactly the stored events."""

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as redis

from bench.support.episodes import queued
from parley.lifecycle.follow import EventHub, everything, follow, follow_tag
from parley.storage import keys
from parley.storage.episode_store import EpisodeStore
from parley.storage.events import EpisodeEvent, EventKind
from parley.storage.events_log import EventsLog
from parley.storage.models import EpisodeLog, EpisodeStatus

Status = EpisodeStatus
WAIT = 5.0
TURN = {"turn": 0, "agent_index": 0, "agent_name": "A B", "action_type": "speak", "argument": "x"}


@pytest.fixture
async def hub(redis_client: redis.Redis) -> AsyncIterator[EventHub]:
    hub = EventHub(redis_client, queue_size=4)
    await hub.start()
    yield hub
    await hub.stop()


async def run_to_the_end(store: EpisodeStore, pk: str, turns: int) -> None:
    await store.transition(pk, Status.RUNNING, fence=0, attempt_mode="restart")
    for turn in range(turns):
        await store.append_turn(pk, 1, {**TURN, "turn": turn}, turn + 1, [])
    await store.transition(pk, Status.EVALUATING, fence=1)
    await store.transition(pk, Status.COMPLETED, fence=1)


async def collect(events: AsyncIterator[EpisodeEvent]) -> list[EpisodeEvent]:
    found = []
    async with asyncio.timeout(WAIT):
        async for event in events:
            found.append(event)
    return found


async def the_stream_sees_every_stored_event(
    hub: EventHub, client: redis.Redis, disturb: Any
) -> list[EpisodeEvent]:
    """Follow an episode from its snapshot to its end while `disturb(hub, subscriber)` acts;
    the stream must be exactly the snapshot and then every stored event, in order, once."""
    store = EpisodeStore(client)
    pk = await queued(client, store)
    stream = follow(hub, pk, everything)
    snapshot = await anext(stream)
    assert snapshot.type == EventKind.SNAPSHOT and snapshot.sequence == 1
    (subscriber,) = hub.channels[keys.episode_channel(pk)]
    await disturb(hub, subscriber, store, pk)
    rest = await collect(stream)
    stored = await EpisodeLog.get(pk)
    assert [e.sequence for e in rest] == list(range(2, stored.sequence + 1))
    assert rest[-1].status == Status.COMPLETED
    return rest


async def test_a_dropped_connection_is_reconnected_and_the_stream_resyncs(
    hub: EventHub, redis_client: redis.Redis
) -> None:
    """Everything after the snapshot is published while the hub's connection is dead, so only
    the resync that its reconnection triggers can deliver it (the end included)."""

    async def kill_the_hubs_connection(hub: EventHub, subscriber: Any, store: Any, pk: str) -> None:
        killed = await redis_client.client_kill_filter(_type="pubsub")
        assert killed >= 1
        await run_to_the_end(store, pk, turns=3)

    await the_stream_sees_every_stored_event(hub, redis_client, kill_the_hubs_connection)
    assert hub.reconnects >= 1


async def test_a_full_queue_makes_the_subscriber_resync(
    hub: EventHub, redis_client: redis.Redis
) -> None:
    async def overflow(hub: EventHub, subscriber: Any, store: Any, pk: str) -> None:
        await run_to_the_end(store, pk, turns=8)  # 11 events into a queue of 4
        async with asyncio.timeout(WAIT):
            while not subscriber.resync:  # noqa: ASYNC110 - set by the hub's listener
                await asyncio.sleep(0.01)

    await the_stream_sees_every_stored_event(hub, redis_client, overflow)


async def test_a_gap_in_sequence_numbers_is_filled_from_storage(
    hub: EventHub, redis_client: redis.Redis
) -> None:
    """An event arrives whose predecessor never did (lost in transit): the stream reads the
    stored episode and yields what it missed, in order, before going on."""

    async def skip_one(hub: EventHub, subscriber: Any, store: Any, pk: str) -> None:
        await hub.stop()  # deaf for a while: these events reach storage, not the subscriber
        await store.transition(pk, Status.RUNNING, fence=0, attempt_mode="restart")
        await store.append_turn(pk, 1, TURN, 1, [])
        stored = await EpisodeLog.get(pk)
        late = EpisodeEvent(
            type=EventKind.STATUS,
            episode_id=pk,
            sequence=stored.sequence + 1,
            at=time.time(),
            attempt=1,
            status=Status.EVALUATING,
        )
        await store.transition(pk, Status.EVALUATING, fence=1)
        subscriber.deliver(late)  # sequence 4 when the stream last saw 1
        await hub.start()
        await store.transition(pk, Status.COMPLETED, fence=1)

    rest = await the_stream_sees_every_stored_event(hub, redis_client, skip_one)
    assert [e.type for e in rest] == [EventKind.STATUS, EventKind.TURN, *[EventKind.STATUS] * 2]


async def test_a_malformed_payload_is_counted_and_the_stream_goes_on(
    hub: EventHub, redis_client: redis.Redis
) -> None:
    async def publish_garbage(hub: EventHub, subscriber: Any, store: Any, pk: str) -> None:
        channel = keys.episode_channel(pk)
        await redis_client.publish(channel, '{"type": "status", "episode_id": 3}')
        await redis_client.publish(channel, "not json")
        async with asyncio.timeout(WAIT):
            while hub.malformed < 2:  # noqa: ASYNC110 - counted by the hub's listener
                await asyncio.sleep(0.01)
        await run_to_the_end(store, pk, turns=1)

    await the_stream_sees_every_stored_event(hub, redis_client, publish_garbage)
    assert hub.malformed == 2


async def updates_until(stream: AsyncIterator[EpisodeEvent], count: int) -> list[EpisodeEvent]:
    found: list[EpisodeEvent] = []
    async with asyncio.timeout(WAIT):
        async for event in stream:
            found.append(event)
            if len(found) == count:
                return found
    return found


async def test_a_dashboard_that_reconnects_with_its_cursor_misses_nothing(
    hub: EventHub, redis_client: redis.Redis
) -> None:
    """episodeUpdates: the subscriber goes away after the first events; while it is away every
    episode runs to its end; back with its last cursor it gets each missed change once, the
    terminal ones included, in log order, then goes live."""
    store = EpisodeStore(redis_client)
    log = EventsLog(redis_client)
    tag = f"dash-{time.time_ns()}"
    first = await queued(redis_client, store, tag)
    stream = follow_tag(hub, log, tag)
    snapshot = await updates_until(stream, 1)
    assert snapshot[0].type == EventKind.SNAPSHOT and snapshot[0].episode_id == first
    await store.transition(first, Status.RUNNING, fence=0, attempt_mode="restart")
    (running,) = await updates_until(stream, 1)
    await stream.aclose()  # the dashboard's connection drops here
    second = await queued(redis_client, store, tag)
    await queued(redis_client, store, "another-tag")
    await run_rest(store, first)
    await run_to_the_end(store, second, turns=2)
    assert running.log_id is not None
    back = follow_tag(hub, log, tag, after=running.log_id)
    missed = await updates_until(back, 6)
    assert [(e.episode_id, e.status) for e in missed] == [
        (second, Status.QUEUED),
        (first, Status.EVALUATING),
        (first, Status.COMPLETED),
        (second, Status.RUNNING),
        (second, Status.EVALUATING),
        (second, Status.COMPLETED),
    ]
    ids = [e.log_id for e in missed]
    assert all(i is not None for i in ids) and len(set(ids)) == 6
    third = await queued(redis_client, store, tag)  # live again
    (live,) = await updates_until(back, 1)
    assert (live.episode_id, live.status) == (third, Status.QUEUED)
    await back.aclose()


async def run_rest(store: EpisodeStore, pk: str) -> None:
    await store.transition(pk, Status.EVALUATING, fence=1)
    await store.transition(pk, Status.COMPLETED, fence=1)


async def test_a_cursor_older_than_the_log_gets_cursor_expired_and_a_snapshot(
    hub: EventHub, redis_client: redis.Redis
) -> None:
    brief = EpisodeStore(redis_client, retention=0.001)  # keeps a millisecond of events
    log = EventsLog(redis_client)
    tag = f"old-{time.time_ns()}"
    pk = await queued(redis_client, brief, tag)
    old_cursor = await log.head()
    await asyncio.sleep(0.01)
    await brief.transition(
        pk, Status.RUNNING, fence=0, attempt_mode="restart"
    )  # trims what came before
    await asyncio.sleep(0.01)
    await queued(redis_client, brief, "elsewhere")
    assert await log.expired(old_cursor)
    stream = follow_tag(hub, log, tag, after=old_cursor)
    expired, snapshot = await updates_until(stream, 2)
    await stream.aclose()
    assert expired.type == EventKind.CURSOR_EXPIRED and "no longer kept" in (expired.reason or "")
    assert snapshot.type == EventKind.SNAPSHOT and snapshot.status == Status.RUNNING
    assert snapshot.log_id == expired.log_id


async def test_episode_events_after_a_sequence_skip_the_snapshot(
    hub: EventHub, redis_client: redis.Redis
) -> None:
    store = EpisodeStore(redis_client)
    pk = await queued(redis_client, store)
    await run_to_the_end(store, pk, turns=2)
    rest = await collect(follow(hub, pk, everything, after=3))
    assert [e.sequence for e in rest] == [4, 5, 6]
    assert rest[-1].status == Status.COMPLETED
    assert await collect(follow(hub, pk, everything, after=6)) == []
