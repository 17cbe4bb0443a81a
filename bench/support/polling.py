"""Waiting for what another process or task makes true, by asking again until it is."""

import asyncio
import time
from collections.abc import Awaitable, Callable


async def eventually[T](
    read: Callable[[], Awaitable[T]],
    done: Callable[[T], object] = bool,
    *,
    timeout: float = 60,
    interval: float = 0.1,
) -> T:
    """What `read` gives once `done` accepts it, read every `interval` seconds; an
    AssertionError with the last reading after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = await read()
        if done(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"still not so after {timeout} s: {value}")
        await asyncio.sleep(interval)


async def until(condition: Callable[[], object], timeout: float = 5) -> None:
    """Wait until `condition()` holds, a state another task sets (checked every 10 ms)."""

    async def read() -> object:
        return condition()

    await eventually(read, timeout=timeout, interval=0.01)
