"""The whole database as data, to prove that a refused request wrote nothing."""

import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import redis.asyncio as redis

BATCH = 1000
"""Keys read per pipelined round trip."""


async def snapshot(client: redis.Redis) -> dict[str, str]:
    """Every key and its value (a stream by its length, any other kind by its kind)."""
    state, _ = await read(client)
    return state


async def read(client: redis.Redis) -> tuple[dict[str, str], dict[str, float]]:
    """Every key and its value, read in pipelined batches (the session's Redis holds tens of
    thousands of keys late in a run), and for each key with a time to live the earliest moment
    (`time.monotonic()`) Redis may let it go: the clock is read before the times to live are. A
    key gone before its kind is read is left out; one gone before its time to live is read
    counts as gone then."""
    keys = sorted([key async for key in client.scan_iter(count=BATCH)])
    state: dict[str, str] = {}
    expiring: dict[str, float] = {}
    for start in range(0, len(keys), BATCH):
        batch = keys[start : start + BATCH]
        now = time.monotonic()
        async with client.pipeline(transaction=False) as pipe:
            for key in batch:
                pipe.type(key)
                pipe.pttl(key)
            replies: list[Any] = await pipe.execute()
        kinds = dict(zip(batch, replies[0::2], strict=True))
        for key, left in zip(batch, replies[1::2], strict=True):
            if left >= 0 or left == -2:  # -2: gone since its kind was read
                expiring[key] = now + max(left, 0) / 1000
        present = [key for key in batch if kinds[key] != "none"]
        async with client.pipeline(transaction=False) as pipe:
            for key in present:
                kind = kinds[key]
                if kind == "ReJSON-RL":
                    pipe.json().get(key)
                elif kind == "string":
                    pipe.get(key)
                elif kind == "hash":
                    pipe.hgetall(key)
                elif kind == "stream":
                    pipe.xlen(key)
                else:
                    pipe.type(key)
            values: list[Any] = await pipe.execute()
        for key, value in zip(present, values, strict=True):
            state[key] = json.dumps(value, sort_keys=True, default=str)
    return state, expiring


@asynccontextmanager
async def unchanged(client: redis.Redis) -> AsyncIterator[None]:
    """Fail if the database differs after the block, but for keys Redis let go at the end of
    their time to live (a lease another test took, say): that is no write of the block's."""
    before, expiring = await read(client)
    yield
    after = await snapshot(client)
    now = time.monotonic()
    expired = {key for key, at in expiring.items() if at <= now and key not in after}
    assert after == {key: value for key, value in before.items() if key not in expired}
