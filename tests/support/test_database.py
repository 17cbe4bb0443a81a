"""The check that a block wrote nothing, against the session's Redis: it sees a write and a
deletion, and lets a key go that Redis expired meanwhile."""

import asyncio
import uuid
from typing import Any

import pytest

from tests.support.database import unchanged


async def test_a_write_in_the_block_fails_it(redis_client: Any) -> None:
    key = f"test:unchanged:{uuid.uuid4().hex}"
    with pytest.raises(AssertionError):
        async with unchanged(redis_client):
            await redis_client.set(key, "1")
    await redis_client.delete(key)


async def test_a_deletion_before_the_time_to_live_ends_fails_it(redis_client: Any) -> None:
    key = f"test:unchanged:{uuid.uuid4().hex}"
    await redis_client.set(key, "1", ex=60)
    with pytest.raises(AssertionError):
        async with unchanged(redis_client):
            await redis_client.delete(key)


async def test_a_key_redis_expires_in_the_block_passes(redis_client: Any) -> None:
    key = f"test:unchanged:{uuid.uuid4().hex}"
    await redis_client.set(key, "1", px=200)
    async with unchanged(redis_client):
        while await redis_client.exists(key):  # noqa: ASYNC110 - Redis's clock lets it go
            await asyncio.sleep(0.05)
