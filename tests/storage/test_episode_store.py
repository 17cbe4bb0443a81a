"""The episode store's scripts: legal transitions only, fencing by attempt, idempotent turns."""

import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import redis.asyncio as redis

from bench.support.episodes import queued, queued_episode
from parley.storage import keys
from parley.storage.episode_store import EpisodeStore
from parley.storage.events import EpisodeEvent, EventKind, MalformedEvent, parse_event
from parley.storage.models import EpisodeLog, EpisodeStatus

Status = EpisodeStatus
TURN = {
    "turn": 0,
    "agent_index": 0,
    "agent_name": "A B",
    "action_type": "speak",
    "argument": "hi",
    "to": [],
}


async def test_only_legal_transitions_happen(redis_client: Any) -> None:
    store = EpisodeStore(redis_client)
    pk = await queued(redis_client, store)
    assert not (await store.transition(pk, Status.COMPLETED)).ok  # QUEUED -> COMPLETED
    assert not (await store.transition(pk, Status.EVALUATING)).ok
    started = await store.transition(pk, Status.RUNNING, fence=0, attempt_mode="restart")
    assert started.ok and started.status == Status.RUNNING
    assert (await store.transition(pk, Status.CANCELLED)).ok
    refused = await store.transition(pk, Status.RUNNING, attempt_mode="restart")
    assert not refused.ok and refused.status == Status.CANCELLED
    assert await store.state(pk) == (Status.CANCELLED, 1)
    missing = await store.transition("no-such-episode", Status.CANCELLED)
    assert not missing.ok and missing.status is None


async def test_a_stale_attempt_is_fenced_out(redis_client: Any) -> None:
    store = EpisodeStore(redis_client)
    pk = await queued(redis_client, store)
    await store.transition(pk, Status.RUNNING, fence=0, attempt_mode="restart")  # attempt 1
    await store.transition(
        pk, Status.RUNNING, fence=1, attempt_mode="restart"
    )  # taken over: attempt 2
    assert await store.append_turn(pk, 1, TURN, 1, []) is None
    stale = await store.transition(pk, Status.EVALUATING, fence=1)
    assert not stale.ok and stale.fenced
    assert await store.append_turn(pk, 2, TURN, 1, [("A B", "Environment", "hi")]) is not None
    assert (await store.transition(pk, Status.EVALUATING, fence=2)).ok


async def test_the_same_turn_written_twice_is_stored_once(redis_client: Any) -> None:
    store = EpisodeStore(redis_client)
    pk = await queued(redis_client, store)
    await store.transition(pk, Status.RUNNING, fence=0, attempt_mode="restart")
    first = await store.append_turn(pk, 1, TURN, 1, [])
    again = await store.append_turn(pk, 1, TURN, 1, [])
    other = await store.append_turn(pk, 1, {**TURN, "agent_index": 1}, 1, [])
    episode = await EpisodeLog.get(pk)
    assert first is not None and first == again and other == first + 1
    assert [(t.turn, t.agent_index) for t in episode.turns] == [(0, 0), (0, 1)]
    assert episode.sequence == other


async def payloads_of(
    client: redis.Redis, channel: str, write: Callable[[], Awaitable[object]], count: int
) -> list[str]:
    """The raw payloads `write` publishes on `channel` (subscribed before it runs)."""
    pubsub = client.pubsub()
    await pubsub.subscribe(channel)
    try:
        await pubsub.get_message(timeout=1)  # the subscribe confirmation
        await write()
        found: list[str] = []
        while len(found) < count:
            message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=2)
            assert message is not None, f"only {len(found)} of {count} payloads arrived"
            found.append(message["data"])
        return found
    finally:
        await pubsub.aclose()  # type: ignore[no-untyped-call]


def exactly_an_event(payload: str) -> EpisodeEvent:
    """The payload is an EpisodeEvent with no key dropped or added on the way."""
    event = parse_event(payload)
    assert event.model_dump(mode="json", exclude_none=True) == json.loads(payload)
    return event


async def test_every_payload_the_scripts_emit_is_exactly_an_event(redis_client: Any) -> None:
    """Each kind of write (the queued announcement, a status change with and without a reason
    and a tag, a restart, a turn) publishes what EpisodeEvent declares, key for key."""
    store = EpisodeStore(redis_client)
    pk = await queued(redis_client, store)
    channel = keys.episode_channel(pk)
    writes: list[tuple[Callable[[], Awaitable[object]], EventKind, Status | None]] = [
        (
            lambda: store.transition(pk, Status.RUNNING, fence=0, attempt_mode="restart"),
            EventKind.STATUS,
            Status.RUNNING,
        ),
        (lambda: store.append_turn(pk, 1, TURN, 1, []), EventKind.TURN, None),
        (
            lambda: store.transition(pk, Status.EVALUATING, fence=1),
            EventKind.STATUS,
            Status.EVALUATING,
        ),
        (
            lambda: store.transition(pk, Status.FAILED, reason="judge gave up"),
            EventKind.STATUS,
            Status.FAILED,
        ),
    ]
    for write, kind, status in writes:
        (payload,) = await payloads_of(redis_client, channel, write, 1)
        event = exactly_an_event(payload)
        assert event.type == kind and event.episode_id == pk
        if status is not None:
            assert event.status == status and event.tag == "store"
    assert event.reason == "judge gave up" and event.previous_status == Status.EVALUATING

    untagged = queued_episode(None)

    async def announce() -> None:
        await store.create([untagged], keys.JOBS)

    (queued_payload,) = await payloads_of(
        redis_client, keys.episode_channel(str(untagged.pk)), announce, 1
    )
    assert exactly_an_event(queued_payload).status == Status.QUEUED
    (cancelled,) = await payloads_of(
        redis_client,
        keys.EPISODES_CHANNEL,
        lambda: store.transition(str(untagged.pk), Status.CANCELLED),
        1,
    )
    assert exactly_an_event(cancelled).tag is None


def test_a_payload_of_another_shape_is_refused() -> None:
    with pytest.raises(MalformedEvent, match="sequence"):
        parse_event('{"type": "status", "episode_id": "e", "at": 1}')
    with pytest.raises(MalformedEvent, match="extra"):
        parse_event('{"type": "turn", "episode_id": "e", "sequence": 1, "at": 1, "colour": 2}')


async def test_create_writes_nothing_while_a_required_key_is_missing(redis_client: Any) -> None:
    store = EpisodeStore(redis_client)
    present = f"test:required:{time.time_ns()}"
    await redis_client.set(present, "1")
    episode = queued_episode("store")
    jobs = await redis_client.xlen(keys.JOBS)
    refused = await store.create_if_present([episode], keys.JOBS, [present, "test:gone", present])
    assert refused.ids == [] and refused.missing == [1]
    assert not await redis_client.exists(EpisodeLog.make_primary_key(str(episode.pk)))
    assert await redis_client.xlen(keys.JOBS) == jobs
    created = await store.create_if_present([episode], keys.JOBS, [present])
    assert created.ids == [str(episode.pk)] and created.missing == []
    assert await redis_client.xlen(keys.JOBS) == jobs + 1


async def test_fields_written_together_mean_what_each_write_alone_meant(redis_client: Any) -> None:
    """A transition, a mark and a turn write their fields in as few commands as keep their
    meaning: an object is replaced (not merged into), a null is stored as null (not removed),
    and the sequence, the history and the turns stay numbered one by one."""
    store = EpisodeStore(redis_client)
    pk = await queued(redis_client, store)
    key = EpisodeLog.make_primary_key(pk)

    async def stored(*paths: str) -> dict[str, Any]:
        raw = await redis_client.execute_command("JSON.GET", key, *paths)
        found = json.loads(raw) if isinstance(raw, str | bytes) else raw
        return {path: value[0] if value else "absent" for path, value in found.items()}

    stats = {"requests": 2.0, "failures": 1.0}
    fields = {"generation_stats": stats, "error": "boom", "tag": "t", "progress": 0}
    await store.transition(pk, Status.RUNNING, fence=0, attempt_mode="restart", fields=fields)
    assert await store.append_turn(pk, 1, TURN, 1, [("A B", "Environment", "hi")], {"cost": None})
    second = {**TURN, "turn": 1, "agent_index": 1}
    assert await store.append_turn(pk, 1, second, 2, [("C D", "Environment", "yo")])
    replaced = {"retries": 1.0}
    done = await store.transition(
        pk,
        Status.EVALUATING,
        fence=1,
        fields={"generation_stats": replaced, "error": None, "handed_back": None, "tag": ""},
    )
    assert done.ok
    assert await store.mark(pk, 1, {"rewards_prompt": "p", "judge_error": None})
    found = await stored(
        "$.generation_stats",
        "$.error",
        "$.handed_back",
        "$.tag",
        "$.progress",
        "$.cost",
        "$.sequence",
        "$.status",
        "$.rewards_prompt",
        "$.judge_error",
    )
    assert found == {
        "$.generation_stats": replaced,
        "$.error": None,
        "$.handed_back": None,
        "$.tag": "",
        "$.progress": 2,
        "$.cost": None,
        "$.sequence": 5,
        "$.status": "EVALUATING",
        "$.rewards_prompt": "p",
        "$.judge_error": None,
    }
    episode = await EpisodeLog.get(pk)
    assert [c.sequence for c in episode.status_history] == [1, 2, 5]
    assert [t.sequence for t in episode.turns] == [3, 4]
    assert [t.argument for t in episode.turns] == ["hi", "hi"]
    assert episode.messages == [[("A B", "Environment", "hi")], [("C D", "Environment", "yo")]]
