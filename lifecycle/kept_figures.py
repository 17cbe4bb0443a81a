"""Agreement figures, computed once for each set of tables they come from.

The bootstraps of hundreds of episodes take a second or more of CPU, and a study page asks again
on every change of its progress, so the figures are kept, in the process, by what they are of (a
study, a choice of episodes and evaluations), with a digest of the tables they were computed
from: the same tables are answered from what is kept, any changed rating or score makes new
ones. Requests for one key wait for the one computation under way instead of starting their
own (a request given up leaves it running for the next), and at most `parallel` computations
run at once in the process, off the event loop.
"""

import asyncio
import hashlib
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

KEPT = 64
"""Keys whose last figures are kept (least recently asked for first out)."""
PARALLEL = 1
"""Computations at once in a process: each keeps a core busy."""


@dataclass
class _Run:
    """A computation of a key's figures, under way or waiting for a slot."""

    digest: str
    """Of the tables it computes from."""
    task: "asyncio.Future[list[Any]]"
    waiters: int = 0
    started: bool = False
    """Its thread runs: it cannot be stopped, so it is seen through."""
    dropped: bool = False
    """Cancelled before it started, nobody waiting for it any more."""


class KeptFigures:
    """Figures by key, kept while their tables are unchanged."""

    def __init__(self, kept: int = KEPT, parallel: int = PARALLEL) -> None:
        self._kept: OrderedDict[str, tuple[str, list[Any]]] = OrderedDict()
        self._limit = kept
        self._slots = asyncio.Semaphore(parallel)
        self._keys: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self._runs: dict[str, _Run] = {}
        self.computed = 0
        """Computations made (the others were answered from what is kept)."""

    async def of[T, R](self, key: str, tables: Sequence[T], compute: Callable[[T], R]) -> list[R]:
        """`compute` of each table: kept ones if `key`'s last figures came from equal tables.
        A table's repr must hold everything `compute` reads (a dataclass of lists of numbers
        and names does: a float's repr is exact)."""
        digest = hashlib.sha256(repr(list(tables)).encode("utf-8")).hexdigest()
        lock = self._keys.get(key)
        if lock is None:
            lock = self._keys[key] = asyncio.Lock()
        async with lock:
            held = self._kept.get(key)
            if held is not None and held[0] == digest:
                self._kept.move_to_end(key)
                found: list[R] = held[1]
                return found
            run = self._runs.get(key)
            if run is not None and (run.digest != digest or run.dropped):
                await asyncio.wait([run.task])  # one computation of a key at a time
                run = None
            if run is None:
                run = _Run(digest, asyncio.ensure_future(self._compute(key, tables, compute)))
                self._runs[key] = run
            # A caller that goes away leaves a computation whose thread runs to the next
            # caller (a thread cannot be stopped: none is started beside it); one that has not
            # started yet is dropped when nobody waits for it any more.
            run.waiters += 1
            try:
                figures: list[R] = await asyncio.shield(run.task)
            except asyncio.CancelledError:
                if run.waiters == 1 and not run.started:
                    run.dropped = True
                    run.task.cancel()
                raise
            finally:
                run.waiters -= 1
            return figures

    async def _compute[T, R](
        self, key: str, tables: Sequence[T], compute: Callable[[T], R]
    ) -> list[R]:
        run = self._runs[key]
        try:
            async with self._slots:
                run.started = True
                work = asyncio.to_thread(lambda: [compute(table) for table in tables])
                figures = await asyncio.shield(work)
            self.computed += 1
            self._kept[key] = (run.digest, figures)
            self._kept.move_to_end(key)
            while len(self._kept) > self._limit:
                self._kept.popitem(last=False)
            return figures
        finally:
            del self._runs[key]
