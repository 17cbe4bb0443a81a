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
from typing import Any

KEPT = 64
"""Keys whose last figures are kept (least recently asked for first out)."""
PARALLEL = 1
"""Computations at once in a process: each keeps a core busy."""


class KeptFigures:
    """Figures by key, kept while their tables are unchanged."""

    def __init__(self, kept: int = KEPT, parallel: int = PARALLEL) -> None:
        self._kept: OrderedDict[str, tuple[str, list[Any]]] = OrderedDict()
        self._limit = kept
        self._slots = asyncio.Semaphore(parallel)
        self._keys: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self._running: dict[str, tuple[str, asyncio.Future[list[Any]]]] = {}
        """By key: the computation under way, and the digest of its tables."""
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
            running = self._running.get(key)
            if running is not None and running[0] != digest:
                await asyncio.wait([running[1]])  # one computation of a key at a time
                running = None
            if running is None:
                running = (
                    digest,
                    asyncio.ensure_future(self._compute(key, digest, tables, compute)),
                )
                self._running[key] = running
            # A caller that goes away leaves the computation to the next one: its thread
            # cannot be stopped, so none is started beside it.
            figures: list[R] = await asyncio.shield(running[1])
            return figures

    async def _compute[T, R](
        self, key: str, digest: str, tables: Sequence[T], compute: Callable[[T], R]
    ) -> list[R]:
        try:
            async with self._slots:
                figures = await asyncio.to_thread(lambda: [compute(table) for table in tables])
            self.computed += 1
            self._kept[key] = (digest, figures)
            self._kept.move_to_end(key)
            while len(self._kept) > self._limit:
                self._kept.popitem(last=False)
            return figures
        finally:
            del self._running[key]
