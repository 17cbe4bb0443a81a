"""Running jobs together: the first failure stops the others, and the first job's failure in
order is raised as itself."""

import asyncio

import pytest

from parley.engine.errors import EpisodeFailed, JudgeFailed, gather_or_fail, gather_stop
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


async def fails_once_stopped(reason: str) -> int:
    """A job whose failure comes as it is stopped (a model call that ended meanwhile)."""
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        stop = gather_stop()
        assert stop is not None and stop.is_set()
        raise EpisodeFailed(reason, GenerationStats()) from None
    return 0


async def fails(reason: str, delay: float) -> int:
    await asyncio.sleep(delay)
    raise EpisodeFailed(reason, GenerationStats())


async def test_the_first_jobs_failure_in_order_is_raised_whichever_came_first() -> None:
    with pytest.raises(EpisodeFailed) as caught:
        await gather_or_fail([fails_once_stopped("first job"), fails("second job", 0.01)])
    assert caught.value.reason == "first job"
    assert gather_stop() is None  # only the jobs see it


async def test_cancelling_the_gather_is_passed_on_whatever_its_jobs_raise() -> None:
    gathering = asyncio.create_task(gather_or_fail([fails_once_stopped("stopped"), value(1, 30)]))
    await asyncio.sleep(0.01)
    gathering.cancel()
    with pytest.raises(asyncio.CancelledError):
        await gathering


async def test_a_bug_is_raised_with_the_failures_not_hidden_by_them() -> None:
    async def bug() -> int:
        await asyncio.sleep(0.01)
        raise KeyError("bug")

    with pytest.raises(ExceptionGroup) as caught:
        await gather_or_fail([fails_once_stopped("failed"), bug()])
    assert [type(e) for e in caught.value.exceptions] == [EpisodeFailed, KeyError]
