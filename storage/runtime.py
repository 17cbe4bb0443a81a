"""Bringing storage up and down: embedded or configured Redis, indexes, sample data."""

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import redis.asyncio as redis

from storage import sample
from storage.connection import open_client, prepare
from storage.embedded import EmbeddedRedis

log = logging.getLogger(__name__)


@asynccontextmanager
async def redis_storage(
    url: str | None, data_dir: Path, *, seed_if_empty: bool = False
) -> AsyncIterator[redis.Redis]:
    """Yield a ready client; start (and later stop) an embedded Redis when `url` is None."""
    embedded = EmbeddedRedis(data_dir) if url is None else None
    if embedded is not None:
        url = await embedded.start()
    assert url is not None
    client = open_client(url)
    try:
        await prepare(client)
        if seed_if_empty and await sample.is_empty():
            log.info("seeded sample data", extra={"added": await sample.seed(client)})
        yield client
    finally:
        await client.aclose()
        if embedded is not None:
            await embedded.stop()
