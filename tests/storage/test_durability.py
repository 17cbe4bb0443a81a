"""Acknowledged writes wait for replicas: WAIT on the write's own connection, covering a repeated
write that changed nothing, refused as an outage when the replicas do not answer in time."""

import asyncio
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as redis

from bench.support.sentinels import SentinelCluster
from parley.storage import episode_store, seats
from parley.storage.connection import open_client
from parley.storage.durability import (
    NotReplicated,
    ReplicaAcks,
    acks_of,
    expect_acks,
    run_acknowledged,
)
from parley.storage.outages import is_outage
from parley.storage.scripts import Script

SET_ONCE = (
    "if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end "
    "redis.call('SET', KEYS[1], ARGV[1]) return 1"
)


def test_the_writes_a_client_or_worker_is_told_of_are_acknowledged() -> None:
    acknowledged: list[Script[Any, Any]] = [
        episode_store.CREATE,
        episode_store.TRANSITION,
        episode_store.APPEND_TURN,
        episode_store.MARK,
        seats.ACT,
        seats.CLAIM,
    ]
    assert all(script.acknowledged for script in acknowledged)
    assert not seats.EXPIRE.acknowledged  # housekeeping: applied again by the next sweep


async def test_no_acks_expected_of_a_client_unless_asked(redis_url: str) -> None:
    client = open_client(redis_url)
    try:
        assert acks_of(client) is None
        expect_acks(client, ReplicaAcks(1, 0.5))
        assert acks_of(client) == ReplicaAcks(1, 0.5)
        expect_acks(client, ReplicaAcks(0, 0.5))
        assert acks_of(client) is None
    finally:
        await client.aclose()


async def test_without_a_replica_the_write_is_made_but_not_acknowledged(redis_url: str) -> None:
    client = open_client(redis_url, acks=ReplicaAcks(1, 0.05))
    try:
        script = client.register_script(SET_ONCE)
        with pytest.raises(NotReplicated, match="0 of 1 replicas") as refused:
            await run_acknowledged(client, ReplicaAcks(1, 0.05), script, ["durability:k"], ["v"])
        assert is_outage(refused.value)
        assert await client.get("durability:k") == "v"  # on the primary, not acknowledged
    finally:
        await client.delete("durability:k")
        await client.aclose()


@pytest.fixture(scope="module")
async def cluster(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[SentinelCluster]:
    root: Path = tmp_path_factory.mktemp("replicated")
    with SentinelCluster(root) as started:
        yield started


@pytest.fixture
async def primary(cluster: SentinelCluster) -> AsyncIterator[redis.Redis]:
    client = open_client(cluster.url)
    yield client
    await client.aclose()


async def test_a_replica_acknowledges_the_write(
    cluster: SentinelCluster, primary: redis.Redis
) -> None:
    script = primary.register_script(SET_ONCE)
    acks = ReplicaAcks(1, 2.0)
    assert await run_acknowledged(primary, acks, script, ["a"], ["1"]) == 1
    with cluster.connect(cluster.replica) as replica:
        assert replica.get("a") == "1"  # there when the write returned


async def test_a_repeated_write_that_changed_nothing_waits_for_the_first_one(
    cluster: SentinelCluster, primary: redis.Redis
) -> None:
    """The first run's reply was lost with the replica stalled; the second run changes nothing,
    and is acknowledged only once the replica has the first run's write."""
    script = primary.register_script(SET_ONCE)
    acks = ReplicaAcks(1, 0.3)
    replica = cluster.replica.process
    assert replica is not None
    replica.send_signal(signal.SIGSTOP)
    try:
        with pytest.raises(NotReplicated):
            await run_acknowledged(primary, acks, script, ["b"], ["1"])
        with pytest.raises(NotReplicated):  # a no-op, on a connection of its own
            await run_acknowledged(primary, acks, script, ["b"], ["1"])
    finally:
        replica.send_signal(signal.SIGCONT)
    assert await run_acknowledged(primary, ReplicaAcks(1, 5.0), script, ["b"], ["1"]) == 0
    with cluster.connect(cluster.replica) as node:
        assert node.get("b") == "1"


async def test_a_script_the_primary_has_not_loaded_is_loaded_and_run(
    primary: redis.Redis,
) -> None:
    script = primary.register_script(SET_ONCE)
    await primary.script_flush()
    assert await run_acknowledged(primary, ReplicaAcks(1, 2.0), script, ["c"], ["1"]) == 1
    assert await asyncio.wait_for(primary.get("c"), 1) == "1"
