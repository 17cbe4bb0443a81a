"""Export and import in constant memory: `parley export` and `parley import` on 10,000 and
100,000 stored episodes.

Run: python -m bench.bench_export [--sizes SMALL LARGE] [--repeat 3]
Starts an embedded Redis with the sample agents and scenarios and as many Parley-shaped
COMPLETED episodes as the large size (10 turns each, ~10 KB of JSON), the first SMALL of them
tagged `small`. For each size it runs `parley export --kind episodes` as a process (the small
one with `--tag small`) and prints its wall time and peak RSS (the kernel's VmHWM, read
every 20 ms), then imports that file into a second, empty embedded Redis with `parley import`
and prints the same. Medians over the repeats.
"""

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import redis.asyncio as redis

from bench.common import bench_redis
from bench.support.processes import parley_env
from parley.storage.embedded import EmbeddedRedis
from parley.storage.sample import sample_data
from parley.storage.sample import seed as seed_sample

TURNS = 10


def episode_doc(pk: str, tag: str, agents: list[dict[str, Any]], scenario: str) -> str:
    names = [f"{a['first_name']} {a['last_name']}" for a in agents]
    messages: list[list[list[str]]] = [
        [["Environment", n, f"\nHere is the context of this interaction for {n}.\n"] for n in names]
    ]
    turns = []
    for t in range(TURNS):
        speaker = t % 2
        line = f"Turn {t}: a sentence of about this length, said by {names[speaker]} to the other."
        messages[-1] += [
            [names[i], "Environment", f'said: "{line}"' if i == speaker else "did nothing"]
            for i in range(2)
        ]
        messages.append(
            [["Environment", n, f'Turn #{t}: {names[speaker]} said: "{line}"\n'] for n in names]
        )
        turns.append(
            {
                "turn": t,
                "agent_index": speaker,
                "agent_name": names[speaker],
                "action_type": "speak",
                "argument": line,
                "to": [],
                "sequence": t + 3,
                "at": 1_700_000_000.0 + t,
            }
        )
    dims = {"believability": 8.0, "goal": 6.0, "overall_score": 7.0}
    doc = {
        "pk": pk,
        "environment": scenario,
        "agents": [a["pk"] for a in agents],
        "tag": tag,
        "models": ["judge", "model-a", "model-b"],
        "messages": messages,
        "reasoning": "Both agents kept to their goals.",
        "rewards": [[7.0, dims], [7.0, dims]],
        "rewards_prompt": "",
        "status": "COMPLETED",
        "turns": turns,
        "progress": TURNS,
        "max_turns": TURNS,
        "created_at": 1_700_000_000.0,
        "experiment_id": "",
    }
    return json.dumps(doc)


async def fill(client: redis.Redis, sizes: list[int]) -> None:
    await seed_sample(client)
    data = sample_data()
    agents, scenarios = data["agents"], data["scenarios"]
    total = max(sizes)
    async with client.pipeline(transaction=False) as pipe:
        for i in range(total):
            tag = "small" if i < min(sizes) else "rest"
            pair = [agents[i % len(agents)], agents[(i + 1) % len(agents)]]
            scenario = scenarios[i % len(scenarios)]["pk"]
            key = f":sotopia.database.logs.EpisodeLog:bench{i:07d}"
            pipe.execute_command(
                "JSON.SET", key, "$", episode_doc(f"bench{i:07d}", tag, pair, scenario)
            )
            if i % 1000 == 999:
                await pipe.execute()
        await pipe.execute()


def measure(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(seconds, peak RSS in MiB) of one `parley` process."""
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "parley.graph.cli", *args], env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    peak = 0.0
    done = threading.Event()

    def watch() -> None:
        nonlocal peak
        status = Path(f"/proc/{process.pid}/status")
        while not done.is_set():
            try:
                for line in status.read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        peak = max(peak, int(line.split()[1]) / 1024)
            except (FileNotFoundError, ProcessLookupError):
                return
            time.sleep(0.02)

    watcher = threading.Thread(target=watch)
    watcher.start()
    _, err = process.communicate()
    done.set()
    watcher.join()
    elapsed = time.perf_counter() - started
    if process.returncode != 0:
        raise RuntimeError(f"parley {' '.join(args)} failed: {err.decode()[-2000:]}")
    return elapsed, peak


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs=2, default=[10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    sizes = sorted(options.sizes)
    async with bench_redis() as (url, tmp, client):
        started = time.perf_counter()
        await fill(client, sizes)
        print(f"stored {max(sizes)} episodes in {time.perf_counter() - started:.1f} s")
        env = parley_env(url, tmp)
        for n in sizes:
            exports, imports = [], []
            with tempfile.TemporaryDirectory(prefix="parley-export-") as work:
                out = Path(work) / "episodes.jsonl"
                for _ in range(options.repeat):
                    args = ["export", "--kind", "episodes", "-o", str(out)]
                    if n != max(sizes):
                        args += ["--tag", "small"]
                    exports.append(measure(args, env))
                lines = sum(1 for _ in out.open())
                if lines != n:
                    raise RuntimeError(f"exported {lines} episodes, not {n}")
                size_mb = out.stat().st_size / 2**20
                for _ in range(options.repeat):
                    target = EmbeddedRedis(Path(work) / "target")
                    target_url = await target.start()
                    try:
                        imports.append(measure(["import", str(out)], parley_env(target_url, tmp)))
                    finally:
                        await target.stop()
                        shutil.rmtree(Path(work) / "target")
            for name, runs in (("export", exports), ("import", imports)):
                seconds = statistics.median(r[0] for r in runs)
                peak = statistics.median(r[1] for r in runs)
                print(
                    f"{name} {lines} episodes ({size_mb:.0f} MiB of JSONL): "
                    f"{seconds:.1f} s ({lines / seconds:.0f}/s), peak RSS {peak:.0f} MiB "
                    f"(runs: {', '.join(f'{s:.1f} s / {p:.0f} MiB' for s, p in runs)})"
                )


if __name__ == "__main__":
    asyncio.run(main())
