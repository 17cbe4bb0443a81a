"""What /metrics reads from Redis when it is scraped: the figures every process shares.

Each is a cheap read, sent together: a count of the episode index's matches per status (the
status is a TAG field, not sortable: an FT.AGGREGATE grouping by it would load every episode's
JSON), and the job queue's lengths, its oldest waiting entry and its consumers
(`JobQueue.figures`).
"""

from typing import Any

import redis.asyncio as redis

from parley.core.metrics import Shared
from parley.resolvers.episodes import episode_query
from parley.resolvers.search import count_args
from parley.storage.jobs import JobQueue
from parley.storage.models import EpisodeLog, EpisodeStatus

COUNTED = tuple(s for s in EpisodeStatus if s != EpisodeStatus.COMPLETED)
"""The statuses counted one by one; COMPLETED is the rest (Sotopia's episodes store no status,
and are finished: the model's default)."""


async def episode_counts(client: redis.Redis) -> dict[str, int]:
    """Episodes by status, every status included."""
    queries = [EpisodeLog.find(), *(episode_query(status=s) for s in COUNTED)]
    async with client.pipeline(transaction=False) as pipe:
        for query in queries:
            pipe.execute_command(*count_args(query))
        replies = await pipe.execute()
    total, *counts = (matches(reply) for reply in replies)
    found = {status.value: count for status, count in zip(COUNTED, counts, strict=True)}
    return {s.value: found.get(s.value, total - sum(counts)) for s in EpisodeStatus}


def matches(reply: Any) -> int:
    """The number of matches in an FT.SEARCH reply (RESP2 or RESP3)."""
    return int(reply["total_results"] if isinstance(reply, dict) else reply[0])


async def shared_figures(client: redis.Redis, jobs: JobQueue, live_seconds: float) -> Shared:
    """Episodes by status, the job queue, and the workers seen within `live_seconds`."""
    episodes = await episode_counts(client)
    queue = await jobs.figures(int(live_seconds * 1000))
    return Shared(episodes, queue.waiting, queue.running, queue.lag_seconds, queue.workers)
