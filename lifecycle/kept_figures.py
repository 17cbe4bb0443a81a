"""Agreement figures, computed once for each set of tables they come from.

The bootstraps of hundreds of episodes take a second or more of CPU, and a study page asks again
on every change of its progress, so the figures are kept, in the process, by what they are of (a
study, a choice of episodes and evaluations), with the version of their inputs they were read
at (a few counters that every change of a rating, a score or a choice's episodes raises: one
round trip) and a digest of the tables they were computed from. Asked at the same version, the
kept figures are the answer and nothing is read; at another, the tables are read again, and
only tables that differ are computed again.

Each key has at most one task at a time, which reads and computes; requests for that key at
its version wait for it (a request given up leaves it running for the next), and at most
`parallel` computations run at once in the process, off the event loop.
"""

import asyncio
import hashlib
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

KEPT = 64
"""Keys whose last figures are kept (least recently asked for first out)."""
PARALLEL = 1
"""Computations at once in a process: each keeps a core busy."""


@dataclass(frozen=True)
class _Kept:
    version: str
    digest: str
    figures: list[Any]


@dataclass
class _Run:
    """The task of a key at one version: reading its tables and, if they changed, computing."""

    version: str
    task: "asyncio.Task[list[Any]]" = field(init=False)
    waiters: int = 0
    started: bool = False
    """Its thread runs: it cannot be stopped, so it is seen through."""


class KeptFigures:
    """Figures by key, kept while the version of their inputs is unchanged."""

    def __init__(self, kept: int = KEPT, parallel: int = PARALLEL) -> None:
        self._kept: OrderedDict[str, _Kept] = OrderedDict()
        self._limit = kept
        self._slots = asyncio.Semaphore(parallel)
        self._runs: dict[str, _Run] = {}
        self.computed = 0
        """Computations made (the others were answered from what is kept)."""
        self.read = 0
        """Times tables were read (the others were answered by the version alone)."""

    async def of[T, R](
        self,
        key: str,
        version: str,
        read: Callable[[], Awaitable[Sequence[T]]],
        compute: Callable[[T], R],
    ) -> list[R]:
        """`compute` of each table that `read` gives; the kept figures, read from nothing, if
        `key`'s last ones are of `version`. `version` must be read before the tables, and
        change with anything they hold. A table's repr must hold everything `compute` reads (a
        dataclass of lists of numbers and names does: a float's repr is exact)."""
        while True:
            held = self._kept.get(key)
            if held is not None and held.version == version:
                self._kept.move_to_end(key)
                found: list[R] = held.figures
                return found
            run = self._runs.get(key)
            if run is None:
                run = self._runs[key] = _Run(version)
                run.task = asyncio.ensure_future(self._run(key, run, read, compute))
                break
            if run.version == version:
                break
            await asyncio.wait([run.task])  # one task of a key at a time
        # A caller that goes away leaves a computation whose thread runs to the next caller (a
        # thread cannot be stopped: none is started beside it); one that has not started yet
        # is dropped when nobody waits for it any more.
        run.waiters += 1
        try:
            figures: list[R] = await asyncio.shield(run.task)
        except asyncio.CancelledError:
            if run.waiters == 1 and not run.started:
                self._forget(key, run)
                run.task.cancel()
            raise
        finally:
            run.waiters -= 1
        return figures

    def _forget(self, key: str, run: _Run) -> None:
        if self._runs.get(key) is run:
            del self._runs[key]

    async def _run[T, R](
        self,
        key: str,
        run: _Run,
        read: Callable[[], Awaitable[Sequence[T]]],
        compute: Callable[[T], R],
    ) -> list[R]:
        try:
            tables = await read()
            self.read += 1
            digest = hashlib.sha256(repr(list(tables)).encode("utf-8")).hexdigest()
            held = self._kept.get(key)
            if held is not None and held.digest == digest:
                figures: list[R] = held.figures
            else:
                async with self._slots:
                    run.started = True
                    work = asyncio.to_thread(lambda: [compute(table) for table in tables])
                    figures = await asyncio.shield(work)
                self.computed += 1
            self._kept[key] = _Kept(run.version, digest, figures)
            self._kept.move_to_end(key)
            while len(self._kept) > self._limit:
                self._kept.popitem(last=False)
            return figures
        finally:
            self._forget(key, run)
