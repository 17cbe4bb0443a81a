"""Exceptions raised by the engine."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from parley.engine.stats import GenerationStats

if TYPE_CHECKING:
    from parley.engine.types import JudgeErrorCode, JudgeRun, Suspended


class EngineError(Exception):
    """Base class of engine errors."""


class UnknownModelError(EngineError):
    """A model name that is unknown or cannot be used (e.g. its API key is missing)."""


class LLMError(EngineError):
    """A model call failed for good (retries and repairs exhausted)."""


class LLMTransportError(LLMError):
    """The endpoint could not be reached or kept failing."""


class LLMTimeout(LLMTransportError):
    """The endpoint's last try timed out (what a busy machine's embedded model does)."""


class LLMOutputError(LLMError):
    """The model kept answering with output that does not parse or validate."""


class LocalModelError(EngineError):
    """The embedded model server could not be prepared or started."""


class EpisodeFailed(EngineError):
    """The episode cannot go on (or cannot be scored); nothing was made up instead."""

    def __init__(self, reason: str, stats: GenerationStats) -> None:
        super().__init__(reason)
        self.reason = reason
        self.stats = stats


class JudgeFailed(EpisodeFailed):
    """The judge gave no valid scores. The conversation stands: it can be judged again.

    `code` says why; `runs` holds a panel's judge runs, each with its own reason."""

    def __init__(
        self,
        reason: str,
        stats: GenerationStats,
        code: JudgeErrorCode,
        runs: list[JudgeRun] | None = None,
    ) -> None:
        super().__init__(reason, stats)
        self.code = code
        self.runs = runs or []


class ReplayStopped(EpisodeFailed):
    """A replay cannot go on: it met a request its source's ledger does not hold (engine/ledger.py
    `missing`), or a call cancelled in the source that nothing cancels here. The episode stops
    there, with no model asked; not a judge's failure, it ends the episode."""


class EpisodeSuspended(EngineError):
    """The episode stopped before a turn to wait (for a person, or a pause): `state` says where;
    playing it again with its stored history goes on from there."""

    def __init__(self, state: Suspended) -> None:
        super().__init__(f"{state.reason} before turn {state.turn}")
        self.state = state


_STOP: ContextVar[asyncio.Event | None] = ContextVar("parley_gather_stop", default=None)


def gather_stop() -> asyncio.Event | None:
    """In a job of `gather_or_fail`, the event set once the gather stops its jobs (one failed,
    or the gather itself was cancelled); None elsewhere."""
    return _STOP.get()


async def gather_or_fail[T](jobs: Iterable[Coroutine[Any, Any, T]]) -> list[T]:
    """Run `jobs` concurrently and return their results in order.

    The first failure stops the others (`gather_stop` is set, their tasks cancelled). Once every
    job has ended, the failure of the first job in order among those that failed is raised as
    itself (not wrapped in an ExceptionGroup, so callers handle one failure type whether one job
    ran or many); a failure that is not an EpisodeFailed (a bug) is raised with the others in an
    ExceptionGroup. Which job failed first is a matter of timing, which failed at all is not (the
    ledger keeps where each stopped, and a replay plays each to there), so an episode and its
    replay report the same failure.

    Cancelling the gather stops its jobs and is passed on once they have ended, whatever they
    raised.
    """
    stop = asyncio.Event()

    async def run(job: Coroutine[Any, Any, T]) -> T:
        _STOP.set(stop)  # in this job's own context
        return await job

    tasks = [asyncio.create_task(run(job)) for job in jobs]
    if not tasks:
        return []
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    except asyncio.CancelledError:
        await _stopped(stop, tasks)
        raise
    if await _stopped(stop, tasks):
        raise asyncio.CancelledError
    failed = [e for task in tasks if not task.cancelled() and (e := task.exception()) is not None]
    if failed and all(isinstance(e, EpisodeFailed) for e in failed):
        raise failed[0]
    if failed:
        raise BaseExceptionGroup("a job of gather_or_fail failed", failed)
    return [task.result() for task in tasks]


async def _stopped(stop: asyncio.Event, tasks: list[asyncio.Task[Any]]) -> bool:
    """Stop the jobs still running and wait until every one has ended; True when the waiting
    task was cancelled meanwhile."""
    stop.set()
    for task in tasks:
        task.cancel()
    cancelled = False
    while not all(task.done() for task in tasks):
        try:
            await asyncio.wait(tasks)
        except asyncio.CancelledError:
            cancelled = True
    return cancelled
