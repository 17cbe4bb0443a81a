"""Exceptions raised by the engine."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable
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


async def gather_or_fail[T](jobs: Iterable[Coroutine[Any, Any, T]]) -> list[T]:
    """Run `jobs` concurrently and return their results in order.

    The first EpisodeFailed cancels the others and is raised as itself (not wrapped in an
    ExceptionGroup), so callers handle one failure type whether one job ran or many.
    """
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(job) for job in jobs]
    except* EpisodeFailed as failed:
        first = failed.exceptions[0]
        assert isinstance(first, EpisodeFailed)
        raise first from None
    return [task.result() for task in tasks]
