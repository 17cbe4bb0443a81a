"""Stopping a child process: SIGTERM first, SIGKILL after the grace period."""

import signal
import subprocess
import sys

from parley.core.processes import stop_process

READY = "import signal, sys, time; {setup}; print('ready', flush=True); time.sleep(60)"


def child(setup: str) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [sys.executable, "-c", READY.format(setup=setup)], stdout=subprocess.PIPE
    )
    assert process.stdout is not None and process.stdout.readline() == b"ready\n"
    return process


def test_a_child_that_heeds_sigterm_exits_by_it() -> None:
    assert stop_process(child("pass")) == -signal.SIGTERM


def test_a_child_that_ignores_sigterm_is_killed_after_the_grace() -> None:
    process = child("signal.signal(signal.SIGTERM, signal.SIG_IGN)")
    assert stop_process(process, grace=0.5) == -signal.SIGKILL


def test_a_child_that_has_exited_keeps_its_exit_code() -> None:
    process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    process.wait()
    assert stop_process(process) == 3
