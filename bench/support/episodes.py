"""Episodes written straight through the episode store, for tests of the lifecycle's parts."""

import time

import redis.asyncio as redis

from parley.storage import keys
from parley.storage.episode_store import EpisodeStore, initial_history
from parley.storage.models import EpisodeLog, EpisodeStatus


async def queued(client: redis.Redis, store: EpisodeStore, tag: str | None = "store") -> str:
    """A QUEUED episode of made-up records, announced as startSimulation would; its id."""
    episode = queued_episode(tag)
    await store.create([episode], keys.JOBS)
    return str(episode.pk)


def queued_episode(tag: str | None) -> EpisodeLog:
    """A QUEUED episode of made-up records, not yet stored."""
    now = time.time()
    return EpisodeLog(
        environment="env",
        agents=["a", "b"],
        status=EpisodeStatus.QUEUED,
        sequence=1,
        status_history=initial_history(now),
        created_at=now,
        tag=tag,
    )
