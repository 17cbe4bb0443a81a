"""What only tests use: the in-process server, the browser driver, Sotopia records, fuzzing and
list helpers; what benchmarks use too is in bench/support."""

from pathlib import Path


def repo_root() -> Path:
    return Path(__file__).resolve().parents[2]
