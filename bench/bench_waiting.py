"""Episodes waiting on people: what 1,000 of them cost a worker and Redis.

Run: python -m bench.bench_waiting [--episodes 1000] [--few 10] [--seconds 60]
Starts an embedded Redis, the fake LLM (its own process), an API without a worker and one
`parley worker`. It starts `--few` episodes whose seat 0 is a person's (a day's deadline), lets
the worker park them WAITING and samples the worker's RSS and CPU and Redis's used_memory and CPU
(INFO) for 10 s; then it starts the rest up to `--episodes`, times until the worker has parked
them all, and samples the same figures for `--seconds`, in 10 s windows. Last it sends every
waiting seat's submitAction at once (32 in flight) and times how fast the API takes them and how
long until the worker has played each episode's model turn and parked it WAITING again.
"""

import asyncio
import json
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import redis.asyncio as redis

from bench.common import bench_redis, cpu_seconds, rss_mib, run_main, summary_ms
from bench.support.fake_llm import fake_llm_process
from bench.support.people import START_MANY_WITH_SEATS, SUBMIT, speak
from bench.support.processes import api_process, parley_env, worker_process
from bench.support.simulation import make_world, post, start_input
from parley.storage.embedded import free_port
from parley.storage.models import EpisodeLog, EpisodeStatus

WINDOW = 10.0
IN_FLIGHT = 32


@dataclass
class Sample:
    at: float
    worker_rss: float
    """MiB."""
    worker_cpu: float
    """CPU seconds so far."""
    redis_memory: float
    """used_memory, MiB."""
    redis_cpu: float
    """used_cpu_user + used_cpu_sys, seconds so far."""


async def sample(client: redis.Redis, worker_pid: int) -> Sample:
    memory: dict[str, Any] = await client.info("memory")
    cpu: dict[str, Any] = await client.info("cpu")
    return Sample(
        at=time.monotonic(),
        worker_rss=rss_mib(worker_pid),
        worker_cpu=cpu_seconds(worker_pid),
        redis_memory=float(memory["used_memory"]) / 2**20,
        redis_cpu=float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"]),
    )


async def watch(client: redis.Redis, worker_pid: int, seconds: float) -> list[Sample]:
    samples = [await sample(client, worker_pid)]
    end = samples[0].at + seconds
    while time.monotonic() < end:
        await asyncio.sleep(1.0)
        samples.append(await sample(client, worker_pid))
    return samples


def cpu_line(seconds: dict[str, float]) -> str:
    return ", ".join(f"{name} {spent:.1f} s" for name, spent in seconds.items())


def window(samples: list[Sample]) -> str:
    first, last = samples[0], samples[-1]
    span = last.at - first.at
    worker_cpu = (last.worker_cpu - first.worker_cpu) / span * 100
    redis_cpu = (last.redis_cpu - first.redis_cpu) / span * 100
    rss = statistics.fmean(s.worker_rss for s in samples)
    used = statistics.fmean(s.redis_memory for s in samples)
    return (
        f"worker RSS {rss:6.1f} MiB, CPU {worker_cpu:4.1f}% | "
        f"Redis used_memory {used:6.1f} MiB, CPU {redis_cpu:4.1f}%"
    )


def windows(samples: list[Sample]) -> list[str]:
    """One line per WINDOW seconds of samples."""
    lines, begin = [], 0
    for i, s in enumerate(samples):
        if s.at - samples[begin].at >= WINDOW or i == len(samples) - 1:
            start = samples[begin].at - samples[0].at
            lines.append(
                f"  {start:4.0f}-{s.at - samples[0].at:3.0f} s: {window(samples[begin : i + 1])}"
            )
            begin = i
    return lines


async def waiting_count() -> int:
    found: int = await EpisodeLog.find(EpisodeLog.status == EpisodeStatus.WAITING).count()
    return found


async def until_waiting(count: int, timeout: float = 600) -> float:
    """Seconds until `count` episodes are WAITING."""
    began = time.perf_counter()
    while await waiting_count() < count:
        if time.perf_counter() - began > timeout:
            raise RuntimeError(f"only {await waiting_count()} of {count} episodes waiting")
        await asyncio.sleep(0.05)
    return time.perf_counter() - began


async def start_many(api_url: str, one: dict[str, Any], count: int) -> list[tuple[str, str]]:
    """Start `count` episodes in batches of 500; each one's id and seat 0's token."""
    made: list[tuple[str, str]] = []
    for offset in range(0, count, 500):
        batch = min(500, count - offset)
        payload = (await post(api_url, START_MANY_WITH_SEATS, {"inputs": [one] * batch}))[
            "startSimulations"
        ]
        assert not payload["userErrors"], payload
        for episode, tokens in zip(payload["episodes"], payload["seatTokens"], strict=True):
            made.append((episode["id"], tokens[0]["token"]))
    return made


async def submit_all(api_url: str, seats: list[tuple[str, str]]) -> list[float]:
    """Each seat's submitAction, IN_FLIGHT at a time; each one's latency."""
    gate = asyncio.Semaphore(IN_FLIGHT)
    latencies: list[float] = []
    limits = httpx.Limits(max_connections=IN_FLIGHT)
    async with httpx.AsyncClient(base_url=api_url, timeout=60, limits=limits) as http:

        async def one(pk: str, token: str) -> None:
            async with gate:
                began = time.perf_counter()
                action = speak(pk, 0, token, "Here is what I think.")
                response = await http.post(
                    "/graphql", json={"query": SUBMIT, "variables": {"input": action}}
                )
                latencies.append(time.perf_counter() - began)
                payload = response.json()["data"]["submitAction"]
                assert payload["userErrors"] == [], payload

        await asyncio.gather(*(one(pk, token) for pk, token in seats))
    return latencies


async def main(episodes: int = 1000, few: int = 10, seconds: float = 60.0) -> None:
    async with bench_redis() as (redis_url, tmp, client):
        with fake_llm_process(free_port()) as (base, _):
            models = tmp / "models.json"
            entry = {"name": "fake", "base_url": base, "model": "fake", "max_concurrency": 64}
            models.write_text(json.dumps({"models": [entry]}))
            scenario, agents = await make_world("bench-waiting")
            env = parley_env(redis_url, tmp / "data", seed="false", models_file=str(models))
            one = start_input(scenario, agents, "fake", maxTurns=3)
            one.update({"humanSeats": [0], "seatDeadlineSeconds": 86400})
            with (
                api_process(env, Path(tmp) / "api.log", "--no-worker") as api,
                worker_process(env, Path(tmp) / "worker.log", concurrency=None) as worker,
            ):
                await asyncio.sleep(2)
                idle = await watch(client, worker.pid, WINDOW)
                seats = await start_many(api.url, one, few)
                await until_waiting(few)
                with_few = await watch(client, worker.pid, WINDOW)

                pids = {
                    "API": api.pid,
                    "worker": worker.pid,
                    "Redis": int((tmp / "redis.pid").read_text()),
                }
                before = {name: cpu_seconds(pid) for name, pid in pids.items()}
                began = time.perf_counter()
                seats += await start_many(api.url, one, episodes - few)
                started = time.perf_counter() - began
                parked = started + await until_waiting(episodes)
                parking = {name: cpu_seconds(pid) - before[name] for name, pid in pids.items()}
                with_many = await watch(client, worker.pid, seconds)

                before = {name: cpu_seconds(pid) for name, pid in pids.items()}
                began = time.perf_counter()
                latencies = await submit_all(api.url, seats)
                absorbed = time.perf_counter() - began
                await asyncio.sleep(0.5)
                back = absorbed + 0.5 + await until_waiting(episodes)
                playing = {name: cpu_seconds(pid) - before[name] for name, pid in pids.items()}
                after = await sample(client, worker.pid)

    print(f"one worker process (default concurrency), {episodes} episodes, person in seat 0")
    print(f"{'nothing waiting':>16} ({WINDOW:3.0f} s): {window(idle)}")
    print(f"{f'{few} waiting':>16} ({WINDOW:3.0f} s): {window(with_few)}")
    print(f"{f'{episodes} waiting':>16} ({seconds:3.0f} s): {window(with_many)}")
    print(*windows(with_many), sep="\n")
    per_episode = (with_many[-1].redis_memory - with_few[-1].redis_memory) * 1024
    print(f"Redis memory per waiting episode: {per_episode / (episodes - few):.1f} KiB")
    print(f"start {episodes - few} (startSimulations, 500 a call): {started:.2f} s")
    print(f"started to all {episodes} parked WAITING:          {parked:.2f} s")
    print(f"  CPU meanwhile: {cpu_line(parking)}")
    rate = len(seats) / absorbed
    print(f"{len(seats)} submitActions, {IN_FLIGHT} in flight: {absorbed:.2f} s ({rate:.0f}/s)")
    print(f"  latency {summary_ms(latencies)}")
    print(f"all {episodes} played a model turn and WAITING again: {back:.2f} s after the first")
    print(f"  CPU meanwhile: {cpu_line(playing)}")
    print(f"worker RSS after: {after.worker_rss:.1f} MiB")


if __name__ == "__main__":
    run_main(main, __doc__)
