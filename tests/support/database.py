"""The whole database as data, to prove that a refused request wrote nothing."""

import json
import time
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

import redis.asyncio as redis

BATCH = 1000
"""Keys read per pipelined round trip."""


async def snapshot(client: redis.Redis) -> dict[str, str]:
    """Every key and its value (a stream by its length, any other kind by its kind), read in
    pipelined batches: the session's Redis holds tens of thousands of keys late in a run."""
    keys = sorted([key async for key in client.scan_iter(count=BATCH)])
    state: dict[str, str] = {}
    for start in range(0, len(keys), BATCH):
        batch = keys[start : start + BATCH]
        async with client.pipeline(transaction=False) as pipe:
            for key in batch:
                pipe.type(key)
            kinds: list[str] = await pipe.execute()
        async with client.pipeline(transaction=False) as pipe:
            for key, kind in zip(batch, kinds, strict=True):
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
        for key, value in zip(batch, values, strict=True):
            state[key] = json.dumps(value, sort_keys=True, default=str)
    return state


async def expiries(client: redis.Redis, keys: Iterable[str]) -> dict[str, float]:
    """The earliest moment (`time.monotonic()`) each of `keys` that has a time to live can
    expire: the clock is read before the times to live are, so Redis lets none go sooner."""
    keys = list(keys)
    found: dict[str, float] = {}
    for start in range(0, len(keys), BATCH):
        batch = keys[start : start + BATCH]
        now = time.monotonic()
        async with client.pipeline(transaction=False) as pipe:
            for key in batch:
                pipe.pttl(key)
            left: list[int] = await pipe.execute()
        found.update((k, now + ms / 1000) for k, ms in zip(batch, left, strict=True) if ms >= 0)
    return found


@asynccontextmanager
async def unchanged(client: redis.Redis) -> AsyncIterator[None]:
    """Fail if the database differs after the block, but for keys Redis let go at the end of
    their time to live (a lease another test took, say): that is no write of the block's."""
    before = await snapshot(client)
    expiring = await expiries(client, before)
    yield
    after = await snapshot(client)
    now = time.monotonic()
    expired = {key for key, at in expiring.items() if at <= now and key not in after}
    assert after == {key: value for key, value in before.items() if key not in expired}
