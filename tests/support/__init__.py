"""What tests and benchmarks share: fakes, servers, processes, setups and browsers."""

from pathlib import Path


def repo_root() -> Path:
    return Path(__file__).resolve().parents[2]
