"""Running jobs together: the first EpisodeFailed is raised as itself and stops the others."""

import asyncio

import pytest

from parley.engine.errors import EpisodeFailed, JudgeFailed, gather_or_fail
from parley.engine.stats import GenerationStats
from parley.engine.types import JudgeErrorCode


async def value(v: int, delay: float) -> int:
    await asyncio.sleep(delay)
    return v


async def test_results_come_back_in_the_order_of_the_jobs() -> None:
    assert await gather_or_fail([value(1, 0.03), value(2, 0.0), value(3, 0.01)]) == [1, 2, 3]


async def test_the_first_failure_is_raised_unwrapped_and_the_others_are_cancelled() -> None:
    cancelled = asyncio.Event()

    async def slow() -> int:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return 0

    async def fails() -> int:
        await asyncio.sleep(0.01)
        raise JudgeFailed("no scores", GenerationStats(requests=4), JudgeErrorCode.TIMEOUT)

    with pytest.raises(EpisodeFailed) as caught:
        await gather_or_fail([slow(), fails()])
    assert isinstance(caught.value, JudgeFailed)
    assert (caught.value.reason, caught.value.stats.requests) == ("no scores", 4)
    assert cancelled.is_set()
