"""Bringing storage up and down: embedded or configured Redis, indexes, sample data."""

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import redis.asyncio as redis

from parley.storage import sample
from parley.storage.connection import describe, open_client, prepare
from parley.storage.durability import Fsync, ReplicaAcks
from parley.storage.embedded import EmbeddedRedis

log = logging.getLogger(__name__)


@asynccontextmanager
async def redis_storage(
    url: str | None,
    data_dir: Path,
    *,
    seed_if_empty: bool = False,
    fsync: Fsync = "everysec",
    acks: ReplicaAcks | None = None,
) -> AsyncIterator[redis.Redis]:
    """Yield a ready client; start (and later stop) an embedded Redis when `url` is None, its
    append-only file synced as `fsync` says (a configured Redis keeps its own setting); with
    `acks`, acknowledged writes wait for replicas (storage/durability.py)."""
    embedded = EmbeddedRedis(data_dir, fsync=fsync) if url is None else None
    if embedded is not None:
        url = await embedded.start()
    assert url is not None
    client = open_client(url, acks=acks)
    try:
        await prepare(client)
        if embedded is None and fsync == "always":
            await warn_unless_synced(client)
        if seed_if_empty and await sample.is_empty():
            log.info("seeded sample data", extra={"added": await sample.seed(client)})
        yield client
    finally:
        await client.aclose()
        if embedded is not None:
            await embedded.stop()


async def warn_unless_synced(client: redis.Redis) -> None:
    """Say so when a configured Redis does not sync each write before answering, as `always`
    asks (its own configuration decides: Parley does not change another's server)."""
    try:
        config = await client.config_get("append*")
    except redis.ResponseError:  # CONFIG refused, as managed services do
        config = {}
    if config.get("appendonly") != "yes" or config.get("appendfsync") != "always":
        log.warning(
            "PARLEY_REDIS_FSYNC=always, but the Redis at %s has appendonly %s, appendfsync %s: "
            "set appendonly yes and appendfsync always there, or a power loss may lose "
            "acknowledged writes",
            describe(client),
            config.get("appendonly", "unknown"),
            config.get("appendfsync", "unknown"),
        )
