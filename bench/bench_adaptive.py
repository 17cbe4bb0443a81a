"""Adaptive model concurrency: default settings against one episode, and runs under a rate limit.

Run: python -m bench.bench_adaptive [--episodes 200] [--turns 20] [--delay 0.2]
         [--in-flight 40] [--per-second 200] [--parts defaults,in-flight,per-second]

Every run starts an embedded Redis, an API without a worker (to queue the batch with one
startSimulations call), the fake LLM in its own process and a fresh `parley worker` with no
concurrency flag.

- defaults: the model `custom/fake@<url>` (no models file, so every limit is a default); one
  episode alone, then the batch, and the ratio.
- in-flight: the fake answers 429 (without Retry-After) to more than N requests at once.
- per-second: the fake answers 429 beyond N requests in any second, with the Retry-After that
  lets the next one in.
Under a limit the batch runs twice: with the default adaptive limit, and with a fixed limit
(min_concurrency = max_concurrency in the models file) tuned to the fake's limit, the best fixed
choice for one who knows it. Each prints the time, the throughput, the 429s and, sampled from the
fake, the requests it had in flight over time (the trace).
"""

import argparse
import asyncio
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench.common import bench_redis, cpu_seconds
from bench.support.fake_llm import RateLimit, fake_llm_process
from bench.support.processes import api_process, parley_env, worker_process
from bench.support.simulation import make_world, post, start_input
from parley.storage.embedded import free_port
from parley.storage.models import EpisodeLog, EpisodeStatus

BATCH = """
mutation($inputs: [StartSimulationInput!]!) {
  startSimulations(inputs: $inputs) { episodes { id } userErrors { message } }
}"""
SAMPLE_SECONDS = 0.25


@dataclass
class Run:
    seconds: float = 0.0
    completed: int = 0
    failed: int = 0
    served: int = 0
    rejected: int = 0
    worker_cpu: float = 0.0
    trace: list[tuple[float, int]] = field(default_factory=list)


async def fake_stats(client: httpx.AsyncClient, base: str) -> dict[str, int]:
    response = await client.get(base.removesuffix("/v1") + "/_fake/stats")
    stats: dict[str, int] = response.json()
    return stats


async def run_batch(
    api_url: str, base: str, inputs: list[dict[str, object]], worker_pid: int
) -> Run:
    """Queue the batch, wait until every episode has ended, sampling the fake meanwhile."""
    run = Run()
    cpu = cpu_seconds(worker_pid)
    async with httpx.AsyncClient(timeout=10) as client:
        before = await fake_stats(client, base)
        began = time.perf_counter()
        made = (await post(api_url, BATCH, {"inputs": inputs}))["startSimulations"]
        assert not made["userErrors"], made
        ids = {e["id"] for e in made["episodes"]}
        while True:
            stats = await fake_stats(client, base)
            run.trace.append((time.perf_counter() - began, stats["in_flight"]))
            ended = await EpisodeLog.find(
                EpisodeLog.status << [EpisodeStatus.COMPLETED, EpisodeStatus.FAILED]  # type: ignore[operator]
            ).all()
            mine = [e for e in ended if e.pk in ids]
            if len(mine) == len(ids):
                run.seconds = time.perf_counter() - began
                run.completed = sum(e.status == EpisodeStatus.COMPLETED for e in mine)
                run.failed = len(mine) - run.completed
                break
            await asyncio.sleep(SAMPLE_SECONDS)
        after = await fake_stats(client, base)
    run.worker_cpu = cpu_seconds(worker_pid) - cpu
    run.served = after["served"] - before["served"]
    run.rejected = after["rejected"] - before["rejected"]
    return run


async def with_worker(
    delay: float, limit: RateLimit, entry: dict[str, object] | None, batches: list[int], turns: int
) -> list[Run]:
    """Fresh Redis, fake, API and default worker; run each batch size in turn."""
    async with bench_redis() as (redis_url, tmp, _):
        with fake_llm_process(free_port(), delay, limit=limit) as (base, _):
            settings = {"seed": "false"}
            model = f"custom/fake@{base}"
            if entry is not None:
                models = tmp / "models.json"
                body = {"name": "fake", "base_url": base, "model": "fake", **entry}
                models.write_text(json.dumps({"models": [body]}))
                settings["models_file"] = str(models)
                model = "fake"
            scenario, agents = await make_world("bench")
            env = parley_env(redis_url, tmp / "data", **settings)
            one = start_input(scenario, agents, model, maxTurns=turns)
            with (
                api_process(env, Path(tmp) / "api.log", "--no-worker") as api,
                worker_process(env, Path(tmp) / "worker.log", concurrency=None) as worker,
            ):
                await asyncio.sleep(1)
                return [await run_batch(api.url, base, [one] * n, worker.pid) for n in batches]


def trace_lines(trace: list[tuple[float, int]], points: int = 40, width: int = 10) -> list[str]:
    """About `points` samples of the trace, `width` to a line."""
    picked: list[str] = []
    every = trace[-1][0] / points if trace else 1.0
    next_at = 0.0
    for at, in_flight in trace:
        if at >= next_at:
            picked.append(f"{at:5.1f}s {in_flight:3d}")
            next_at = at + every
    return ["  " + " | ".join(picked[i : i + width]) for i in range(0, len(picked), width)]


def report(name: str, run: Run) -> None:
    rate = run.served / run.seconds if run.seconds else 0.0
    print(
        f"{name}: {run.seconds:.2f} s, {run.completed} completed, {run.failed} failed, "
        f"{run.served} calls served ({rate:.0f}/s), {run.rejected} answered 429, "
        f"worker CPU {run.worker_cpu:.2f} s"
    )
    peak = max((n for _, n in run.trace), default=0)
    mean = sum(n for _, n in run.trace) / len(run.trace) if run.trace else 0.0
    print(f"  requests in flight at the fake: mean {mean:.1f}, peak of samples {peak}")
    for line in trace_lines(run.trace):
        print(line)


async def main(opts: argparse.Namespace) -> None:
    parts = opts.parts.split(",")
    print(f"fake LLM delay {opts.delay * 1000:.0f} ms, {opts.turns} turns, 2 agents, judge")
    if "defaults" in parts:
        single, many = await with_worker(
            opts.delay, RateLimit(), None, [1, opts.episodes], opts.turns
        )
        print("== default settings (no models file, no --concurrency)")
        print(f"one episode alone:     {single.seconds:.2f} s")
        print(
            f"{opts.episodes} episodes at once: {many.seconds:.2f} s "
            f"(ratio {many.seconds / single.seconds:.2f}x), {many.failed} failed"
        )
        report("batch", many)
        if opts.fixed:
            entry = {"max_concurrency": opts.fixed, "min_concurrency": opts.fixed}
            single, many = await with_worker(
                opts.delay, RateLimit(), entry, [1, opts.episodes], opts.turns
            )
            print(f"== for comparison: a fixed limit of {opts.fixed} in a models file")
            print(f"one episode alone:     {single.seconds:.2f} s")
            print(
                f"{opts.episodes} episodes at once: {many.seconds:.2f} s "
                f"(ratio {many.seconds / single.seconds:.2f}x)"
            )
            report("batch", many)
    limits = {
        "in-flight": (RateLimit(in_flight=opts.in_flight), opts.in_flight),
        "per-second": (
            RateLimit(per_second=opts.per_second),
            max(1, round(opts.per_second * opts.delay)),
        ),
    }
    for part, (limit, tuned) in limits.items():
        if part not in parts:
            continue
        what = (
            f"at most {limit.in_flight} at once, 429 without Retry-After"
            if limit.in_flight is not None
            else f"at most {limit.per_second} per second, 429 with Retry-After"
        )
        print(f"== rate limit: {what}; {opts.episodes} episodes")
        (adaptive,) = await with_worker(opts.delay, limit, None, [opts.episodes], opts.turns)
        report("adaptive (defaults)", adaptive)
        fixed_entry = {"max_concurrency": tuned, "min_concurrency": tuned}
        (fixed,) = await with_worker(opts.delay, limit, fixed_entry, [opts.episodes], opts.turns)
        report(f"fixed limit {tuned} (tuned to the fake)", fixed)
        print(f"adaptive / fixed time: {adaptive.seconds / fixed.seconds:.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--turns", type=int, default=20, help="maxTurns (the API default)")
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--in-flight", type=int, default=40)
    parser.add_argument("--per-second", type=int, default=200)
    parser.add_argument("--parts", default="defaults,in-flight,per-second")
    parser.add_argument(
        "--fixed", type=int, default=0, help="also run the defaults part with this fixed limit"
    )
    asyncio.run(main(parser.parse_args()))
