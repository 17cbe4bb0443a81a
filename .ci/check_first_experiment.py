"""Check a first run on a busy machine: against the service the README's run command started in
a fresh clone, the example experiment (examples/experiments/design.toml: the embedded model, no
key) run with that clone's `parley experiment run`, then `parley experiment results`, with two
CPU-bound processes running beside it (started and stopped by pid). Fails unless every episode
is scored; prints how long it took.

    python .ci/check_first_experiment.py http://127.0.0.1:PORT PATH/TO/.venv/bin/parley

Run from the repository root with it on PYTHONPATH (it shares bench/bench_busy_laptop.py).
"""

import argparse
import sys
import time
from pathlib import Path

from bench.bench_busy_laptop import DESIGN, busy_run, machine


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Check the example experiment on a busy machine.")
    parser.add_argument("base_url")
    parser.add_argument("parley", help="the fresh clone's parley command")
    parser.add_argument("--design", type=Path, default=DESIGN)
    args = parser.parse_args(argv)
    began = time.monotonic()
    print(f"first experiment: {machine()}", flush=True)
    try:
        report = busy_run([args.parley], args.base_url.rstrip("/"), args.design, hogs=2)
    except (OSError, RuntimeError) as err:
        print(f"first experiment: FAILED: {err}", file=sys.stderr)
        return 1
    print("\n".join(f"first experiment: {line}" for line in "\n".join(report.lines()).splitlines()))
    took = time.monotonic() - began
    if not report.all_scored:
        print(
            f"first experiment: FAILED after {took:.0f} s: not every episode was scored",
            file=sys.stderr,
        )
        return 1
    print(f"first experiment: every episode scored, in {took:.0f} s beside two busy processes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
