"""A provider key's allowance in Redis, shared by processes: the rates, the places in flight,
a 429's hold."""

import asyncio
import itertools
import json
import subprocess
import sys
import time
import uuid
from typing import Any

from parley.engine.shared_limit import ProviderLimits
from parley.storage.provider_limits import RedisAllowance, admit


def fresh(**limits: int) -> ProviderLimits:
    return ProviderLimits(f"test {uuid.uuid4().hex}", **limits)


def helper(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.allowance_client", *args],
        stdout=subprocess.PIPE,
        text=True,
    )


async def granted_here(
    client: Any, limits: ProviderLimits, seconds: float, callers: int
) -> list[float]:
    times: list[float] = []
    end = time.monotonic() + seconds

    async def caller() -> None:
        while time.monotonic() < end:
            answer = await admit(client, limits, 1)
            if answer.wait == 0:
                times.append(answer.at)
            else:
                await asyncio.sleep(answer.wait)

    await asyncio.gather(*(caller() for _ in range(callers)))
    return times


async def test_processes_drawing_from_one_rate_never_exceed_it(
    redis_url: str, redis_client: Any
) -> None:
    rpm, seconds = 1200, 3.0  # one request each 50 ms
    limits = fresh(requests_per_minute=rpm)
    other = helper("admit", redis_url, limits.key, str(rpm), str(seconds), "5")
    here = await granted_here(redis_client, limits, seconds, 5)
    there = json.loads(await asyncio.to_thread(lambda: other.communicate(timeout=30)[0]))
    assert here and there  # both processes were let through
    times = sorted(here + there)
    spacing = 60 / rpm
    gaps = [b - a for a, b in itertools.pairwise(times)]
    # Evenly spaced (to the scripts' tenth of a millisecond), so no window of a minute, nor of
    # any n spacings, holds more than the rate allows.
    assert min(gaps) >= spacing - 2e-4
    assert len(times) >= 0.8 * seconds / spacing  # and the allowance was used, not wasted


async def test_a_dead_holders_place_comes_back_after_its_lease(
    redis_url: str, redis_client: Any
) -> None:
    limits = fresh(max_in_flight=1)
    allowance = RedisAllowance(redis_client)
    doomed = helper("hold-place", redis_url, limits.key, "1", "1.5")
    assert doomed.stdout is not None
    assert await asyncio.to_thread(doomed.stdout.readline) == "entered\n"
    doomed.kill()
    doomed.wait()
    killed = time.monotonic()
    assert not await allowance.enter(limits, "mine", 10)  # still held by the dead process
    assert (await allowance.usage(limits)).in_flight == 1
    while not await allowance.enter(limits, "mine", 10):  # noqa: ASYNC110 - a lease ends
        await asyncio.sleep(0.05)
    assert time.monotonic() - killed >= 1.0  # not before its lease ended
    assert (await allowance.usage(limits)).in_flight == 1
    await allowance.leave(limits, "mine", 0)
    assert (await allowance.usage(limits)).in_flight == 0


async def test_places_in_flight_are_capped_and_given_back(redis_client: Any) -> None:
    limits = fresh(max_in_flight=2)
    allowance = RedisAllowance(redis_client)
    assert await allowance.enter(limits, "a", 10)
    assert await allowance.enter(limits, "b", 10)
    assert not await allowance.enter(limits, "c", 10)
    await allowance.leave(limits, "a", 0)
    assert await allowance.enter(limits, "c", 10)
    for lease in ("b", "c"):
        await allowance.leave(limits, lease, 0)
    assert (await allowance.usage(limits)).in_flight == 0


async def test_a_hold_stops_every_caller_and_counts_the_429(redis_client: Any) -> None:
    limits = fresh(requests_per_minute=6000)
    one, two = RedisAllowance(redis_client), RedisAllowance(redis_client)
    assert await one.admit(limits, 10) == 0
    await one.penalize(limits, 2.0, rejected=True)
    wait = await two.admit(limits, 10)
    assert 1.5 < wait <= 2.0
    await one.penalize(limits, 0.5, rejected=False)  # a shorter hold keeps the longer one
    assert await two.admit(limits, 10) > 1.4
    usage = await two.usage(limits)
    assert usage.rate_limited == 1 and usage.held_for > 1.4
    assert usage.requests_this_minute == 1 and usage.tokens_this_minute == 10


async def test_tokens_charged_at_the_estimate_are_corrected_by_the_use(
    redis_client: Any,
) -> None:
    limits = fresh(tokens_per_minute=6000)  # 100 tokens a second
    allowance = RedisAllowance(redis_client)
    assert await allowance.admit(limits, 600) == 0
    assert 5.5 < await allowance.admit(limits, 600) <= 6.0  # six seconds' worth charged
    await allowance.leave(limits, None, 550)  # it used 50
    wait = await allowance.admit(limits, 600)
    assert wait <= 0.5  # half a second's worth left
    await asyncio.sleep(wait)
    assert await allowance.admit(limits, 600) == 0
    usage = await allowance.usage(limits)
    assert usage.tokens_this_minute in (50 + 600, 600)  # a minute may have turned meanwhile


async def test_a_key_without_a_rate_is_not_spaced(redis_client: Any) -> None:
    limits = fresh(max_in_flight=5)
    allowance = RedisAllowance(redis_client)
    assert [await allowance.admit(limits, 100) for _ in range(20)] == [0.0] * 20
