"""The commands' shared runner: Ctrl-C ends a command waiting on an idle server promptly, even
when the signal reaches another thread than the main one (the progress bar has one)."""

import subprocess
import sys

IDLE_COMMAND = """
import asyncio, signal, threading, time
from parley.client.command import run_command

started = threading.Event()

def elsewhere() -> None:
    started.set()
    time.sleep(60)

threading.Thread(target=elsewhere, daemon=True).start()

async def idle() -> int:
    started.wait()
    other = next(t for t in threading.enumerate() if t is not threading.main_thread())
    loop = asyncio.get_running_loop()
    loop.call_later(0.3, signal.pthread_kill, other.ident, signal.SIGINT)
    await asyncio.Event().wait()  # nothing is due: the loop sleeps until something wakes it
    return 0

try:
    run_command(idle())
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def test_ctrl_c_that_reaches_another_thread_still_ends_an_idle_command() -> None:
    done = subprocess.run(
        [sys.executable, "-c", IDLE_COMMAND], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0 and done.stdout == "interrupted\n", done
