"""What the Prometheus metrics cost: the recording calls a model call, a turn, a judge run and a
delivered event make (core/metrics.py), in one process and in multiprocess mode, and a scrape
(the Redis reads of resolvers/gauges.py over a database of `episodes` episodes, and the
exposition).

Run: python -m bench.bench_metrics [--calls 200000] [--episodes 10000]

Multiprocess mode is chosen when prometheus_client is imported, so its figures come from a child
process started with PROMETHEUS_MULTIPROC_DIR set (`--child`).
"""

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from bench.common import bench_redis, run_main
from parley.core import metrics
from parley.resolvers.gauges import shared_figures
from parley.storage.jobs import JobQueue
from parley.storage.models import EpisodeLog, EpisodeStatus

MODEL = "custom/fake@http://127.0.0.1:8001/v1"


def per_call_us(action: Callable[[], object], calls: int) -> float:
    """Microseconds of CPU `action` takes, best of 3 runs of `calls`."""
    best = float("inf")
    for _ in range(3):
        began = time.process_time()
        for _ in range(calls):
            action()
        best = min(best, time.process_time() - began)
    return best / calls * 1e6


async def judge_wrapper_us(calls: int) -> float:
    """What `judge_run` adds to awaiting a judge run: its time, less a bare await's."""

    async def run() -> None:
        return None

    async def timed(wrap: bool) -> float:
        began = time.process_time()
        for _ in range(calls):
            await (metrics.judge_run(MODEL, run()) if wrap else run())
        return time.process_time() - began

    bare = min([await timed(False) for _ in range(3)])
    wrapped = min([await timed(True) for _ in range(3)])
    return (wrapped - bare) / calls * 1e6


async def recording(calls: int) -> dict[str, float]:
    tokens = SimpleNamespace(prompt_tokens=812, completion_tokens=40)
    clock = metrics.TurnClock()
    turn = iter(range(10**9))
    return {
        "model call (answered)": per_call_us(lambda: metrics.model_answered(MODEL, tokens), calls),
        "model call (failed)": per_call_us(lambda: metrics.model_failed(MODEL, "server"), calls),
        "turn": per_call_us(lambda: clock.lap(next(turn)), calls),
        "judge run": await judge_wrapper_us(calls // 10),
        "delivered event": per_call_us(metrics.delivered, calls),
    }


def exposition_ms(rounds: int = 20) -> float:
    scraped = metrics.Scraped(None, metrics.ApiFigures(0, 0, 0))
    began = time.perf_counter()
    for _ in range(rounds):
        metrics.exposition("", scraped)
    return (time.perf_counter() - began) / rounds * 1000


async def in_child(calls: int) -> None:
    """In multiprocess mode: the recording calls, then a scrape of this process's files and of
    a second process's (started after the recording, so both have recorded)."""
    found = await recording(calls)
    sibling = "from bench.bench_metrics import sibling; sibling()"
    command = [sys.executable, "-c", sibling]
    await asyncio.to_thread(subprocess.run, command, check=True, timeout=60)
    found["exposition of 2 processes' files (ms)"] = exposition_ms()
    print(json.dumps(found))


def sibling() -> None:
    """A second process recording what the first did, for the exposition to add up."""
    tokens = SimpleNamespace(prompt_tokens=812, completion_tokens=40)
    metrics.model_answered(MODEL, tokens)
    metrics.model_failed(MODEL, "server")
    metrics.TurnClock().lap(0)
    metrics.delivered()


def multiprocess(calls: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="parley-prometheus-") as directory:
        env = {**os.environ, metrics.MULTIPROCESS_DIR: directory}
        command = [sys.executable, "-m", "bench.bench_metrics", "--calls", str(calls), "--child"]
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise RuntimeError(done.stderr)
        found: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
        return found


async def scrape_reads(episodes: int) -> tuple[float, dict[str, Any]]:
    """Milliseconds of the scrape's Redis reads (median of 20) over `episodes` episodes."""
    async with bench_redis() as (_, _, client):
        statuses = list(EpisodeStatus)
        async with client.pipeline(transaction=False) as pipe:
            for n in range(episodes):
                pk = f"bench-{n}"
                episode = EpisodeLog(pk=pk, environment="s", agents=["a", "b"])
                episode.status = statuses[n % len(statuses)]
                pipe.json().set(EpisodeLog.make_key(pk), "$", episode.model_dump(mode="json"))
            await pipe.execute()
        jobs = JobQueue(client)
        await jobs.ensure_group()
        for n in range(100):
            await client.xadd(jobs.stream, {"kind": "episode", "subject": f"e{n}"})
        await jobs.read("bench-worker", 50, block_ms=100)
        await asyncio.sleep(1)  # the index catches up with the writes
        times = []
        figures = await shared_figures(client, jobs, 30)
        for _ in range(20):
            began = time.perf_counter()
            figures = await shared_figures(client, jobs, 30)
            times.append(time.perf_counter() - began)
        times.sort()
        shown = {"episodes": dict(figures.episodes), "waiting": figures.waiting}
        return times[len(times) // 2] * 1000, shown


async def main(calls: int = 200_000, episodes: int = 10_000, child: bool = False) -> None:
    if child:
        await in_child(calls)
        return
    alone = await recording(calls)
    alone["exposition of this process (ms)"] = exposition_ms()
    shared = multiprocess(calls)
    print(f"recording calls, CPU microseconds each (best of 3 runs of {calls:,}):")
    print("| | one process | multiprocess mode |\n|---|---|---|")
    for name in alone:
        if name in shared or "exposition" not in name:
            print(f"| {name} | {alone[name]:.2f} | {shared[name]:.2f} |")
    print(
        f"| exposition (ms) | {alone['exposition of this process (ms)']:.2f} (its own) | "
        f"{shared["exposition of 2 processes' files (ms)"]:.2f} (2 processes' files) |"
    )
    reads, figures = await scrape_reads(episodes)
    print(f"scrape's Redis reads over {episodes:,} episodes: {reads:.2f} ms (median of 20)")
    print(f"  read: {figures}")


if __name__ == "__main__":
    run_main(main, __doc__)
