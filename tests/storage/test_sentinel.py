"""The redis+sentinel:// URL, and a client on it against real Sentinels: it finds the primary,
follows a failover (a killed primary, a demoted one), and the replica it promotes has Parley's
indexes, which redis-om's index check leaves alone there."""

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis as sync_redis
from aredis_om import Migrator

from bench.support.sentinels import SERVICE, SentinelCluster
from parley.storage import keys
from parley.storage.connection import describe, open_client, prepare
from parley.storage.models import MODELS, AgentProfile
from parley.storage.outages import is_outage
from parley.storage.sentinel import (
    DEFAULT_PORT,
    SentinelTarget,
    check_url,
    from_settings,
    is_sentinel_url,
    parse,
)


def test_a_url_names_the_sentinels_the_service_the_database_and_both_passwords() -> None:
    target = parse(
        "redis+sentinel://app:p%40ss%3Aword@s1:26380,[::1]:26381,s3/my%20primary/0"
        "?sentinel_password=s%26cret&sentinel_username=watch"
    )
    assert target == SentinelTarget(
        sentinels=(("s1", 26380), ("::1", 26381), ("s3", DEFAULT_PORT)),
        service="my primary",
        db=0,
        username="app",
        password="p@ss:word",
        sentinel_username="watch",
        sentinel_password="s&cret",
    )


def test_a_password_alone_and_no_database() -> None:
    target = parse("redis+sentinel://:secret@127.0.0.1:5000/parley")
    assert (target.username, target.password, target.db) == (None, "secret", 0)
    assert target.sentinels == (("127.0.0.1", 5000),)
    assert target.sentinel_password is None


@pytest.mark.parametrize(
    "url",
    [
        "redis+sentinel://h:1,h:2/svc",
        "redis+sentinel://u:p%2F@h:1/svc/3?sentinel_password=x%20y",
        "redis+sentinel://[::1]:26379/svc",
    ],
)
def test_a_target_writes_the_url_it_was_read_from(url: str) -> None:
    assert parse(parse(url).url()) == parse(url)


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("redis://h:1/0", "starts with"),
        ("redis+sentinel://h:1", "names the service"),
        ("redis+sentinel://h:1/", "names the service"),
        ("redis+sentinel://h:1/svc/x", "database number"),
        ("redis+sentinel://h:1/svc/0/1", "database number"),
        ("redis+sentinel://h:0/svc", "port from 1"),
        ("redis+sentinel://h:port/svc", "port from 1"),
        ("redis+sentinel://h:1,,h:2/svc", "at least one"),
        ("redis+sentinel://:1/svc", "no host"),
        ("redis+sentinel://[::1/svc", "IPv6"),
        ("redis+sentinel://h:1/svc?password=x", "not 'password'"),
        ("redis+sentinel://h:1/svc#top", "fragment"),
    ],
)
def test_a_malformed_url_is_refused_saying_what_is_wrong(url: str, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        parse(url)


def test_other_urls_pass_the_check_and_other_sentinel_schemes_are_refused() -> None:
    assert check_url("redis://h:6379/0") == "redis://h:6379/0"
    assert is_sentinel_url("REDIS+SENTINEL://h/svc")
    with pytest.raises(ValueError, match="not supported"):
        check_url("rediss+sentinel://h:1/svc")
    with pytest.raises(ValueError, match="names the service"):
        check_url("redis+sentinel://h:1")


def test_settings_make_the_same_target() -> None:
    target = from_settings("a:1, b:2", "svc", password="pw", sentinel_password="")
    assert target == SentinelTarget((("a", 1), ("b", 2)), "svc", password="pw")
    assert parse(target.url()) == target
    with pytest.raises(ValueError, match="service"):
        from_settings("a:1", "")


def test_what_is_shown_of_a_target_holds_no_password() -> None:
    target = parse("redis+sentinel://:secret@h:1/svc?sentinel_password=other")
    assert "secret" not in target.redacted() and "other" not in target.redacted()


# --- against real Sentinels ------------------------------------------------------------------


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[SentinelCluster]:
    with SentinelCluster(tmp_path) as started:
        yield started


async def test_the_client_follows_a_killed_primary_to_the_promoted_replica(
    cluster: SentinelCluster,
) -> None:
    client = open_client(cluster.url)
    try:
        assert SERVICE in describe(client)
        await client.set("before", "1")
        old = client.connection_pool.connection_kwargs
        assert "host" not in old  # every connection asks the Sentinels where the primary is
        await asyncio.to_thread(cluster.kill_primary)
        with pytest.raises(sync_redis.RedisError) as refused:
            await client.set("during", "1")
        assert is_outage(refused.value)
        await asyncio.to_thread(cluster.wait_promoted)
        await client.set("after", "1")  # the same client, no restart
        info = await client.info("server")
        assert int(info["tcp_port"]) == cluster.replica.port
        assert await client.get("before") == "1"
    finally:
        await client.aclose()


async def test_a_demoted_primary_answers_readonly_and_the_write_goes_to_the_new_one(
    cluster: SentinelCluster,
) -> None:
    """A failover the Sentinels are told to make keeps the old primary alive, as a replica: a
    pooled connection to it is answered READONLY, dropped, and the write sent again to the
    new primary."""
    client = open_client(cluster.url, max_connections=1)  # one connection, reused
    try:
        await client.set("k", "old")
        with cluster.connect(cluster.sentinels[0], cluster.sentinel_password) as sentinel:
            sentinel.execute_command("SENTINEL", "FAILOVER", SERVICE)
        await asyncio.to_thread(cluster.wait_promoted)
        with cluster.connect(cluster.primary) as demoted:
            for _ in range(100):
                if demoted.info("replication")["role"] == "slave":
                    break
                await asyncio.sleep(0.1)
            assert demoted.info("replication")["role"] == "slave"
        await client.set("k", "new")
        with cluster.connect(cluster.replica) as promoted:
            assert promoted.get("k") == "new"
    finally:
        await client.aclose()


async def test_a_plain_url_to_a_node_demoted_since_is_an_outage_not_a_refusal(
    cluster: SentinelCluster,
) -> None:
    replica_url = f"redis://:{cluster.password}@127.0.0.1:{cluster.replica.port}/0"
    client = open_client(replica_url)
    try:
        with pytest.raises(sync_redis.ConnectionError, match="replica"):
            await client.set("k", "v")
    finally:
        await client.aclose()


async def test_the_replica_has_the_indexes_and_redis_oms_check_writes_nothing_there(
    cluster: SentinelCluster, redis_client: sync_redis.asyncio.Redis
) -> None:
    primary = open_client(cluster.url)
    replica_url = f"redis://:{cluster.password}@127.0.0.1:{cluster.replica.port}/0"
    replica = open_client(replica_url)
    try:
        await prepare(primary)
        await AgentProfile(first_name="Rita", last_name="Replica", age=40).save()
        await primary.wait(1, 5000)
        names = [keys.index_name(AgentProfile.__name__), keys.RESULTS_INDEX]
        listed = await replica.execute_command("FT._LIST")  # type: ignore[no-untyped-call]
        assert set(names) <= set(listed)
        found = await replica.execute_command(  # type: ignore[no-untyped-call]
            "FT.SEARCH", names[0], "@last_name:{Replica}", "NOCONTENT"
        )
        assert found[0] == 1 if isinstance(found, list) else found["total_results"] == 1
        # Bound to the replica, redis-om's index check finds every index as it was made, so it
        # has nothing to create or drop (a write there would be refused READONLY).
        for model in MODELS:
            model._meta.database = replica
        migrator = Migrator()
        await migrator.detect_migrations()
        assert migrator.migrations == []
    finally:
        await prepare(redis_client)
        await primary.aclose()
        await replica.aclose()
