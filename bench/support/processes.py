"""Real Parley processes for tests: API servers and workers, started and stopped by pid, and
commands run to their end."""

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from parley.core.processes import stop_process
from parley.storage.embedded import free_port

PARLEY = [sys.executable, "-m", "parley.graph.cli"]
"""The `parley` command of this interpreter's installation."""


def parley(
    *args: str, env: dict[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """A `parley` command run to its end, its output kept."""
    return subprocess.run(
        [*PARLEY, *args], env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


async def run(
    *args: str, env: dict[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`parley`, off the event loop (an in-process server may have to answer it)."""
    return await asyncio.to_thread(parley, *args, env=env, timeout=timeout)


def parley_env(redis_url: str, data_dir: Path, **settings: str) -> dict[str, str]:
    env = {**os.environ, "REDIS_URL": redis_url, "PARLEY_DATA_DIR": str(data_dir)}
    env.update({f"PARLEY_{k.upper()}": v for k, v in settings.items()})
    return env


def embedded_env(data_dir: Path, **settings: str) -> dict[str, str]:
    """As `parley_env`, with no Redis URL: the processes start the embedded Redis of
    `data_dir`."""
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "REDIS_OM_URL")}
    env.update({f"PARLEY_{k.upper()}": v for k, v in settings.items()})
    return {**env, "PARLEY_DATA_DIR": str(data_dir)}


class Process:
    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        self._log_file = log.open("wb")
        self.popen = subprocess.Popen(
            [*PARLEY, *args],
            env=env,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
        )

    @property
    def pid(self) -> int:
        return self.popen.pid

    def kill(self) -> None:
        """SIGKILL: the process gets no chance to clean up."""
        self.popen.send_signal(signal.SIGKILL)
        self.popen.wait(10)

    def stop(self, timeout: float = 20) -> int:
        code = stop_process(self.popen, timeout)
        self._log_file.close()
        return code

    def output(self) -> str:
        return self.log.read_text(errors="replace")


class ApiProcess(Process):
    def __init__(
        self,
        env: dict[str, str],
        log: Path,
        *extra: str,
        seed: bool = False,
        port: int | None = None,
    ) -> None:
        self.port = port or free_port()
        flags = [] if seed else ["--no-seed"]
        super().__init__(["serve", "--port", str(self.port), *flags, *extra], env, log)
        self.url = f"http://127.0.0.1:{self.port}"
        self.wait_ready()

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.popen.poll() is not None:
                raise RuntimeError(f"API process exited:\n{self.output()}")
            try:
                if httpx.get(f"{self.url}/readyz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"API process not ready:\n{self.output()}")


@contextmanager
def api_process(env: dict[str, str], log: Path, *extra: str) -> Iterator[ApiProcess]:
    process = ApiProcess(env, log, *extra)
    try:
        yield process
    finally:
        process.stop()


@contextmanager
def worker_process(
    env: dict[str, str], log: Path, concurrency: int | None = 4
) -> Iterator[Process]:
    """A `parley worker`; `concurrency=None` leaves it at its default."""
    flags = [] if concurrency is None else ["--concurrency", str(concurrency)]
    process = Process(["worker", *flags], env, log)
    try:
        yield process
    finally:
        process.stop()
