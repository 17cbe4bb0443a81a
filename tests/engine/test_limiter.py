"""The adaptive limit on calls in flight: how it grows, backs off, waits and lets go."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from bench.support.fake_llm import FakeLLM, RateLimit, Rule
from parley.engine.limiter import INITIAL, AdaptiveLimit
from parley.engine.llm import ChatRequest, ModelRegistry, RetryPolicy
from parley.engine.stats import GenerationStats

HELLO = ChatRequest(messages=[{"role": "user", "content": "hi"}])


@asynccontextmanager
async def opened(
    models: Path | None, tmp_path: Path, retry: RetryPolicy
) -> AsyncIterator[ModelRegistry]:
    """A model registry, closed after use."""
    registry = ModelRegistry(models, tmp_path, retry=retry)
    try:
        yield registry
    finally:
        await registry.aclose()


async def complete(
    registry: ModelRegistry, model: str, count: int, stats: GenerationStats
) -> list[str]:
    """`count` calls to `model` at once, their replies."""
    return await asyncio.gather(*(registry.complete(model, HELLO, stats) for _ in range(count)))


async def calls(limit: AdaptiveLimit, count: int, *, overload: bool = False) -> None:
    """`count` calls at once, each succeeding (or overloaded) after all have started."""
    started = asyncio.Event()
    entered = 0

    async def call() -> None:
        nonlocal entered
        async with limit.slot() as slot:
            entered += 1
            if entered == count:
                started.set()
            await started.wait()
            if overload:
                slot.overload()

    await asyncio.gather(*(call() for _ in range(count)))


async def settle() -> None:
    """Let every task that can run take its next steps."""
    for _ in range(10):
        await asyncio.sleep(0)


@pytest.mark.parametrize(
    ("initial", "rounds"),
    [
        (4, [(4, False, 8), (8, False, 16)]),
        (20, [(1, True, 14), (14, False, 14), (14, False, 15)]),
    ],
    ids=["slow-start", "after-an-overload"],
)
async def test_it_grows_by_one_a_success_in_slow_start_then_about_one_a_round_trip(
    initial: int, rounds: list[tuple[int, bool, int]]
) -> None:
    """Each round: that many calls at once (overloaded or not), then the limit they leave."""
    limit = AdaptiveLimit(ceiling=100, initial=initial)
    for count, overload, after in rounds:
        await calls(limit, count, overload=overload)
        assert limit.limit == after


async def test_an_idle_limit_does_not_grow() -> None:
    limit = AdaptiveLimit(ceiling=100, initial=16)
    for _ in range(20):
        await calls(limit, 1)
    assert limit.limit == 16


async def test_an_overload_cuts_it_once_per_round_trip() -> None:
    limit = AdaptiveLimit(ceiling=100, initial=20, decrease=0.5)
    await calls(limit, 10, overload=True)  # ten 429s of calls sent before the first cut
    assert limit.limit == 10
    assert limit.overloads == 10
    await calls(limit, 1, overload=True)  # sent after the cut: cuts again
    assert limit.limit == 5


async def test_it_stays_between_floor_and_ceiling() -> None:
    limit = AdaptiveLimit(ceiling=10, floor=3, initial=8)
    for _ in range(5):
        await calls(limit, limit.limit)
    assert limit.limit == 10
    for _ in range(10):
        await calls(limit, 1, overload=True)
    assert limit.limit == 3


async def test_floor_equal_to_ceiling_is_a_fixed_limit() -> None:
    limit = AdaptiveLimit(ceiling=4, floor=4)
    await calls(limit, 4)
    await calls(limit, 1, overload=True)
    assert limit.limit == 4


async def test_it_never_admits_more_than_the_limit() -> None:
    limit = AdaptiveLimit(ceiling=3, floor=3)
    peak = 0

    async def call() -> None:
        nonlocal peak
        async with limit.slot():
            peak = max(peak, limit.in_flight)
            await asyncio.sleep(0.001)

    await asyncio.gather(*(call() for _ in range(30)))
    assert peak == 3
    assert limit.in_flight == 0


async def test_rising_latency_stops_the_growth() -> None:
    limit = AdaptiveLimit(ceiling=100, initial=4)
    await calls(limit, 4)
    assert limit.limit == 8
    release = asyncio.Event()

    async def slow() -> None:
        async with limit.slot() as slot:
            await release.wait()
            slot.started -= 10.0  # as if it had taken ten seconds longer

    tasks = [asyncio.create_task(slow()) for _ in range(8)]
    await settle()
    release.set()
    await asyncio.gather(*tasks)
    assert limit.limit == 8


async def test_a_latency_that_rose_and_fell_again_leaves_slow_start_going() -> None:
    """A rise pauses the growth (as a process too busy to read its answers at once sees one):
    once latency is back, the limit doubles again each round trip, not one a round trip."""
    limit = AdaptiveLimit(ceiling=100, initial=4)
    await calls(limit, 4)
    release = asyncio.Event()

    async def slow() -> None:
        async with limit.slot() as slot:
            await release.wait()
            slot.started -= 10.0

    tasks = [asyncio.create_task(slow()) for _ in range(8)]
    await settle()
    release.set()
    await asyncio.gather(*tasks)
    assert limit.limit == 8 and limit.reach == 16
    for _ in range(5):
        await calls(limit, limit.limit)
    assert limit.limit >= 32


async def test_its_reach_is_twice_it_in_slow_start_and_itself_after_an_overload() -> None:
    limit = AdaptiveLimit(ceiling=20, initial=8)
    assert limit.reach == 16
    await calls(limit, 8)
    assert (limit.limit, limit.reach) == (16, 20)
    await calls(limit, 1, overload=True)
    assert limit.reach == limit.limit == 11
    assert AdaptiveLimit(ceiling=4, floor=4).reach == 4


async def test_retry_after_holds_new_calls_until_then() -> None:
    limit = AdaptiveLimit(ceiling=10, initial=10)
    async with limit.slot() as slot:
        slot.overload(retry_after=0.2)
    loop = asyncio.get_running_loop()
    assert limit.paused_for() > 0
    before = loop.time()
    async with limit.slot():
        waited = loop.time() - before
    assert waited >= 0.19
    assert limit.paused_for() == 0


async def test_retry_after_is_capped() -> None:
    limit = AdaptiveLimit(ceiling=10, max_pause=0.05)
    async with limit.slot() as slot:
        slot.overload(retry_after=3600)
    assert 0 < limit.paused_for() <= 0.05
    async with limit.slot():
        pass


async def test_waiters_are_served_first_come_first_served() -> None:
    limit = AdaptiveLimit(ceiling=1, floor=1)
    order: list[int] = []
    hold = asyncio.Event()

    async def call(number: int) -> None:
        async with limit.slot():
            order.append(number)
            if number == 0:
                await hold.wait()

    first = asyncio.create_task(call(0))
    await settle()
    waiting = [asyncio.create_task(call(n)) for n in range(1, 20)]
    await settle()
    assert limit.waiting == 19
    hold.set()
    late = asyncio.create_task(call(20))  # arrives after the others: goes last
    await asyncio.gather(first, *waiting, late)
    assert order == list(range(21))


async def test_a_cancelled_call_frees_its_place() -> None:
    limit = AdaptiveLimit(ceiling=1, floor=1)
    entered = asyncio.Event()

    async def hang() -> None:
        async with limit.slot():
            entered.set()
            await asyncio.Event().wait()

    hung = asyncio.create_task(hang())
    await entered.wait()
    waiter = asyncio.create_task(calls(limit, 1))
    await settle()
    assert limit.waiting == 1
    hung.cancel()
    await asyncio.wait_for(waiter, 5)
    assert limit.in_flight == 0
    assert limit.limit == 1


async def test_a_cancelled_waiter_leaves_the_queue() -> None:
    limit = AdaptiveLimit(ceiling=1, floor=1)
    hold = asyncio.Event()

    async def hold_it() -> None:
        async with limit.slot():
            await hold.wait()

    holder = asyncio.create_task(hold_it())
    await settle()
    gone = asyncio.create_task(calls(limit, 1))
    await settle()
    gone.cancel()
    with pytest.raises(asyncio.CancelledError):
        await gone
    assert limit.waiting == 0
    hold.set()
    await holder
    await asyncio.wait_for(calls(limit, 1), 5)
    assert limit.in_flight == 0


async def test_a_waiter_cancelled_as_it_is_let_in_passes_its_place_on() -> None:
    limit = AdaptiveLimit(ceiling=1, floor=1)
    held = limit.slot()
    await held.__aenter__()
    unlucky = asyncio.create_task(calls(limit, 1))
    after = asyncio.create_task(calls(limit, 1))
    await settle()
    assert limit.waiting == 2
    await held.__aexit__(None, None, None)  # the place goes to `unlucky`...
    unlucky.cancel()  # ...which is cancelled before it runs
    with pytest.raises(asyncio.CancelledError):
        await unlucky
    await asyncio.wait_for(after, 5)
    assert limit.in_flight == 0


async def test_narrowing_takes_the_tighter_bounds() -> None:
    limit = AdaptiveLimit(ceiling=100, initial=16)
    limit.narrow(ceiling=8, floor=2)
    assert (limit.floor, limit.ceiling, limit.limit) == (2, 8, 8)


def test_bad_bounds_are_refused() -> None:
    with pytest.raises(ValueError):
        AdaptiveLimit(ceiling=2, floor=3)
    with pytest.raises(ValueError):
        AdaptiveLimit(ceiling=2, decrease=1.0)


async def test_over_http_a_busy_endpoint_gets_fewer_calls_and_each_succeeds(
    own_fake_llm: FakeLLM, tmp_path: Path
) -> None:
    own_fake_llm.delay = 0.05
    own_fake_llm.limit = RateLimit(in_flight=4)
    retry = RetryPolicy(max_attempts=30, base_delay=0.01, max_delay=0.05)
    stats = GenerationStats()
    async with opened(None, tmp_path, retry) as registry:
        replies = await complete(registry, own_fake_llm.model_name(), 40, stats)
        limit = registry.limits()[own_fake_llm.base_url]
    assert replies == ["OK"] * 40
    assert own_fake_llm.rejected > 0
    assert limit.overloads == own_fake_llm.rejected == stats.rate_limited
    assert limit.limit < INITIAL  # cut from its first limit
    assert registry.capacity() == 0  # closed: no endpoint in use


async def test_over_http_retry_after_holds_every_call_to_the_endpoint(
    own_fake_llm: FakeLLM, tmp_path: Path
) -> None:
    own_fake_llm.limit = RateLimit(per_second=5)
    retry = RetryPolicy(max_attempts=8, base_delay=0.01, max_delay=0.05)
    async with opened(None, tmp_path, retry) as registry:
        replies = await complete(registry, own_fake_llm.model_name(), 10, GenerationStats())
    # Retrying every 50 ms without waiting for the second to pass would use up 8 attempts.
    assert replies == ["OK"] * 10
    assert 5 <= own_fake_llm.rejected < 20


async def test_over_http_waiting_for_a_place_does_not_use_up_a_calls_retries(
    own_fake_llm: FakeLLM, tmp_path: Path
) -> None:
    """Six calls share one place (as episodes share the embedded model's slots); each call's
    first answer is an HTTP 500. The last waits about a second for its place, longer than the
    retry budget: it is still retried, since its time in the queue is not time spent."""
    own_fake_llm.delay = 0.2
    own_fake_llm.add_rule(Rule(status=500, times=6))
    models = tmp_path / "models.json"
    entry = {"name": "one", "base_url": own_fake_llm.base_url, "model": "fake"}
    models.write_text(
        json.dumps({"models": [{**entry, "max_concurrency": 1, "min_concurrency": 1}]})
    )
    retry = RetryPolicy(max_attempts=2, base_delay=0.01, max_delay=0.02, budget_seconds=0.6)
    stats = GenerationStats()
    async with opened(models, tmp_path, retry) as registry:
        replies = await complete(registry, "one", 6, stats)
    assert replies == ["OK"] * 6
    assert stats.server_errors == 6 and stats.retries == 6 and stats.failures == 0
    assert own_fake_llm.peak_in_flight == 1
