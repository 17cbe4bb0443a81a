"""Shared set-up for the service benchmarks: an embedded Redis, figures of real Parley
processes, and the command line."""

import argparse
import asyncio
import contextlib
import inspect
import statistics
import tempfile
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, get_type_hints

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


def run_main(main: Callable[..., Coroutine[Any, Any, None]], description: str | None) -> None:
    """Run `main` with its keyword defaults as command-line options (`in_flight` is
    `--in-flight`), each of its default's type; a string in a parameter's `Annotated` is its
    help."""
    parser = argparse.ArgumentParser(description=description)
    hints = get_type_hints(main, include_extras=True)
    for name, parameter in inspect.signature(main).parameters.items():
        default = parameter.default
        helps = [m for m in getattr(hints.get(name), "__metadata__", ()) if isinstance(m, str)]
        kind: dict[str, Any] = (
            {"action": argparse.BooleanOptionalAction}
            if isinstance(default, bool)
            else {"type": type(default)}
        )
        option = "--" + name.replace("_", "-")
        parser.add_argument(option, default=default, help=helps[0] if helps else None, **kind)
    asyncio.run(main(**vars(parser.parse_args())))
