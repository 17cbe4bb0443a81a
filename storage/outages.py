"""Which Redis errors are an outage (retry later) and which are a refusal of what was sent."""

import re

import redis.exceptions

from parley.storage.connection import IndexesRebuilding, missing_index

OUTAGES = (
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    redis.exceptions.MasterDownError,
)
"""What Redis raises while it is down, restarting or loading (BusyLoadingError is one), or
while a replica that serves no stale data has lost its master (MASTERDOWN)."""
REFUSED_WRITES = (redis.exceptions.OutOfMemoryError, redis.exceptions.ReadOnlyError)
"""What Redis answers a write while it is at `maxmemory` (OOM) or a read-only replica."""
REFUSED_FOR_NOW = re.compile(
    r"(Command # \d+ \(.*\) of pipeline caused error: \(['\"])?(MISCONF|BUSY) ", re.DOTALL
)
"""The errors of a command Redis refuses after a failed save (MISCONF) or while a script runs
past its time (BUSY); in a pipeline, redis-py puts which command it was first. redis-py has no
class of its own for either."""


def is_outage(error: BaseException | None) -> bool:
    """Whether Redis cannot serve the request now but may soon: it is unreachable, busy, it
    refuses writes (OOM, READONLY, or MISCONF: a failed save with stop-writes-on-bgsave-error),
    or it has lost Parley's indexes (restarted empty, or flushed), which are being made again
    (storage/connection.py). Such a refusal comes before the command runs, so a script or a
    transaction wrote nothing. Any other error Redis answers (a ResponseError) refuses what was
    sent, and would again."""
    if isinstance(error, (*OUTAGES, *REFUSED_WRITES, IndexesRebuilding)):
        return True
    if isinstance(error, redis.exceptions.ResponseError):
        return REFUSED_FOR_NOW.match(str(error)) is not None or missing_index(error)
    return False
