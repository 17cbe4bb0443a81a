"""How far one Redis carries Parley: turns a second, episodes at once, Redis's CPU and memory per
episode, and where it saturates.

Run: python -m bench.bench_capacity [--workers 1,2,4] [--episodes 300] [--turns 6] [--delay 0.0]

One embedded Redis (its own process), the fake OpenAI-compatible model in a process of its own
answering after `delay`, an API without a worker that queues each batch with one
startSimulations call, and for each step N `parley worker` processes with no flags. Each step
runs `episodes` episodes of `turns` turns and a judge to their end; printed per step: the wall
time, turns a second, the most episodes running at once (sampled), each process's CPU seconds
and Redis's CPU as a share of one core, Redis's CPU per turn and per episode, and Redis's memory
per stored episode (`used_memory` over the episodes stored since the start).

Redis runs its commands on one core. Its CPU per turn, c, bounds what one Redis carries at
1/c turns a second whatever the workers; a step whose Redis share nears 100% of a core is where
it saturates. On a machine with few cores the workers (Python, and the model's answers) take the
cores first: the measured c and 1/c are then the figures to plan with, and the steps show where
the workers, not Redis, held the run.
"""

import asyncio
import contextlib
import time
from dataclasses import dataclass
from pathlib import Path

import redis.asyncio as redis

from bench.common import bench_redis, cpu_seconds, run_main
from bench.support.fake_llm import fake_llm_process
from bench.support.processes import api_process, parley_env, worker_process
from bench.support.simulation import make_world, post, start_input
from parley.storage.embedded import free_port

BATCH = """
mutation($inputs: [StartSimulationInput!]!) {
  startSimulations(inputs: $inputs) { episodes { id } userErrors { message } }
}"""
COUNTS = """
query($tag: String) {
  running: episodes(filter: {tag: $tag, status: RUNNING}) { totalCount }
  done: episodes(filter: {tag: $tag, status: COMPLETED}) { totalCount }
  failed: episodes(filter: {tag: $tag, status: FAILED}) { totalCount }
}"""
SAMPLE_SECONDS = 0.25


@dataclass
class Step:
    workers: int
    seconds: float
    completed: int
    failed: int
    turns: int
    peak_running: int
    redis_cpu: float
    workers_cpu: float
    api_cpu: float
    memory_per_episode: float


async def used_memory(client: redis.Redis) -> int:
    info = await client.info("memory")
    return int(info["used_memory"])


async def run_step(
    url: str, env: dict[str, str], tmp: Path, workers: int, inputs: list[dict[str, object]],
    tag: str, redis_pid: int, api_pid: int, client: redis.Redis,
) -> Step:  # fmt: skip
    with contextlib.ExitStack() as stack:
        running = [
            stack.enter_context(worker_process(env, tmp / f"w{workers}-{i}.log", concurrency=None))
            for i in range(workers)
        ]
        await asyncio.sleep(1.0)  # the workers connect and wait for jobs
        redis_cpu, api_cpu = cpu_seconds(redis_pid), cpu_seconds(api_pid)
        workers_cpu = sum(cpu_seconds(w.pid) for w in running)
        memory = await used_memory(client)
        began = time.perf_counter()
        made = (await post(url, BATCH, {"inputs": inputs}))["startSimulations"]
        assert not made["userErrors"], made
        peak = 0
        while True:
            counts = await post(url, COUNTS, {"tag": tag})
            peak = max(peak, counts["running"]["totalCount"])
            ended = counts["done"]["totalCount"] + counts["failed"]["totalCount"]
            if ended >= len(inputs):
                break
            await asyncio.sleep(SAMPLE_SECONDS)
        seconds = time.perf_counter() - began
        turns = int(inputs[0]["maxTurns"])  # type: ignore[call-overload]
        return Step(
            workers=workers,
            seconds=seconds,
            completed=counts["done"]["totalCount"],
            failed=counts["failed"]["totalCount"],
            turns=counts["done"]["totalCount"] * turns,
            peak_running=peak,
            redis_cpu=cpu_seconds(redis_pid) - redis_cpu,
            workers_cpu=sum(cpu_seconds(w.pid) for w in running) - workers_cpu,
            api_cpu=cpu_seconds(api_pid) - api_cpu,
            memory_per_episode=(await used_memory(client) - memory) / len(inputs),
        )


def report(step: Step) -> None:
    per_turn = step.redis_cpu / step.turns if step.turns else float("nan")
    print(
        f"{step.workers} workers: {step.completed} completed, {step.failed} failed in "
        f"{step.seconds:.1f} s; {step.turns / step.seconds:.0f} turns/s; at most "
        f"{step.peak_running} running at once\n"
        f"  CPU s: Redis {step.redis_cpu:.2f} ({step.redis_cpu / step.seconds:.0%} of a core), "
        f"workers {step.workers_cpu:.2f}, API {step.api_cpu:.2f}\n"
        f"  Redis per turn {per_turn * 1000:.3f} ms (one core carries {1 / per_turn:.0f} "
        f"turns/s), per episode {step.redis_cpu / max(step.completed, 1) * 1000:.1f} ms; "
        f"memory per stored episode {step.memory_per_episode / 1024:.1f} KiB"
    )


async def main(
    workers: str = "1,2,4", episodes: int = 300, turns: int = 6, delay: float = 0.0
) -> None:
    steps = [int(n) for n in workers.split(",")]
    print(f"{episodes} episodes of {turns} turns and a judge per step; fake model delay {delay}s")
    async with bench_redis() as (redis_url, tmp, client):
        redis_pid = int((tmp / "redis.pid").read_text())
        with fake_llm_process(free_port(), delay) as (base, _):
            env = parley_env(redis_url, tmp / "data", seed="false")
            model = f"custom/fake@{base}"
            with api_process(env, tmp / "api.log", "--no-worker") as api:
                for n in steps:
                    tag = f"capacity-{n}"
                    scenario, agents = await make_world(tag)
                    one = start_input(scenario, agents, model, maxTurns=turns, tag=tag)
                    step = await run_step(
                        api.url, env, tmp, n, [one] * episodes, tag, redis_pid, api.pid, client
                    )
                    report(step)
            info = await client.info("memory")
            print(f"Redis used_memory at the end: {int(info['used_memory']) / 2**20:.1f} MiB")


if __name__ == "__main__":
    run_main(main, __doc__)
