"""A provider's limits shared by every Parley process: what the engine needs of them.

A models file entry may state a provider's limits (requests and tokens per minute, requests at
once) for the key they are counted under. Every process draws from one allowance of that key,
kept where all of them reach it: `SharedAllowance` is what the engine asks of it (storage/
provider_limits.py keeps it in Redis). A call waits for the shared allowance (a 429's hold, the
rates) before it takes its place under its endpoint's adaptive limit (engine/limiter.py), so no
local place is held through a long shared wait; once it has its local place it takes a place
among the key's calls in flight (a lease, so a process that dies mid-call gives it back when the
lease ends), which is a wait for other calls to end, not for time to pass.

Within one process one call at a time asks the shared allowance for a key (a lock per key, one
for the rates and one for the places in flight): the others wait their turn here, so a busy
allowance is asked by each process, not by each call.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import urlsplit, urlunsplit

HOLD_WITHOUT_RETRY_AFTER = 1.0
"""Seconds every process holds a key's calls after a 429 that says no Retry-After."""
MAX_HOLD = 60.0
"""The longest hold a Retry-After sets (as `AdaptiveLimit.max_pause`)."""
LEASE_SLACK = 30.0
"""Seconds a lease on a place in flight outlasts its request's timeout."""
POLL_FLOOR = 0.01
POLL_CEILING = 0.25
"""Seconds between asks for a place in flight while the key's places are all taken (doubling
from the floor to the ceiling)."""


@dataclass(frozen=True)
class ProviderLimits:
    """A key's limits, as the models file states them (None: not limited that way)."""

    key: str
    """What the allowance is counted under (the entry's `limit_key`, or its base URL and API
    key variable)."""
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    max_in_flight: int | None = None

    def charge(self, tokens: int) -> int:
        """What a call of `tokens` tokens is charged: never more than a minute's tokens, so a
        request larger than that goes once a whole minute is free, not after many minutes."""
        if self.tokens_per_minute is None:
            return tokens
        return min(tokens, self.tokens_per_minute)

    @property
    def storage_id(self) -> str:
        """The key as stored: its SHA-256 (hex), whatever characters the name has."""
        return hashlib.sha256(self.key.encode()).hexdigest()


@dataclass(frozen=True)
class LimitUsage:
    """A key's allowance in use now, as every process sees it."""

    limits: ProviderLimits
    models: tuple[str, ...]
    """The models file entries counted under the key."""
    requests_this_minute: int = 0
    tokens_this_minute: int = 0
    """Since the current minute began (UTC, by the allowance's clock)."""
    in_flight: int = 0
    rate_limited: int = 0
    """429 answers any process has seen for the key."""
    held_for: float = 0.0
    """Seconds until a 429's hold lets calls go again (0: none)."""


class SharedAllowance(Protocol):
    """One allowance per key, drawn from by every process at once."""

    async def admit(self, limits: ProviderLimits, tokens: int) -> float:
        """Seconds to wait before asking again, or 0: then the call is charged (one request,
        `tokens` tokens) and may go."""
        ...

    async def enter(self, limits: ProviderLimits, lease: str, seconds: float) -> bool:
        """Take a place among the key's calls in flight for `seconds` at most; False when they
        are all taken."""
        ...

    async def leave(self, limits: ProviderLimits, lease: str | None, refund: int) -> None:
        """Give back the place `lease` (if any) and `refund` tokens charged beyond the call's
        real use (negative: charge more)."""
        ...

    async def penalize(self, limits: ProviderLimits, hold: float, rejected: bool) -> None:
        """Hold every process's calls of the key for `hold` seconds; `rejected`: count a 429."""
        ...

    async def usage(self, limits: ProviderLimits) -> LimitUsage:
        """The allowance in use now (`models` left empty)."""
        ...


@dataclass
class Charge:
    """What one call was charged; the caller sets `used` once the answer says."""

    tokens: int
    used: int | None = None


@dataclass
class SharedLimit:
    """One key's shared allowance, as one process draws from it."""

    limits: ProviderLimits
    allowance: SharedAllowance
    _admitting: asyncio.Lock = field(default_factory=asyncio.Lock)
    _entering: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def admit(self, tokens: int) -> None:
        """Wait until the allowance lets a call of `tokens` tokens go (charged then)."""
        tokens = self.limits.charge(tokens)
        async with self._admitting:
            # The wait is for time to pass (the rates move on), not for an event here.
            while (wait := await self.allowance.admit(self.limits, tokens)) > 0:  # noqa: ASYNC110
                await asyncio.sleep(wait)

    @contextlib.asynccontextmanager
    async def in_flight(self, tokens: int, timeout: float) -> AsyncIterator[Charge]:
        """Hold a place among the key's calls in flight (when it has a cap) for the block; at
        its end give the place back and correct the tokens charged by what was used."""
        charge = Charge(self.limits.charge(tokens))
        lease = None
        if self.limits.max_in_flight is not None:
            lease = uuid.uuid4().hex
            await self._enter(lease, timeout + LEASE_SLACK)
        try:
            yield charge
        finally:
            refund = 0
            if self.limits.tokens_per_minute is not None and charge.used is not None:
                refund = charge.tokens - self.limits.charge(charge.used)
            if lease is not None or refund:
                await asyncio.shield(self.allowance.leave(self.limits, lease, refund))

    async def _enter(self, lease: str, seconds: float) -> None:
        pause = POLL_FLOOR
        async with self._entering:
            while not await self.allowance.enter(self.limits, lease, seconds):
                await asyncio.sleep(pause)
                pause = min(POLL_CEILING, pause * 2)

    async def overloaded(self, retry_after: float | None, rejected: bool) -> None:
        """A 429, or an answer with a Retry-After: every process holds its calls of the key."""
        hold = HOLD_WITHOUT_RETRY_AFTER if retry_after is None else retry_after
        await self.allowance.penalize(self.limits, min(max(hold, 0.0), MAX_HOLD), rejected)


def default_key(base_url: str, api_key_env: str | None) -> str:
    """The key an entry's limits are counted under unless it names one: its endpoint and the
    environment variable its API key is read from (never the key itself). Credentials in the
    URL (user and password, a query) are left out: the key is shown on `/metrics`."""
    parts = urlsplit(base_url)
    host = parts.netloc.rpartition("@")[2]
    endpoint = urlunsplit((parts.scheme, host, parts.path, "", "")).rstrip("/")
    return f"{endpoint} {api_key_env or '-'}"
