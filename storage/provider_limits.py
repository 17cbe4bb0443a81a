"""Providers' limits shared by every process, in Redis: engine/shared_limit.py's allowance.

Each key's rates are a GCRA (`admit_call.lua`) with no burst: requests go evenly spaced, so no
window of a minute holds more than the rate; its calls in flight are leases in a sorted set by
deadline (`enter_call.lua`, `leave_call.lua`), so a process that dies mid-call gives its place
back when the lease ends; a 429 holds every process's calls (`hold_calls.lua`). Every script
reads the time from Redis: one clock for every process.
"""

from __future__ import annotations

from typing import NamedTuple

import redis.asyncio as redis

from parley.engine.shared_limit import LimitUsage, ProviderLimits
from parley.storage import keys
from parley.storage.scripts import Script
from parley.storage.vocabulary import LimitField

KEEP_SECONDS = 86400
"""A key's state (its rates, its 429 count) is kept this long after its last call."""


class StateKeys(NamedTuple):
    state: str


class HoldersKeys(NamedTuple):
    holders: str


class BothKeys(NamedTuple):
    state: str
    holders: str


class AdmitArgs(NamedTuple):
    requests_per_minute: int | str
    tokens_per_minute: int | str
    tokens: int
    keep_seconds: int


class EnterArgs(NamedTuple):
    max_in_flight: int
    lease: str
    seconds: float


class LeaveArgs(NamedTuple):
    lease: str
    refund: int
    tokens_per_minute: int | str


class HoldArgs(NamedTuple):
    hold: float
    rejected: int
    keep_seconds: int


ADMIT = Script("admit_call", StateKeys, AdmitArgs, uses=("clock",))
ENTER = Script("enter_call", HoldersKeys, EnterArgs, uses=("clock",))
LEAVE = Script("leave_call", BothKeys, LeaveArgs, uses=("clock",))
HOLD = Script("hold_calls", StateKeys, HoldArgs, uses=("clock",))


class Admission(NamedTuple):
    wait: float
    """Seconds to wait before asking again; 0: charged, go."""
    at: float
    """The server's time of the answer (epoch seconds)."""


def _rate(value: int | None) -> int | str:
    return "" if value is None else value


async def admit(client: redis.Redis, limits: ProviderLimits, tokens: int) -> Admission:
    """Ask the key's rates (and any hold) to let one request of `tokens` tokens go."""
    wait, at = await ADMIT(
        client,
        StateKeys(keys.provider_limit(limits.storage_id)),
        AdmitArgs(
            _rate(limits.requests_per_minute), _rate(limits.tokens_per_minute), tokens, KEEP_SECONDS
        ),
    )
    return Admission(float(wait), float(at))


class RedisAllowance:
    """Every process's allowance per provider key, in one Redis."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    async def admit(self, limits: ProviderLimits, tokens: int) -> float:
        return (await admit(self.client, limits, tokens)).wait

    async def enter(self, limits: ProviderLimits, lease: str, seconds: float) -> bool:
        assert limits.max_in_flight is not None
        holders = HoldersKeys(keys.provider_limit_holders(limits.storage_id))
        taken = await ENTER(self.client, holders, EnterArgs(limits.max_in_flight, lease, seconds))
        return bool(taken)

    async def leave(self, limits: ProviderLimits, lease: str | None, refund: int) -> None:
        both = BothKeys(
            keys.provider_limit(limits.storage_id), keys.provider_limit_holders(limits.storage_id)
        )
        args = LeaveArgs(lease or "", refund, _rate(limits.tokens_per_minute))
        await LEAVE(self.client, both, args)

    async def penalize(self, limits: ProviderLimits, hold: float, rejected: bool) -> None:
        state = StateKeys(keys.provider_limit(limits.storage_id))
        await HOLD(self.client, state, HoldArgs(hold, int(rejected), KEEP_SECONDS))

    async def usage(self, limits: ProviderLimits) -> LimitUsage:
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.time()
            pipe.hmget(
                keys.provider_limit(limits.storage_id),
                [
                    LimitField.MINUTE,
                    LimitField.REQUESTS,
                    LimitField.TOKENS,
                    LimitField.RATE_LIMITED,
                    LimitField.HOLD_UNTIL,
                ],
            )
            pipe.zrange(keys.provider_limit_holders(limits.storage_id), 0, -1, withscores=True)
            (seconds, micros), state, holders = await pipe.execute()
        now = seconds + micros / 1e6
        minute, requests, tokens, rejected, hold = (_text(v) for v in state)
        current = minute == str(int(now // 60))
        return LimitUsage(
            limits=limits,
            models=(),
            requests_this_minute=int(requests or 0) if current else 0,
            tokens_this_minute=int(tokens or 0) if current else 0,
            in_flight=sum(1 for _, deadline in holders if deadline > now),
            rate_limited=int(rejected or 0),
            held_for=max(0.0, float(hold or 0) - now),
        )


def _text(value: bytes | str | None) -> str | None:
    return value.decode() if isinstance(value, bytes) else value
