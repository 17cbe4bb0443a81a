"""The whole database as data, to prove that a refused request wrote nothing."""

import json
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
