"""The ledger of model calls, as the engine sees it: what each request is for, and the record of
one call that the model registry hands to a `CallLedger` (storage keeps it).

What a call is for travels with the task that makes it (a context variable), so the one place
every request passes through (`ModelRegistry.complete`) can record it without each caller
passing it down: the worker names the episode and its attempt, the episode loop the seat and
the turn, the judge panel the judge, `ask` a re-ask. A call made outside an episode's scope is
not recorded.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, Protocol

from parley.engine.usage import TokenCount


class CallPurpose(StrEnum):
    """Why a model was asked."""

    TURN = "turn"
    """An agent's action."""
    REASK = "reask"
    """The one re-ask after an unusable answer (of a turn or of a judge: see seat and judge)."""
    JUDGE = "judge"
    """A judge's scores (its fallback requests too)."""


@dataclass(frozen=True, slots=True)
class CallScope:
    """Where a call belongs: an episode's attempt, and within it a seat's turn or a judge."""

    episode_id: str
    attempt: int
    purpose: CallPurpose = CallPurpose.TURN
    seat: int | None = None
    """The agent's index (0-based) whose turn asked."""
    turn: int | None = None
    judge: str | None = None
    """The judge run that asked: `<model>#<repeat>`."""


_SCOPE: ContextVar[CallScope | None] = ContextVar("parley_call_scope", default=None)


def current_scope() -> CallScope | None:
    return _SCOPE.get()


@contextlib.contextmanager
def recording(episode_id: str, attempt: int) -> Iterator[None]:
    """Record the calls made in this block (and the tasks it starts) as the episode's."""
    token = _SCOPE.set(CallScope(episode_id, attempt))
    try:
        yield
    finally:
        _SCOPE.reset(token)


@contextlib.contextmanager
def scoped(**changes: Any) -> Iterator[None]:
    """Narrow the current scope (seat, turn, purpose, judge) for this block; nothing outside
    an episode's scope."""
    current = _SCOPE.get()
    if current is None:
        yield
        return
    token = _SCOPE.set(replace(current, **changes))
    try:
        yield
    finally:
        _SCOPE.reset(token)


def canonical(value: Any) -> str:
    """The one JSON text of a value that its hash is taken of (sorted keys, no spaces)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_hash(value: Any) -> str:
    """SHA-256 (hex) of a value's canonical JSON: how a body is named in the ledger, and how a
    replay matches a request."""
    return hashlib.sha256(canonical(value).encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One call as it went: the request body exactly as sent (of its last try), the answer's
    text as the provider gave it, what it cost and how it ended."""

    scope: CallScope
    model: str
    """The model's name as the episode names it."""
    request: dict[str, Any]
    """The JSON body sent to `/chat/completions` (model, messages, sampling, response format)."""
    answer: str | None
    tokens: TokenCount
    latency_ms: float
    """Of the request that answered (or of the last one tried)."""
    attempts: int
    """Requests sent for this call (retries included)."""
    error_code: str | None = None
    error_message: str | None = None


class CallLedger(Protocol):
    """Keeps model calls; `record` never raises (a ledger that cannot write says so itself)."""

    async def record(self, call: ModelCall) -> None: ...
