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
    """The agent's index (0-based) whose turn asked, or whose scores a judge's call asked for
    (None for a judge's call about every agent at once)."""
    turn: int | None = None
    judge: str | None = None
    """The judge run that asked: `<model>#<repeat>`."""


CANCELLED = "cancelled"
"""The error code of a call cut short, or not sent, when a sibling request's failure stopped
the others (engine/errors.py `gather_or_fail`: a judge's, or a turn's): a replay waits there
until the same failure stops it again."""


class Served(StrEnum):
    """Where the answer of a call that asked no model came from."""

    REPLAY = "replay"
    """The ledger of the episode being replayed."""
    CACHE = "cache"
    """The ledger of any episode that sent the identical request (an experiment's cache mode)."""


class ReplayCode(StrEnum):
    """Why a replay does not match its source."""

    REPLAY_MISSING_CALL = "REPLAY_MISSING_CALL"
    """A request the source's ledger does not hold: the prompts changed."""
    REPLAY_DIVERGED = "REPLAY_DIVERGED"
    """Every request was found, yet the transcript, the scores or the outcome differ."""


@dataclass(frozen=True, slots=True)
class Recorded:
    """An answer recorded in a ledger for a request: what a replay or the cache gives back
    instead of asking the model (a recorded failure fails again)."""

    episode_id: str
    """The episode whose ledger holds it."""
    answer: str | None
    error_code: str | None = None
    error_message: str | None = None


class AnswerSource(Protocol):
    """Answers requests from a ledger: a replay (a request it lacks stops the episode) or the
    cache (a request it lacks goes to the model)."""

    @property
    def served(self) -> Served: ...

    async def find(self, scope: CallScope, request: str) -> Recorded | None:
        """The answer recorded for the request of this hash, in this scope if it can."""
        ...


_SCOPE: ContextVar[CallScope | None] = ContextVar("parley_call_scope", default=None)
_SOURCE: ContextVar[AnswerSource | None] = ContextVar("parley_answer_source", default=None)


def current_scope() -> CallScope | None:
    return _SCOPE.get()


def current_source() -> AnswerSource | None:
    return _SOURCE.get()


@contextlib.contextmanager
def recording(episode_id: str, attempt: int, source: AnswerSource | None = None) -> Iterator[None]:
    """Record the calls made in this block (and the tasks it starts) as the episode's; with a
    `source`, answer them from it first."""
    token = _SCOPE.set(CallScope(episode_id, attempt))
    answers = _SOURCE.set(source)
    try:
        yield
    finally:
        _SOURCE.reset(answers)
        _SCOPE.reset(token)


def missing(scope: CallScope, request: str) -> str:
    """Why a replay stopped at a request its source's ledger does not hold."""
    return (
        f"{ReplayCode.REPLAY_MISSING_CALL}: the source's ledger holds no call for {where(scope)} "
        f"(request {request}): the prompts changed, or the ledger lacks calls the source made"
    )


def where(scope: CallScope) -> str:
    """A scope in words, for a reason a person reads."""
    if scope.purpose == CallPurpose.JUDGE or scope.judge is not None:
        kind = "re-ask of " if scope.purpose == CallPurpose.REASK else ""
        whose = "" if scope.seat is None else f" on seat {scope.seat}"
        return f"{kind}judge {scope.judge}{whose}"
    kind = "re-ask at " if scope.purpose == CallPurpose.REASK else ""
    return f"{kind}seat {scope.seat}'s turn {scope.turn}"


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
    return text_hash(canonical(value))


def text_hash(text: str) -> str:
    """`content_hash` of the value whose canonical JSON is `text`."""
    return hashlib.sha256(text.encode()).hexdigest()


def canonical_request(request: dict[str, Any], parts: dict[str, str]) -> str:
    """`canonical(request)` from the canonical JSON already made of some of its keys' values
    (`parts`, by key): a request's messages are encoded once, for their own hashes and the
    request's."""
    members = (
        f"{canonical(key)}:{parts[key] if key in parts else canonical(value)}"
        for key, value in sorted(request.items())
    )
    return "{" + ",".join(members) + "}"


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
    served: Served | None = None
    """Set when no model was asked: where the answer came from."""
    served_from: str | None = None
    """The episode whose ledger gave the answer."""


class CallLedger(Protocol):
    """Keeps model calls; `record` never raises (a ledger that cannot write says so itself)."""

    async def record(self, call: ModelCall) -> None: ...
