"""Stopping a child process we started: the one place that does terminate, wait, kill."""

import subprocess


def stop_process(process: subprocess.Popen[bytes], grace: float = 5.0) -> int:
    """SIGTERM (a clean exit: flushed files, freed ports), SIGKILL if it has not exited after
    `grace` seconds; returns the exit code. Blocks: async callers run it in a thread."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode
