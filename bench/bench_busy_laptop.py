"""The example experiment on the embedded model, on a busy machine: slower, never failed.

Run: python -m bench.bench_busy_laptop [--design examples/experiments/design.toml] [--hogs 2]
                                        [--url URL] [--parley PATH] [--keep DIR]

Without --url it starts `parley serve` as the README's run command leaves it (embedded Redis,
sample data, in-process worker, the embedded model), on a fresh data directory and a free port,
and stops it by pid at the end. Then it starts HOGS CPU-bound processes (a busy loop each), runs
`parley experiment run DESIGN` against the server to its end and `parley experiment results ID`,
and stops the busy processes by pid.

Prints the wall time of the run and, per episode, the seconds it waited for a worker, played its
turns and was judged (from its stored status history), its requests and timeouts, and its
overall scores; then the results table, and whether every episode was scored. The exit status
is 0 only when each one was. `.ci/check_first_experiment.py` runs the same against a fresh
clone's service.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from bench.support.processes import ApiProcess
from parley.core.processes import stop_process

DESIGN = Path(__file__).resolve().parent.parent / "examples" / "experiments" / "design.toml"
RUN_TIMEOUT = 1800.0
"""Seconds the run may take before it counts as stuck (it is stopped and the check fails)."""
EPISODES = """
query($id: ID!) {
  experiment(id: $id) {
    slotCount
    slots(first: 100) {
      nodes {
        episode {
          id status error judgeError progress { turn maxTurns }
          statusHistory { status at }
          rewards { overall }
          generationStats
        }
      }
    }
  }
}"""


@contextmanager
def cpu_hogs(count: int) -> Iterator[list[int]]:
    """`count` processes that each keep a core busy; stopped by pid when the block ends."""
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL)
        for _ in range(count)
    ]
    try:
        yield [hog.pid for hog in hogs]
    finally:
        for hog in hogs:
            stop_process(hog, 5)


@dataclass
class Episode:
    id: str
    status: str
    waited: float
    """Seconds from QUEUED to its first RUNNING."""
    turns: float
    """Seconds from its first RUNNING to its last EVALUATING."""
    judged: float
    """Seconds from its last EVALUATING to its end."""
    played: int
    overall: list[float | None]
    requests: int
    timeouts: int
    why_not: str | None
    """Why it has no scores (its error or its judge's), when it has none."""

    @property
    def scored(self) -> bool:
        return (
            self.status == "COMPLETED"
            and bool(self.overall)
            and all(o is not None for o in self.overall)
        )

    @classmethod
    def of(cls, found: dict[str, Any]) -> Episode:
        history = [
            (h["status"], datetime.fromisoformat(h["at"]).timestamp())
            for h in found["statusHistory"]
        ]
        first = {status: at for status, at in reversed(history)}
        last = dict(history)
        ended = history[-1][1]
        running = first.get("RUNNING", ended)
        evaluating = last.get("EVALUATING", ended)
        stats = found["generationStats"] or {}
        return cls(
            id=found["id"],
            status=found["status"],
            waited=running - first.get("QUEUED", running),
            turns=evaluating - running,
            judged=ended - evaluating,
            played=found["progress"]["turn"],
            overall=[r["overall"] for r in found["rewards"]],
            requests=int(stats.get("requests", 0)),
            timeouts=int(stats.get("timeouts", 0)),
            why_not=found["error"] or found["judgeError"],
        )


@dataclass
class Report:
    seconds: float
    exit_status: int
    slots: int
    episodes: list[Episode] = field(default_factory=list)
    groups: list[dict[str, Any]] = field(default_factory=list)
    table: str = ""

    @property
    def all_scored(self) -> bool:
        seats = sum(int(group["scored"]) for group in self.groups)
        apart = sum(
            int(group[k])
            for group in self.groups
            for k in ("failed", "cancelled", "unscored", "unfinished")
        )
        return (
            self.exit_status == 0
            and len(self.episodes) == self.slots > 0
            and all(e.scored for e in self.episodes)
            and seats == 2 * self.slots
            and apart == 0
        )

    def lines(self) -> list[str]:
        out = [f"experiment run: {self.seconds:.1f} s wall, exit status {self.exit_status}"]
        for e in self.episodes:
            scores = ", ".join("-" if o is None else f"{o:.2f}" for o in e.overall)
            out.append(
                f"  episode {e.id}: {e.status}, waited {e.waited:.1f} s, {e.played} turns in "
                f"{e.turns:.1f} s, judged in {e.judged:.1f} s; {e.requests} requests, "
                f"{e.timeouts} timed out; overall [{scores}]"
                + (f"; not scored: {e.why_not}" if not e.scored else "")
            )
        out.append(self.table.rstrip())
        scored = sum(e.scored for e in self.episodes)
        out.append(
            f"scored: {scored} of {self.slots} episodes"
            + (" (every one)" if self.all_scored else " - NOT every one")
        )
        return out


def parley_command(path: str | None) -> list[str]:
    """The `parley` to run: the one at `path`, or this checkout's."""
    return [path] if path else [sys.executable, "-m", "parley.graph.cli"]


def run_experiment(parley: list[str], url: str, design: Path) -> tuple[str, int, float]:
    """`parley experiment run DESIGN` to its end: (experiment id, exit status, seconds)."""
    began = time.monotonic()
    try:
        done = subprocess.run(
            [*parley, "experiment", "run", str(design), "--url", url],
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired as err:
        raise RuntimeError(f"the run did not end within {RUN_TIMEOUT:.0f} s: {err.output}") from err
    seconds = time.monotonic() - began
    for line in done.stdout.splitlines():
        if line.startswith("experiment ") and "queued now" in line:
            return line.split()[1], done.returncode, seconds
    raise RuntimeError(
        f"the run started no experiment ({done.returncode}):\n{done.stdout}{done.stderr}"
    )


def results(parley: list[str], url: str, experiment_id: str) -> tuple[str, list[dict[str, Any]]]:
    """The results table `parley experiment results` prints, and its groups as JSON."""
    base = [*parley, "experiment", "results", experiment_id, "--url", url]
    table = subprocess.run(base, capture_output=True, text=True, timeout=120, check=False)
    found = subprocess.run(
        [*base, "--json"], capture_output=True, text=True, timeout=120, check=False
    )
    try:
        groups: list[dict[str, Any]] = json.loads(found.stdout)
    except ValueError:
        groups = []
    return table.stdout + table.stderr, groups


def episodes(url: str, experiment_id: str) -> tuple[int, list[Episode]]:
    with httpx.Client(base_url=url, timeout=60) as http:
        response = http.post(
            "/graphql", json={"query": EPISODES, "variables": {"id": experiment_id}}
        )
    response.raise_for_status()
    experiment = response.json()["data"]["experiment"]
    found = [s["episode"] for s in experiment["slots"]["nodes"] if s["episode"]]
    return int(experiment["slotCount"]), [Episode.of(e) for e in found]


def busy_run(parley: list[str], url: str, design: Path = DESIGN, hogs: int = 2) -> Report:
    """The design run to its results with `hogs` CPU-bound processes beside it."""
    with cpu_hogs(hogs) as pids:
        print(f"{hogs} CPU-bound processes running: pids {pids}", flush=True)
        experiment_id, status, seconds = run_experiment(parley, url, design)
        table, groups = results(parley, url, experiment_id)
    slots, found = episodes(url, experiment_id)
    return Report(seconds, status, slots, found, groups, table)


def machine() -> str:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return f"{os.cpu_count()} cores, load average {load}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--design", type=Path, default=DESIGN)
    parser.add_argument("--hogs", type=int, default=2, help="CPU-bound processes beside it")
    parser.add_argument("--url", help="a running Parley (default: start one)")
    parser.add_argument("--parley", help="the parley command to run (default: this checkout's)")
    parser.add_argument("--keep", type=Path, help="data directory to use and keep")
    args = parser.parse_args()
    parley = parley_command(args.parley)
    print(f"machine before: {machine()}", flush=True)
    server: ApiProcess | None = None
    url = args.url
    if url is None:
        data_dir = args.keep or Path(tempfile.mkdtemp(prefix="parley-busy-"))
        env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL", "REDIS_OM_URL")}
        env["PARLEY_DATA_DIR"] = str(data_dir)
        server = ApiProcess(env, data_dir / "serve.log", seed=True)
        url = server.url
    try:
        report = busy_run(parley, url, args.design, args.hogs)
    finally:
        if server is not None:
            server.stop()
    print("\n".join(report.lines()))
    print(f"machine after: {machine()}")
    raise SystemExit(0 if report.all_scored else 1)


if __name__ == "__main__":
    main()
