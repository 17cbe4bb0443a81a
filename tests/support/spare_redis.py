"""A Redis of a test's own (embedded, on a free port), for what must not reach the session's: a
full memory, a read-only replica, results indexes with hundreds of fields.

Its client is a plain one: `storage.connection.prepare` binds redis-om's models process-wide,
so only a Parley process of its own (bench/support/processes.py) prepares this Redis.
"""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import redis.asyncio as redis

from parley.storage.connection import open_client
from parley.storage.embedded import EmbeddedRedis


@asynccontextmanager
async def spare_redis(directory: Path) -> AsyncIterator[tuple[str, redis.Redis]]:
    """A started Redis: its URL and a client of it."""
    server = EmbeddedRedis(directory)
    url = await server.start()
    client = open_client(url)
    try:
        yield url, client
    finally:
        await client.aclose()
        await server.stop()
