"""Shared set-up for the service benchmarks: an embedded Redis and real Parley processes."""

import contextlib
import statistics
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import psutil
import redis.asyncio as redis

from parley.storage.connection import open_client, prepare
from parley.storage.durability import Fsync
from parley.storage.embedded import EmbeddedRedis


@asynccontextmanager
async def bench_redis(
    fsync: Fsync = "everysec", parent: Path | None = None
) -> AsyncIterator[tuple[str, Path, redis.Redis]]:
    """A fresh embedded Redis in a temporary directory (under `parent`, else the system's) and a
    client the models are bound to.

    Its pid is written to `<tmp>/redis.pid` for CPU and memory readings.
    """
    with tempfile.TemporaryDirectory(prefix="parley-bench-", dir=parent) as tmp:
        server = EmbeddedRedis(Path(tmp), fsync=fsync)
        url = await server.start()
        assert server.process is not None
        (Path(tmp) / "redis.pid").write_text(str(server.process.pid))
        client = open_client(url)
        await prepare(client)
        try:
            yield url, Path(tmp), client
        finally:
            await client.aclose()
            await server.stop()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def summary_ms(values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return (
        f"n={len(ms)} p50={percentile(ms, 50):.2f} ms p99={percentile(ms, 99):.2f} ms "
        f"mean={statistics.fmean(ms):.2f} ms"
    )


def cpu_seconds(pid: int, descendants: bool = False) -> float:
    """A process's CPU time so far, user and system; with `descendants`, also its waited-for
    children's (rq's work horses) and its live descendants'."""
    process = psutil.Process(pid)
    times = process.cpu_times()
    total = times.user + times.system
    if descendants:
        total += times.children_user + times.children_system
        for child in process.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                c = child.cpu_times()
                total += c.user + c.system
    return float(total)


def rss_mib(pid: int) -> float:
    return float(psutil.Process(pid).memory_info().rss) / 2**20
