"""usageTotals over many stored episodes: one FT.AGGREGATE, by tag and by experiment.

Run: python -m bench.bench_usage_totals [--episodes 100000] [--repeat 50]
Stores N finished episodes (10 experiments under 2 tags, two models each, half of them
priced) in a fresh embedded Redis, waits for the index, then times `usage_totals` for a tag
(half the episodes), an experiment (a tenth) and everything.
"""

import asyncio
import json
import time

from bench.common import bench_redis, run_main, summary_ms
from parley.engine.usage import Prices, TokenCount
from parley.lifecycle.usage import usage_fields
from parley.resolvers.usage import usage_totals
from parley.storage.models import EpisodeLog

PRICES = {"agent": Prices(prompt=0.5, completion=2.0)}


def document(i: int) -> str:
    usage = {
        "agent": TokenCount(prompt_tokens=20_000 + i % 997, completion_tokens=800),
        "judge": TokenCount(prompt_tokens=3_000, completion_tokens=200, estimated=i % 7 == 0),
    }
    price_of = PRICES.get if i % 2 else {**PRICES, "judge": PRICES["agent"]}.get
    episode = EpisodeLog(
        pk=f"usage{i:08d}",
        environment="s",
        agents=["a", "b"],
        tag=f"usage-bench-{i % 2}",
        experiment_id=f"exp-{i % 10}",
        created_at=1_750_000_000.0 + i,
    )
    head = episode.model_dump_json(
        exclude={"usage", "prompt_tokens", "completion_tokens", "estimated_tokens", "cost"}
    )
    fields = ",".join(f'"{k}":{json.dumps(v)}' for k, v in usage_fields(usage, price_of).items())
    return head[:-1] + "," + fields + "}"


async def main(episodes: int = 100_000, repeat: int = 50) -> None:
    async with bench_redis() as (_, _, client):
        began = time.perf_counter()
        for start in range(0, episodes, 1000):
            async with client.pipeline(transaction=False) as pipe:
                for i in range(start, min(start + 1000, episodes)):
                    key = EpisodeLog.make_primary_key(f"usage{i:08d}")
                    pipe.execute_command("JSON.SET", key, "$", document(i))
                await pipe.execute()
        while True:
            info = await client.execute_command("FT.INFO", EpisodeLog.Meta.index_name)  # type: ignore[no-untyped-call]
            if int(info["num_docs"]) >= episodes and float(info["percent_indexed"]) >= 1:
                break
            await asyncio.sleep(0.2)
        print(f"{episodes} episodes stored and indexed in {time.perf_counter() - began:.1f} s")
        cases = {
            "a tag (1/2 of them)": ("usage-bench-1", None),
            "an experiment (1/10)": (None, "exp-3"),
            "everything": (None, None),
        }
        for name, (tag, experiment) in cases.items():
            times = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                totals = await usage_totals(tag=tag, experiment_id=experiment)
                times.append(time.perf_counter() - t0)
            print(f"{name}: {summary_ms(times)}  -> {totals}")


if __name__ == "__main__":
    run_main(main, __doc__)
