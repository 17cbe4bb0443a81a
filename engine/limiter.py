"""An adaptive cap on the calls in flight to one endpoint: AIMD, as TCP's congestion window.

The limit starts at `initial` and grows by one per success (slow start: it doubles every round
trip) until the endpoint first signals overload; from then on by one per round trip (1/limit per
success). An overload (a 429, a 5xx, a timeout) cuts it by `decrease`, once per round trip: a
call that started before the last cut does not cut again. A Retry-After holds every new call
until then. It grows only on calls during which it was full (so an endpoint with little to do
does not inflate it) and while their latency stays within `latency_tolerance` times the lowest
recent latency (one that starts to queue is fed no more while it does). A rise of latency pauses
the growth without ending slow start: a process too busy to read its answers at once sees the
same rise (bench/RESULTS.md, issue 27), and it passes. `floor == ceiling` is a fixed limit.

Waiters are served first come, first served; a waiter cancelled while it waits, or a call
cancelled while it runs, frees its place.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass

INITIAL = 32
"""The first limit of an adaptive endpoint: few servers mind 32 requests at once (vLLM and
llama.cpp queue them, TGI admits 128), and from it slow start reaches 256 in three round trips."""
SMOOTHING = 0.2
"""Weight of each new latency in the recent average."""
FORGETTING = 0.02
"""Share of the gap by which the lowest latency rises toward the recent one, per round trip."""
LATENCY_SLACK = 0.05
"""Seconds of latency rise that never count as queueing (scheduling noise of fast endpoints)."""


@dataclass
class Slot:
    """One call's place under the limit."""

    epoch: int
    ticket: int
    """Admissions before this one: the limit was full during the call if it filled after."""
    started: float
    overloaded: bool = False
    retry_after: float | None = None

    def overload(self, retry_after: float | None = None) -> None:
        """The endpoint said it is overloaded (429, 5xx, timeout), maybe with a Retry-After."""
        self.overloaded = True
        self.retry_after = retry_after


class AdaptiveLimit:
    """At most `limit` calls at once; the limit adapts between floor and ceiling.

    Bound to the event loop that first waits on it (as asyncio's own primitives)."""

    def __init__(
        self,
        ceiling: int,
        floor: int = 1,
        initial: int = INITIAL,
        *,
        decrease: float = 0.7,
        latency_tolerance: float = 2.0,
        max_pause: float = 60.0,
    ) -> None:
        if not 1 <= floor <= ceiling:
            raise ValueError(f"need 1 <= floor <= ceiling, got {floor} and {ceiling}")
        if not 0 < decrease < 1:
            raise ValueError("decrease must be between 0 and 1")
        self.floor = floor
        self.ceiling = ceiling
        self.decrease = decrease
        self.latency_tolerance = latency_tolerance
        self.max_pause = max_pause
        self._limit = float(min(ceiling, max(floor, initial)))
        self._threshold = float(ceiling)
        """Below it the limit grows in slow start (TCP's ssthresh); the first cut lowers it."""
        self.in_flight = 0
        self.overloads = 0
        """Overload signals seen (each 429, 5xx or timeout)."""
        self._epoch = 0
        self._admissions = 0
        self._full_at = -1
        """The admission count when the limit was last found full."""
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._paused_until = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._recent: float | None = None
        self._lowest: float | None = None

    @property
    def limit(self) -> int:
        return max(self.floor, min(self.ceiling, int(self._limit)))

    @property
    def reach(self) -> int:
        """The calls it may take a round trip from now: twice its limit in slow start (up to
        its ceiling), else its limit."""
        if self._limit < self._threshold:
            return min(self.ceiling, 2 * self.limit)
        return self.limit

    @property
    def waiting(self) -> int:
        return sum(1 for w in self._waiters if not w.done())

    def narrow(self, ceiling: int, floor: int = 1) -> None:
        """Share this limit with another model of the endpoint: the tighter bounds win."""
        self.ceiling = min(self.ceiling, ceiling)
        self.floor = min(self.ceiling, max(self.floor, floor))
        self._limit = min(float(self.ceiling), max(float(self.floor), self._limit))

    def paused_for(self) -> float:
        """Seconds until a Retry-After lets new calls in again (0 when it does now)."""
        return max(0.0, self._paused_until - asyncio.get_running_loop().time())

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[Slot]:
        """Wait for a place, hold it for the block; a block that ends without an exception and
        without `overload()` counts as a success (its latency is measured here)."""
        await self._acquire()
        loop = asyncio.get_running_loop()
        slot = Slot(self._epoch, self._admissions, loop.time())
        try:
            yield slot
        except BaseException:
            self._finish(slot, success=False)
            raise
        self._finish(slot, success=not slot.overloaded)

    async def _acquire(self) -> None:
        if not self._waiters and self._admits():
            self._admit()
            return
        self._full_at = self._admissions
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        self._wake_later()
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self.in_flight -= 1  # granted as it was cancelled: pass the place on
                self._wake()
            else:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
            raise

    def _admit(self) -> None:
        self.in_flight += 1
        self._admissions += 1
        if self.in_flight >= self.limit:
            self._full_at = self._admissions

    def _admits(self) -> bool:
        if self.in_flight >= self.limit:
            return False
        return self._paused_until <= asyncio.get_running_loop().time()

    def _wake(self) -> None:
        self._timer = None
        while self._waiters and self._admits():
            waiter = self._waiters.popleft()
            if not waiter.done():
                self._admit()
                waiter.set_result(None)
        self._wake_later()

    def _wake_later(self) -> None:
        """While a Retry-After holds waiters, wake them when it ends."""
        if self._timer is None and self._waiters and self.paused_for() > 0:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_at(self._paused_until, self._wake)

    def _finish(self, slot: Slot, success: bool) -> None:
        self.in_flight -= 1
        if slot.overloaded:
            self._on_overload(slot)
        elif success:
            self._on_success(slot, asyncio.get_running_loop().time() - slot.started)
        self._wake()

    def _on_success(self, slot: Slot, latency: float) -> None:
        if self._latency_rose(latency):
            return
        if self._full_at < slot.ticket:
            return  # it was not full: no evidence that more would work
        self._limit += 1.0 if self._limit < self._threshold else 1.0 / self._limit
        self._limit = min(self._limit, float(self.ceiling))

    def _latency_rose(self, latency: float) -> bool:
        if self._recent is None or self._lowest is None:
            self._recent = self._lowest = latency
            return False
        self._recent += (latency - self._recent) * SMOOTHING
        if self._recent < self._lowest:
            self._lowest = self._recent
        else:
            self._lowest += (self._recent - self._lowest) * FORGETTING / max(1.0, self._limit)
        return self._recent > self.latency_tolerance * self._lowest + LATENCY_SLACK

    def _on_overload(self, slot: Slot) -> None:
        self.overloads += 1
        if slot.retry_after is not None and slot.retry_after > 0:
            now = asyncio.get_running_loop().time()
            until = now + min(slot.retry_after, self.max_pause)
            self._paused_until = max(self._paused_until, until)
        if slot.epoch == self._epoch:
            self._epoch += 1
            self._limit = max(float(self.floor), self._limit * self.decrease)
            self._threshold = self._limit
