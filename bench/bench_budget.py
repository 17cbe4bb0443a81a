"""Four workers on one rate-limited API key: throughput, 429s, the estimate and a budget.

Run: python -m bench.bench_budget [--per-minute 600] [--repeats 7] [--delay 0.05]

The fake OpenAI-compatible server (in this process, answering after `delay`) allows one API key
`per-minute` requests in any minute and answers 429 beyond. The models file gives the agent and
judge models that key, the same `requests_per_minute` and prices; an API with no worker and four
`parley worker` processes with no flags share one embedded Redis. Steps:

1. estimate: an experiment of `repeats` x 18 episodes (three scenarios and three pairs, each
   pair in each scenario, the agent model in both seat orders, four turns and a judge) is
   estimated with `--estimate`'s calls: nothing comparable is recorded, so a calibration run
   plays two episodes first;
2. run: the experiment runs; printed are the requests the fake served a minute in the steady
   state (from STEADY_AFTER seconds after the start to the last episode's end), the 429s it
   answered then and in all, and the cost spent against the estimate;
3. budget: the same design under another name with a budget of a third of what step 2 spent
   runs until it stops; printed are its stop, what it spent against its cap and what it held.
"""

import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import bench_redis, run_main
from bench.support.fake_llm import FakeLLM, RateLimit
from bench.support.processes import api_process, parley_env, worker_process
from bench.support.simulation import make_world, post

KEY_ENV = "BENCH_PROVIDER_KEY"
WORLDS = ("bb", "budget-world", "a-budget-world-of-long-names-for-longer-prompts")
"""Three scenarios, each with a pair of agents named after it: every pair meets in every
scenario, in both seat orders (18 episodes a repeat)."""
STEADY_AFTER = 15.0
"""Seconds after the start before the steady state is counted (workers warm, queue full)."""
PRICES = {"prompt_price": 2.5, "completion_price": 10.0}
CREATE = """
mutation($input: CreateExperimentInput!) {
  createExperiment(input: $input) { experiment { id slotCount } userErrors { message } }
}"""
RUN = """
mutation($id: ID!) { %s(input: {id: $id}) { changed userErrors { message } } }"""
STATE = """
query($id: ID!) {
  experiment(id: $id) {
    estimate { covered episodes comparable cost { expected low high } calls { expected } }
    progress { total pending unfinished finished held stopped completed failed }
  }
  usageTotals(filter: {experimentId: $id}) { episodes cost }
}"""


def models_file(path: Path, fake: FakeLLM, per_minute: int) -> Path:
    shared = {"base_url": fake.base_url, "api_key_env": KEY_ENV, **PRICES}
    entries = [
        {"name": name, "model": name, "requests_per_minute": per_minute, **shared}
        for name in ("agent", "judge")
    ]
    path.write_text(json.dumps({"models": entries}))
    return path


async def state(url: str, pk: str) -> dict[str, Any]:
    return await post(url, STATE, {"id": pk})


async def run(url: str, pk: str, mutation: str) -> int:
    found = (await post(url, RUN % mutation, {"id": pk}))[mutation]
    assert not found["userErrors"], found
    return int(found["changed"])


async def until_idle(url: str, pk: str, finished: bool = True) -> dict[str, Any]:
    """Poll until nothing is queued or running (and, with `finished`, every slot ended)."""
    while True:
        found = await state(url, pk)
        progress = found["experiment"]["progress"]
        idle = progress["unfinished"] <= progress["pending"]
        if (progress["finished"] if finished else idle) and idle:
            return found
        await asyncio.sleep(0.5)


async def create(url: str, name: str, design: dict[str, Any]) -> str:
    made = (await post(url, CREATE, {"input": {"name": name, "tag": name, "design": design}}))[
        "createExperiment"
    ]
    assert not made["userErrors"], made
    return str(made["experiment"]["id"])


def steady(fake: FakeLLM, since: float, until: float) -> tuple[float, int]:
    """Requests served a minute, and 429s answered, between two times."""
    answered = [r for r in fake.requests if since <= r.received <= until]
    served = sum(1 for r in answered if r.status == 200)
    refused = sum(1 for r in answered if r.status == 429)
    return served / (until - since) * 60, refused


async def main(per_minute: int = 600, repeats: int = 7, delay: float = 0.05) -> None:
    with tempfile.TemporaryDirectory(prefix="parley-bench-budget-") as tmp:
        work = Path(tmp)
        with FakeLLM(delay=delay, limit=RateLimit(per_minute=per_minute)) as fake:
            async with bench_redis(parent=work) as (redis_url, data, _):
                models = models_file(work / "models.json", fake, per_minute)
                env = {
                    **parley_env(redis_url, data / "parley", seed="false", models_file=str(models)),
                    KEY_ENV: "sk-bench",
                }
                scenarios, pairs = [], []
                for tag in WORLDS:  # names of other lengths: episodes of other sizes
                    scenario, agents = await make_world(tag)
                    scenarios.append(scenario)
                    pairs.append(agents)
                design = {
                    "scenarios": {"ids": scenarios},
                    "agents": {"pairs": pairs},
                    "models": {"compare": ["agent"], "partner": "agent"},
                    "repeats": repeats,
                    "maxTurns": 4,
                    "judgeModel": "judge",
                }
                with api_process(env, work / "api.log", "--no-worker") as api:
                    workers = [
                        worker_process(env, work / f"w{i}.log", concurrency=None) for i in range(4)
                    ]
                    for worker in workers:
                        worker.__enter__()
                    try:
                        await steps(api.url, fake, design, per_minute)
                    finally:
                        for worker in workers:
                            worker.__exit__(None, None, None)


async def steps(url: str, fake: FakeLLM, design: dict[str, Any], per_minute: int) -> None:
    pk = await create(url, "bench-budget-run", design)
    calibrated = await run(url, pk, "calibrateExperiment")
    await until_idle(url, pk, finished=False)
    estimate = (await state(url, pk))["experiment"]["estimate"]
    cost = estimate["cost"]
    print(
        f"estimate: {estimate['covered']}/{estimate['episodes']} episodes covered from "
        f"{estimate['comparable']} calibration episodes ({calibrated} queued): "
        f"${cost['expected']:.4f} (95% range {cost['low']:.4f} to {cost['high']:.4f}), "
        f"{estimate['calls']['expected']:.0f} calls"
    )
    began = time.time()
    await run(url, pk, "startExperiment")
    done = await until_idle(url, pk)
    ended = time.time()
    rate, refused = steady(fake, began + STEADY_AFTER, ended)
    total_refused = sum(1 for r in fake.requests if r.status == 429)
    spent = done["usageTotals"]["cost"]
    progress = done["experiment"]["progress"]
    print(
        f"run: {progress['completed']} completed, {progress['failed']} failed in "
        f"{ended - began:.1f} s; steady state {rate:.0f} requests a minute of {per_minute} "
        f"({rate / per_minute:.1%}), 429s {refused} (all told {total_refused})"
    )
    print(
        f"spent ${spent:.4f}; estimate ${cost['expected']:.4f} is "
        f"{(cost['expected'] - spent) / spent:+.1%} of it; in the 95% range: "
        f"{cost['low'] - 1e-9 <= spent <= cost['high'] + 1e-9}"
    )
    cap = round(spent / 3, 6)
    budgeted = await create(url, "bench-budget-capped", {**design, "budget": cap})
    await run(url, budgeted, "startExperiment")
    capped = await until_idle(url, budgeted)
    progress = capped["experiment"]["progress"]
    used = capped["usageTotals"]["cost"]
    print(
        f"budget ${cap:.4f}: stopped {progress['stopped']}, spent ${used:.4f} "
        f"({used / cap:.1%} of the cap), {progress['completed']} completed, "
        f"{progress['held']} held of {progress['total']}"
    )


if __name__ == "__main__":
    run_main(main, __doc__)
