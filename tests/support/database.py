"""The whole database as data, to prove that a refused request wrote nothing."""

import json
from typing import Any

import redis.asyncio as redis


async def snapshot(client: redis.Redis) -> dict[str, str]:
    """Every key and its value, to prove a refused request wrote nothing."""
    state: dict[str, str] = {}
    async for key in client.scan_iter(count=1000):
        kind = await client.type(key)
        if kind == "ReJSON-RL":
            value: Any = await client.json().get(key)
        elif kind == "string":
            value = await client.get(key)
        elif kind == "hash":
            value = await client.hgetall(key)
        else:
            value = kind
        state[key] = json.dumps(value, sort_keys=True, default=str)
    return state
