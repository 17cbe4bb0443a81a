"""Grouped results over 100,000 stored episodes, over HTTP.

Run: python -m bench.bench_results [--episodes N] [--repeat N] [--write-only]
First writes 20,000 episodes into a database without the results indexes and into one with
them (the cost they add to every write, and their memory).
Writes N episodes (pipelined JSON.SET) into an embedded Redis, shaped like benchmark runs: 50
experiments of 2,000 episodes, each comparing two of 8 models against one partner model in both
seats over 20 of 90 scenarios (5 agent pairs per scenario); a tag per 10 experiments; half
written as Sotopia writes them (no status), half as Parley does; 3% FAILED, 1% CANCELLED, 1%
with Sotopia's bare 0.0 reward. Starts one `parley serve --no-worker` and prints p50/p99 of
`episodeResults` and `modelComparison` queries, whole database and one experiment.
"""

import json
import random
import time
from pathlib import Path
from typing import Annotated, Any

import httpx

from bench.common import bench_redis, percentile, run_main
from bench.support.processes import api_process, parley_env
from parley.engine.types import SOTOPIA_DIMENSIONS
from parley.storage import keys

PREFIX = f":{keys.SOTOPIA_LOGS_MODULE}.EpisodeLog:"
MODELS = [f"model-{i}" for i in range(8)]
PARTNER = "partner-model"
SCENARIOS = [f"scenario-{i:02d}" for i in range(90)]
PER_EXPERIMENT = 2_000

RESULTS = """query($filter: EpisodeResultsFilter, $groupBy: [ResultsGroupBy!]) {
  episodeResults(filter: $filter, groupBy: $groupBy) {
    groups { model partnerModel seat scenarioId agentId scored failed cancelled unscored unfinished
      dimensions { dimension count mean sd confidenceInterval { low high margin } sotopiaMargin }
    }
  }
}"""
PLAIN = """query($filter: EpisodeResultsFilter, $groupBy: [ResultsGroupBy!]) {
  episodeResults(filter: $filter, groupBy: $groupBy) {
    groups { model partnerModel seat scored failed cancelled unscored unfinished
      dimensions { dimension count mean sd confidenceInterval { low high margin } }
    }
  }
}"""
"""Without sotopiaMargin: Redis need not keep the scores apart per scenario."""
COMPARE = """query($filter: EpisodeResultsFilter, $a: String!, $b: String!) {
  modelComparison(filter: $filter, modelA: $a, modelB: $b) {
    dimensions { dimension pairs meanDifference confidenceInterval { low high } }
  }
}"""


def reward(rng: random.Random) -> list[Any]:
    scores = {d.name: float(rng.randint(d.range_low, d.range_high)) for d in SOTOPIA_DIMENSIONS}
    overall = sum(scores.values()) / len(scores)
    return [overall, {**scores, "overall_score": overall}]


def episode(i: int, rng: random.Random) -> dict[str, Any]:
    experiment = i // PER_EXPERIMENT
    pick = random.Random(experiment)
    tested = pick.sample(MODELS, 2)
    scenarios = pick.sample(SCENARIOS, 20)
    scenario = rng.choice(scenarios)
    pair = rng.randrange(5)
    model = rng.choice(tested)
    seats = [model, PARTNER] if rng.random() < 0.5 else [PARTNER, model]
    doc: dict[str, Any] = {
        "pk": f"bench{i:07d}",
        "environment": scenario,
        "agents": [f"{scenario}-agent-{pair}-a", f"{scenario}-agent-{pair}-b"],
        "tag": f"bench-tag-{experiment // 10}",
        "models": ["judge-model", *seats],
        "messages": [],
        "reasoning": "",
        "rewards": [reward(rng), reward(rng)],
        "rewards_prompt": "",
    }
    roll = rng.random()
    if i % 2:
        doc.update(status="COMPLETED", experiment_id=f"experiment-{experiment:02d}")
        if roll < 0.03:
            doc.update(status="FAILED", rewards=[])
        elif roll < 0.04:
            doc.update(status="CANCELLED", rewards=[])
    if 0.04 <= roll < 0.05:
        doc["rewards"] = [0.0, 0.0]
    return doc


async def write(client: Any, n: int) -> float:
    rng = random.Random(13)
    began = time.perf_counter()
    for start in range(0, n, 2_000):
        async with client.pipeline(transaction=False) as pipe:
            for i in range(start, min(n, start + 2_000)):
                doc = episode(i, rng)
                pipe.execute_command("JSON.SET", PREFIX + doc["pk"], "$", json.dumps(doc))
            await pipe.execute()
    return time.perf_counter() - began


def seats_counted(body: dict[str, Any]) -> int:
    """Every episode seat a whole-database answer accounts for (scored or counted apart)."""
    fields = ("scored", "failed", "cancelled", "unscored", "unfinished")
    return sum(g[f] for g in body["data"]["episodeResults"]["groups"] for f in fields)


async def timed(
    http: httpx.AsyncClient, query: str, variables: dict[str, Any], n: int
) -> tuple[list[float], int, dict[str, Any]]:
    times = []
    size = 0
    body: dict[str, Any] = {}
    for _ in range(n):
        began = time.perf_counter()
        response = await http.post("/graphql", json={"query": query, "variables": variables})
        times.append(time.perf_counter() - began)
        body = response.json()
        assert response.status_code == 200 and "errors" not in body, response.text[:500]
        size = len(response.content)
    return times, size, body


CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("all episodes, by MODEL", RESULTS, {"groupBy": ["MODEL"]}),
    ("all episodes, by MODEL, no Sotopia margin", PLAIN, {"groupBy": ["MODEL"]}),
    ("all episodes, by MODEL, SEAT", RESULTS, {"groupBy": ["MODEL", "SEAT"]}),
    ("all episodes, by MODEL, PARTNER_MODEL", RESULTS, {"groupBy": ["MODEL", "PARTNER_MODEL"]}),
    ("one tag (20,000), by MODEL", RESULTS, {"filter": {"tag": "bench-tag-2"}}),
    ("one tag, by MODEL, no Sotopia margin", PLAIN, {"filter": {"tag": "bench-tag-2"}}),
    (
        "one experiment, by MODEL",
        RESULTS,
        {"filter": {"experimentId": "experiment-07"}, "groupBy": ["MODEL"]},
    ),
    (
        "one experiment, by MODEL, SCENARIO",
        RESULTS,
        {"filter": {"experimentId": "experiment-07"}, "groupBy": ["MODEL", "SCENARIO"]},
    ),
    (
        "one experiment, by MODEL, AGENT",
        RESULTS,
        {"filter": {"experimentId": "experiment-07"}, "groupBy": ["MODEL", "AGENT"]},
    ),
    ("all episodes, by MODEL, SCENARIO", RESULTS, {"groupBy": ["MODEL", "SCENARIO"]}),
    ("all episodes, by AGENT", RESULTS, {"groupBy": ["AGENT"]}),
]


async def write_cost(n: int) -> None:
    """Seconds to write `n` episodes without the results indexes, then with them (fresh
    databases), and the memory the results index takes."""
    for with_index in (False, True):
        async with bench_redis() as (_, _, client):
            if not with_index:
                for name in (keys.RESULTS_INDEX, keys.EVALUATIONS_INDEX):
                    await client.execute_command("FT.DROPINDEX", name)  # type: ignore[no-untyped-call]
            seconds = await write(client, n)
            label = "with" if with_index else "without"
            print(f"wrote {n} episodes {label} the results indexes in {seconds:.2f} s")
            if with_index:
                info = await client.execute_command("FT.INFO", keys.RESULTS_INDEX)  # type: ignore[no-untyped-call]
                total = float(info["total_index_memory_sz_mb"])
                sortable = float(info["sortable_values_size_mb"])
                print(
                    f"results index memory for {n} episodes: {total:.1f} MiB "
                    f"({sortable:.1f} MiB of it sortable values)"
                )


async def main(
    episodes: int = 100_000,
    repeat: int = 100,
    write_only: Annotated[bool, "only the cost of writing"] = False,
) -> None:
    await write_cost(20_000)
    if write_only:
        return
    async with bench_redis() as (redis_url, tmp, client):
        seconds = await write(client, episodes)
        print(f"wrote {episodes} episodes in {seconds:.1f} s (pipelined JSON.SET, indexed)")
        env = parley_env(redis_url, tmp / "data", seed="false")
        with api_process(env, Path(tmp) / "api.log", "--no-worker") as api:
            async with httpx.AsyncClient(base_url=api.url, timeout=60) as http:
                tested = random.Random(7).sample(MODELS, 2)
                cases = [
                    *CASES,
                    (
                        "one experiment, modelComparison",
                        COMPARE,
                        {
                            "filter": {"experimentId": "experiment-07"},
                            "a": tested[0],
                            "b": tested[1],
                        },
                    ),
                ]
                print(f"{repeat} requests each (after 3 to warm up)         p50 ms   p99 ms  bytes")
                for label, query, variables in cases:
                    await timed(http, query, variables, 3)
                    times, size, body = await timed(http, query, variables, repeat)
                    if label.startswith("all episodes"):  # nothing cut short by a time limit
                        assert seats_counted(body) == 2 * episodes, seats_counted(body)
                    ms = [t * 1000 for t in times]
                    p50, p99 = percentile(ms, 50), percentile(ms, 99)
                    print(f"  {label:45} {p50:7.1f}  {p99:7.1f}  {size:6d}")


if __name__ == "__main__":
    run_main(main, __doc__)
