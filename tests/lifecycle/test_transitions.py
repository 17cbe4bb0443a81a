"""The episode store's scripts: legal transitions only, fencing by attempt, idempotent turns."""

import time
from typing import Any

import redis.asyncio as redis

from lifecycle.transitions import EpisodeStore, initial_history
from storage.models import EpisodeLog, EpisodeStatus

Status = EpisodeStatus
TURN = {
    "turn": 0,
    "agent_index": 0,
    "agent_name": "A B",
    "action_type": "speak",
    "argument": "hi",
    "to": [],
}


async def queued(client: redis.Redis, store: EpisodeStore) -> str:
    now = time.time()
    episode = EpisodeLog(
        environment="env",
        agents=["a", "b"],
        status=Status.QUEUED,
        sequence=1,
        status_history=initial_history(now),
        created_at=now,
        tag="store",
    )
    async with client.pipeline(transaction=True) as pipe:
        store.add_queued(pipe, episode)
        await pipe.execute()
    return str(episode.pk)


async def test_only_legal_transitions_happen(redis_client: Any) -> None:
    store = EpisodeStore(redis_client)
    pk = await queued(redis_client, store)
    assert not (await store.transition(pk, Status.COMPLETED)).ok  # QUEUED -> COMPLETED
    assert not (await store.transition(pk, Status.EVALUATING)).ok
    started = await store.transition(pk, Status.RUNNING, fence=0, restart=True)
    assert started.ok and started.status == Status.RUNNING
    assert (await store.transition(pk, Status.CANCELLED)).ok
    refused = await store.transition(pk, Status.RUNNING, restart=True)
    assert not refused.ok and refused.status == Status.CANCELLED
    assert await store.state(pk) == (Status.CANCELLED, 1)
    missing = await store.transition("no-such-episode", Status.CANCELLED)
    assert not missing.ok and missing.status is None


async def test_a_stale_attempt_is_fenced_out(redis_client: Any) -> None:
    store = EpisodeStore(redis_client)
    pk = await queued(redis_client, store)
    await store.transition(pk, Status.RUNNING, fence=0, restart=True)  # attempt 1
    await store.transition(pk, Status.RUNNING, fence=1, restart=True)  # taken over: attempt 2
    assert await store.append_turn(pk, 1, TURN, 1, []) is None
    stale = await store.transition(pk, Status.EVALUATING, fence=1)
    assert not stale.ok and stale.fenced
    assert await store.append_turn(pk, 2, TURN, 1, [("A B", "Environment", "hi")]) is not None
    assert (await store.transition(pk, Status.EVALUATING, fence=2)).ok


async def test_the_same_turn_written_twice_is_stored_once(redis_client: Any) -> None:
    store = EpisodeStore(redis_client)
    pk = await queued(redis_client, store)
    await store.transition(pk, Status.RUNNING, fence=0, restart=True)
    first = await store.append_turn(pk, 1, TURN, 1, [])
    again = await store.append_turn(pk, 1, TURN, 1, [])
    other = await store.append_turn(pk, 1, {**TURN, "agent_index": 1}, 1, [])
    episode = await EpisodeLog.get(pk)
    assert first is not None and first == again and other == first + 1
    assert [(t.turn, t.agent_index) for t in episode.turns] == [(0, 0), (0, 1)]
    assert episode.sequence == other
