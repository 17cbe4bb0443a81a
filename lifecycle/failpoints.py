"""Named points at which this process can be made to die, for tests of crash recovery.

`PARLEY_FAILPOINT=<name>` in the environment makes the process SIGKILL itself the first time
it reaches that point: no cleanup, no answer sent, exactly as a crash there would leave things.
Unset (always, outside such tests) a point costs one comparison.
"""

import os
import signal

ARMED = os.environ.get("PARLEY_FAILPOINT", "")


def reached(name: str) -> None:
    if name == ARMED:
        os.kill(os.getpid(), signal.SIGKILL)
