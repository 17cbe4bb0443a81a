"""One worker process running many episodes at once, against a fake LLM that answers in 200 ms.

Run: python -m bench.bench_worker_throughput [--episodes 200] [--turns 10] [--delay 0.2]
Starts an embedded Redis, the fake LLM (its own process), an API without a worker (to queue the
episodes with one startSimulations call) and one `parley worker --concurrency N`. It times one
episode alone, then N at once, and prints the ratio, the worker's memory, and the share of time
the worker's CPU was busy.
"""

import asyncio
import json
import time
from pathlib import Path
from typing import Annotated

from bench.common import bench_redis, cpu_seconds, rss_mib, run_main
from bench.support.fake_llm import fake_llm_process
from bench.support.processes import api_process, parley_env, worker_process
from bench.support.simulation import make_world, post, start_input
from parley.storage.embedded import free_port
from parley.storage.models import EpisodeLog, EpisodeStatus

BATCH = """
mutation($inputs: [StartSimulationInput!]!) {
  startSimulations(inputs: $inputs) { episodes { id } userErrors { message } }
}"""


async def run_batch(
    api_url: str, inputs: list[dict[str, object]], worker_pid: int
) -> tuple[float, float]:
    """Seconds until every episode COMPLETED, and the worker's peak RSS (MiB) meanwhile."""
    completed = EpisodeLog.find(EpisodeLog.status == EpisodeStatus.COMPLETED)
    before = await completed.count()
    began = time.perf_counter()
    made = (await post(api_url, BATCH, {"inputs": inputs}))["startSimulations"]
    assert not made["userErrors"], made
    ids = [e["id"] for e in made["episodes"]]
    peak = 0.0
    while True:
        peak = max(peak, rss_mib(worker_pid))
        done = await completed.count()
        failed = await EpisodeLog.find(EpisodeLog.status == EpisodeStatus.FAILED).count()
        if failed:
            raise RuntimeError(f"{failed} episodes failed")
        if done >= before + len(ids):
            return time.perf_counter() - began, peak
        await asyncio.sleep(0.05)


async def main(
    episodes: int = 200,
    turns: Annotated[int, "maxTurns (the API default)"] = 20,
    delay: float = 0.2,
) -> None:
    async with bench_redis() as (redis_url, tmp, _):
        with fake_llm_process(free_port(), delay) as (base, fake_pid):
            models = tmp / "models.json"
            models.write_text(
                json.dumps(
                    {
                        "models": [
                            {
                                "name": "fake",
                                "base_url": base,
                                "model": "fake",
                                "max_concurrency": 4 * episodes,
                            }
                        ]
                    }
                )
            )
            scenario, agents = await make_world("bench")
            env = parley_env(redis_url, tmp / "data", seed="false", models_file=str(models))
            one = start_input(scenario, agents, "fake", maxTurns=turns)
            with (
                api_process(env, Path(tmp) / "api.log", "--no-worker") as api,
                worker_process(env, Path(tmp) / "worker.log", concurrency=episodes) as worker,
            ):
                await asyncio.sleep(1)
                idle = rss_mib(worker.pid)
                single, _ = await run_batch(api.url, [one], worker.pid)
                redis_pid = int((tmp / "redis.pid").read_text())
                pids = {"worker": worker.pid, "fake LLM": fake_pid, "redis": redis_pid}
                before = {name: cpu_seconds(pid) for name, pid in pids.items()}
                many, peak = await run_batch(api.url, [one] * episodes, worker.pid)
                cpu = {name: cpu_seconds(pid) - before[name] for name, pid in pids.items()}
    print(f"fake LLM delay {delay * 1000:.0f} ms, {turns} turns per episode, 2 agents, judge")
    print(f"one episode alone:        {single:.2f} s")
    print(f"{episodes} episodes at once:    {many:.2f} s  (ratio {many / single:.2f}x)")
    for name, seconds in cpu.items():
        share = seconds / many * 100
        print(f"{name} CPU during the batch: {seconds:.2f} s ({share:.0f}% of one core)")
    print(
        f"worker RSS idle {idle:.1f} MiB, peak {peak:.1f} MiB: "
        f"{(peak - idle) * 1024 / episodes:.0f} KiB per running episode"
    )


if __name__ == "__main__":
    run_main(main, __doc__)
