"""storage/outages.py against a real Redis: what is an outage (retry later) and what is a
refusal of what was sent (asked again, Redis refuses again)."""

import asyncio
from pathlib import Path

import pytest
import redis.asyncio as redis
from redis.exceptions import MasterDownError

from parley.storage.embedded import free_port
from parley.storage.outages import is_outage
from tests.support.spare_redis import spare_redis

SPIN = "local t = redis.call('TIME') repeat until redis.call('TIME')[1] - t[1] >= 2 return 1"
"""A script that runs for two seconds or so, writing nothing."""


async def refused(command: object) -> redis.RedisError:
    """The error awaiting `command` raises."""
    with pytest.raises(redis.RedisError) as raised:
        await command  # type: ignore[misc]
    return raised.value


async def test_a_script_running_past_its_time_is_an_outage(tmp_path: Path) -> None:
    """BUSY: every other command is refused until the script ends (one of Sotopia's, or any
    other writer's); alone and in a pipeline."""
    async with spare_redis(tmp_path) as (_, client):
        await client.config_set("busy-reply-threshold", 100)

        async def spin() -> object:
            return await client.eval(SPIN, 0)

        spinning = asyncio.create_task(spin())
        await asyncio.sleep(0.5)
        try:
            busy = await refused(client.set("k", "v"))
            async with client.pipeline(transaction=False) as pipe:
                pipe.set("k", "v")
                in_a_pipeline = await refused(pipe.execute())
        finally:
            await spinning
    assert str(busy).startswith("BUSY ") and is_outage(busy), busy
    assert is_outage(in_a_pipeline), in_a_pipeline


async def test_a_replica_without_its_master_is_an_outage(tmp_path: Path) -> None:
    """MASTERDOWN: a replica that serves no stale data, cut off from its master."""
    async with spare_redis(tmp_path) as (_, client):
        await client.config_set("replica-serve-stale-data", "no")
        await client.replicaof("127.0.0.1", free_port())
        try:
            down = await refused(client.get("k"))
        finally:
            await client.replicaof("NO", "ONE")
    assert isinstance(down, MasterDownError) and is_outage(down), down


async def test_a_refusal_of_what_was_sent_is_no_outage(redis_client: redis.Redis) -> None:
    """What a write holds (a lone surrogate, escaped as JSON carries it) or what a key holds
    (another type): refused again however often it is sent."""
    command = ("JSON.SET", "outage:k", "$", '"\\ud800"')
    split = await refused(redis_client.execute_command(*command))  # type: ignore[no-untyped-call]
    await redis_client.set("outage:string", "x")
    try:
        wrong = await refused(redis_client.lpush("outage:string", "y"))
    finally:
        await redis_client.delete("outage:string")
    assert type(split) is redis.ResponseError and not is_outage(split), split
    assert type(wrong) is redis.ResponseError and not is_outage(wrong), wrong
