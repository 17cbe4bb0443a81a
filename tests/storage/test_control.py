"""Run control's writes: a pause asked, an injection stored, and the injections a turn gets."""

import uuid

import redis.asyncio as redis

from bench.support.episodes import queued_episode
from parley.storage import control
from parley.storage.episode_store import EpisodeStore
from parley.storage.models import EpisodeLog, EpisodeStatus, StoredInjection


async def running(client: redis.Redis) -> str:
    """A RUNNING episode in its first attempt."""
    store = EpisodeStore(client)
    episode = queued_episode("control")
    await store.create([episode], f"parley:test-control:{uuid.uuid4().hex}")
    pk = str(episode.pk)
    assert (await store.transition(pk, EpisodeStatus.RUNNING, fence=0, attempt_mode="restart")).ok
    return pk


async def test_a_pause_is_asked_of_a_running_episode(redis_client: redis.Redis) -> None:
    pk = await running(redis_client)
    assert await control.request_pause(redis_client, pk, "step") == "RUNNING"
    assert await control.request_pause(redis_client, uuid.uuid4().hex, "pause") == ""


async def test_injections_are_delivered_once_to_the_attempt_that_runs(
    redis_client: redis.Redis,
) -> None:
    pk = await running(redis_client)
    sequence, status = await control.inject(redis_client, pk, StoredInjection(text="rain"))
    assert sequence is not None and status == ""
    assert await control.deliver(redis_client, pk, 2, 3) is None  # a stale attempt
    delivered = await control.deliver(redis_client, pk, 1, 3)
    assert delivered is not None
    _, given = delivered
    assert [(i["text"], i["turn"]) for i in given] == [("rain", 3)]
    again = await control.deliver(redis_client, pk, 1, 4)
    assert again is not None and again[1] == []
    episode = await EpisodeLog.get(pk)
    assert [(i.text, i.turn, i.sequence) for i in episode.injections] == [("rain", 3, sequence)]
    assert await control.inject(redis_client, uuid.uuid4().hex, StoredInjection(text="x")) == (
        None,
        "",
    )
