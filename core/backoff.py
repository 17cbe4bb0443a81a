"""Exponential backoff: the one schedule for every retry loop (model calls, Redis reconnects)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import count


@dataclass(frozen=True)
class Backoff:
    """Delays of base, 2 x base, 4 x base ... up to cap; with jitter, each is scaled by a random
    factor in [0.5, 1) so that many clients retrying at once spread out."""

    base: float
    cap: float
    jitter: bool = False

    def delay(self, attempt: int) -> float:
        """The wait after failed attempt number `attempt` (from 1)."""
        seconds: float = min(self.cap, self.base * 2.0 ** (attempt - 1))
        return seconds * (0.5 + random.random() / 2) if self.jitter else seconds

    def delays(self) -> Iterator[float]:
        return (self.delay(attempt) for attempt in count(1))
