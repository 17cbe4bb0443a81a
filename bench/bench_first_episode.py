"""A new user's first episodes: `parley serve` on its defaults, sample data, embedded model.

Run: python -m bench.bench_first_episode [--episodes 10] [--keep DIR]

Starts `parley serve` exactly as the README's run command leaves it (embedded Redis, sample data,
in-process worker, embedded model for agents and judge), with a fresh data directory and a free
port. Then, one after another, starts the default simulation (`startSimulation` with only a
scenario and two agents: default models, turn limit and order) on the sample scenarios, each with
an agent pair whose stored relationship matches the scenario's, and waits for COMPLETED.

Prints, per episode, seconds from the start request to COMPLETED (the first one includes starting
the embedded model) and how many of each agent's turns repeat one of that agent's earlier turns
word for word; then the totals.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from bench.support.processes import ApiProcess
from parley.storage.sample import sample_data

START = """
mutation($input: StartSimulationInput!) {
  startSimulation(input: $input) { episode { id status } userErrors { message } }
}"""
READ = """
query($id: ID!) {
  episode(id: $id) {
    status error progress { turn maxTurns } statusHistory { status at }
    turns { agentIndex speaker actionType argument }
    rewards { overall }
    generationStats
  }
}"""


def pairs_by_scenario() -> list[tuple[str, str, list[str]]]:
    """(codename, scenario id, agent ids) for each sample scenario and each matching pair."""
    data = sample_data()
    found = []
    for scenario in data["scenarios"]:
        for rel in data["relationships"]:
            if rel["relationship"] == scenario["relationship"]:
                found.append(
                    (scenario["codename"], scenario["pk"], [rel["agent_1_id"], rel["agent_2_id"]])
                )
    return found


def repeats(turns: list[dict[str, Any]]) -> dict[int, tuple[int, int]]:
    """Per seat: (turns that repeat an earlier turn of the same agent verbatim, turns)."""
    seen: dict[int, set[str]] = {}
    counts: dict[int, tuple[int, int]] = {}
    for turn in turns:
        seat, text = turn["agentIndex"], turn["argument"].strip()
        earlier = seen.setdefault(seat, set())
        repeated, total = counts.get(seat, (0, 0))
        counts[seat] = (repeated + (text in earlier and bool(text)), total + 1)
        earlier.add(text)
    return counts


def phases(history: list[dict[str, str]]) -> str:
    """Seconds spent in each status, from the stored status history."""
    times = [(h["status"], datetime.fromisoformat(h["at"]).timestamp()) for h in history]
    spans = [
        f"{status.lower()} {end - start:.1f} s"
        for (status, start), (_, end) in itertools.pairwise(times)
    ]
    return ", ".join(spans)


def graphql(http: httpx.Client, query: str, variables: dict[str, Any]) -> dict[str, Any]:
    response = http.post("/graphql", json={"query": query, "variables": variables})
    response.raise_for_status()
    body = response.json()
    assert "errors" not in body, body
    data: dict[str, Any] = body["data"]
    return data


def run_episode(
    http: httpx.Client, scenario: str, agents: list[str]
) -> tuple[float, dict[str, Any]]:
    t0 = time.perf_counter()
    started = graphql(http, START, {"input": {"scenarioId": scenario, "agentIds": agents}})
    payload = started["startSimulation"]
    assert not payload["userErrors"], payload
    episode_id = payload["episode"]["id"]
    while True:
        episode = graphql(http, READ, {"id": episode_id})["episode"]
        if episode["status"] in ("COMPLETED", "FAILED", "CANCELLED"):
            return time.perf_counter() - t0, episode
        time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=10)
    parser.add_argument("--keep", type=Path, help="data directory to use and keep")
    parser.add_argument("--transcripts", action="store_true", help="print every turn")
    args = parser.parse_args()
    data_dir = args.keep or Path(tempfile.mkdtemp(prefix="parley-first-"))
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "REDIS_OM_URL")}
    env["PARLEY_DATA_DIR"] = str(data_dir)
    process = ApiProcess(env, data_dir / "serve.log", seed=True)
    repeated_total = turns_total = 0
    seconds: list[float] = []
    try:
        with httpx.Client(base_url=process.url, timeout=60) as http:
            plan = itertools.islice(itertools.cycle(pairs_by_scenario()), args.episodes)
            for k, (codename, scenario, agents) in enumerate(plan):
                elapsed, episode = run_episode(http, scenario, agents)
                counts = repeats(episode["turns"])
                repeated = sum(r for r, _ in counts.values())
                total = sum(t for _, t in counts.values())
                repeated_total += repeated
                turns_total += total
                seconds.append(elapsed)
                per_seat = ", ".join(f"{r}/{t}" for _, (r, t) in sorted(counts.items()))
                stats = episode["generationStats"]
                print(
                    f"episode {k} {codename}: {episode['status']} in {elapsed:.1f} s "
                    f"({phases(episode['statusHistory'])}), "
                    f"{episode['progress']['turn']} turns, repeated {per_seat}, "
                    f"requests {stats.get('requests')}, repairs {stats.get('repairs')}, "
                    f"tokens {stats.get('prompt_tokens')}+{stats.get('completion_tokens')}, "
                    f"overall {[r['overall'] for r in episode['rewards']]}"
                    + (f", error {episode['error']}" if episode["error"] else ""),
                    flush=True,
                )
                if args.transcripts:
                    for turn in episode["turns"]:
                        print(f"    {turn['speaker']}: {json.dumps(turn['argument'])}")
    finally:
        process.stop()
    if seconds:
        warm = seconds[1:] or seconds
        print(
            f"first episode (cold, includes starting the model): {seconds[0]:.1f} s; "
            f"later episodes: median {sorted(warm)[len(warm) // 2]:.1f} s, max {max(warm):.1f} s"
        )
        print(
            f"turns repeating an earlier turn of the same agent: {repeated_total}/{turns_total} "
            f"({100 * repeated_total / max(turns_total, 1):.0f}%)"
        )


if __name__ == "__main__":
    main()
