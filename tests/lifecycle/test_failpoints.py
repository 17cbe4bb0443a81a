"""A failpoint kills its process with SIGKILL where it is armed, and is passed by elsewhere."""

import os
import signal
import subprocess
import sys

PASS_TWO_POINTS = (
    "from parley.lifecycle import failpoints\n"
    "failpoints.reached('before-write'); print('passed before-write', flush=True)\n"
    "failpoints.reached('after-write'); print('passed after-write', flush=True)\n"
)


def run(armed: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PARLEY_FAILPOINT"}
    if armed is not None:
        env["PARLEY_FAILPOINT"] = armed
    return subprocess.run(
        [sys.executable, "-c", PASS_TWO_POINTS], env=env, capture_output=True, text=True, timeout=60
    )


def test_the_armed_point_kills_the_process_there() -> None:
    done = run("after-write")
    assert done.returncode == -signal.SIGKILL
    assert done.stdout == "passed before-write\n"


def test_unarmed_points_are_passed() -> None:
    done = run(None)
    assert done.returncode == 0
    assert done.stdout == "passed before-write\npassed after-write\n"
