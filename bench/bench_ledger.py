"""What the ledger of model calls costs: Redis memory per episode and worker CPU, with it and
without it, over the same batch of episodes against the fake LLM.

Run: python -m bench.bench_ledger [--episodes 20] [--turns 10] [--delay 0.05]
For each setting (PARLEY_MODEL_CALL_RETENTION_DAYS=0, then 30) it starts an embedded Redis, the
fake LLM (its own process), an API without a worker and one `parley worker`, runs the batch, and
prints the worker's and Redis's CPU seconds during it, Redis's `used_memory` growth per episode,
and, with the ledger, the MEMORY USAGE of its keys per episode, its calls and how many message
bodies it stored for how many references to them.
"""

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import redis.asyncio as redis

from bench.bench_worker_throughput import run_batch
from bench.common import bench_redis, cpu_seconds, run_main
from bench.support.fake_llm import fake_llm_process
from bench.support.processes import api_process, parley_env, worker_process
from bench.support.simulation import make_world, start_input
from parley.storage import keys
from parley.storage.embedded import free_port


async def ledger_bytes(client: redis.Redis) -> tuple[int, int, int, int]:
    """(bytes of every ledger key by MEMORY USAGE, calls, bodies stored, references to them)."""
    total = calls = bodies = references = 0
    async for key in client.scan_iter(match="parley:call*", count=1000):
        total += int(await client.memory_usage(key, samples=0) or 0)
        kind = await client.type(key)
        if kind == "stream":
            calls += int(await client.xlen(key))
        elif key.startswith(keys.CALL_BODY_PREFIX):
            bodies += 1
        elif kind == "set":
            references += int(await client.scard(key))
    return total, calls, bodies, references


async def used_memory(client: redis.Redis) -> int:
    info: Any = await client.info("memory")
    return int(info["used_memory"])


async def one_setting(days: str, episodes: int, turns: int, delay: float) -> dict[str, float | int]:
    async with bench_redis() as (redis_url, tmp, client):
        with fake_llm_process(free_port(), delay) as (base, _):
            models = tmp / "models.json"
            entry = {"name": "fake", "base_url": base, "model": "fake", "max_concurrency": 256}
            models.write_text(json.dumps({"models": [entry]}))
            scenario, agents = await make_world("bench-ledger")
            env = parley_env(
                redis_url,
                tmp / "data",
                seed="false",
                models_file=str(models),
                model_call_retention_days=days,
            )
            one = start_input(scenario, agents, "fake", maxTurns=turns)
            with (
                api_process(env, Path(tmp) / "api.log", "--no-worker") as api,
                worker_process(env, Path(tmp) / "worker.log", concurrency=episodes) as worker,
            ):
                await asyncio.sleep(1)
                await run_batch(api.url, [one], worker.pid)  # warm: the model's endpoint
                redis_pid = int((tmp / "redis.pid").read_text())
                memory = await used_memory(client)
                cpu = cpu_seconds(worker.pid), cpu_seconds(redis_pid)
                seconds, _ = await run_batch(api.url, [one] * episodes, worker.pid)
                worker_cpu = cpu_seconds(worker.pid) - cpu[0]
                redis_cpu = cpu_seconds(redis_pid) - cpu[1]
                grown = await used_memory(client) - memory
                total, calls, bodies, references = await ledger_bytes(client)
    return {
        "seconds": seconds,
        "worker_cpu": worker_cpu,
        "redis_cpu": redis_cpu,
        "memory": grown / episodes,
        "ledger": total / (episodes + 1),
        "calls": calls / (episodes + 1),
        "bodies": bodies,
        "references": references,
    }


async def main(
    episodes: int = 20,
    turns: Annotated[int, "maxTurns of each episode"] = 10,
    delay: Annotated[float, "seconds the fake LLM takes per answer"] = 0.05,
) -> None:
    off = await one_setting("0", episodes, turns, delay)
    on = await one_setting("30", episodes, turns, delay)
    print(f"{episodes} episodes of {turns} turns, 2 agents and a judge; fake LLM {delay}s")
    print(f"{'':28}{'ledger off':>14}{'ledger on':>14}")
    rows = [
        ("batch seconds", "seconds", "{:.2f}"),
        ("worker CPU seconds", "worker_cpu", "{:.2f}"),
        ("redis CPU seconds", "redis_cpu", "{:.2f}"),
        ("used_memory per episode KiB", "memory", "{:.1f}"),
    ]
    for label, key, form in rows:
        scale = 1024 if key == "memory" else 1
        print(f"{label:28}{form.format(off[key] / scale):>14}{form.format(on[key] / scale):>14}")
    print(
        f"ledger keys per episode: {on['ledger'] / 1024:.1f} KiB (MEMORY USAGE), "
        f"{on['calls']:.1f} calls"
    )
    print(
        f"bodies stored: {on['bodies']} for {on['references']} per-episode references "
        "(each body is counted once per episode that sends it)"
    )
    extra = on["worker_cpu"] - off["worker_cpu"]
    per_call = extra / max(on["calls"] * (episodes + 1), 1) * 1e6
    print(f"worker CPU the ledger added: {extra:+.2f} s ({per_call:+.0f} µs per call)")


if __name__ == "__main__":
    run_main(main, __doc__)
