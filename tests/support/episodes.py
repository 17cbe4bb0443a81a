"""Episodes written straight through the episode store, for tests of the lifecycle's parts."""

import time

import redis.asyncio as redis

from lifecycle.transitions import EpisodeStore, initial_history
from storage import keys
from storage.models import EpisodeLog, EpisodeStatus


async def queued(client: redis.Redis, store: EpisodeStore, tag: str | None = "store") -> str:
    """A QUEUED episode of made-up records, announced as startSimulation would; its id."""
    now = time.time()
    episode = EpisodeLog(
        environment="env",
        agents=["a", "b"],
        status=EpisodeStatus.QUEUED,
        sequence=1,
        status_history=initial_history(now),
        created_at=now,
        tag=tag,
    )
    await store.create([episode], keys.JOBS)
    return str(episode.pk)
