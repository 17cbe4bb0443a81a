"""Values the Lua scripts and their Python callers share, besides the records' own (statuses,
fields): how a transition begins an attempt, how a pause is asked for, and what scripts
answer. storage/scripts.py hands each to the scripts by name."""

from enum import StrEnum
from typing import Literal

AttemptMode = Literal["none", "restart", "resume"]
"""How a transition begins a new attempt: not at all, from scratch, or keeping the turns."""

PauseMode = Literal["pause", "step"]
"""Pause a running episode before its next turn, or after one more."""


class ActRefusal(StrEnum):
    """Why a person's action was not stored."""

    GONE = "gone"
    TOKEN = "token"
    NOT_HUMAN = "not_human"
    NOT_AWAITED = "not_awaited"
    STATUS = "status"
    """The episode is not waiting (its status follows)."""


class ImportOutcome(StrEnum):
    """What storing an imported experiment (or model call) did."""

    CREATED = "created"
    SKIPPED = "skipped"
    NAMED = "named"
    INCOMPLETE = "incomplete"
    MISSING = "missing"
    """A model call's episode is not stored."""
    UNORDERED = "unordered"
    """A model call whose entry id comes before its ledger's last, and is not stored."""


class RelationshipRefusal(StrEnum):
    """Why a new relationship was not written (OK: it was)."""

    OK = "ok"
    AGENT = "agent"
    PAIR = "pair"
    ID = "id"


class RatingRefusal(StrEnum):
    """Why a rater's rating or draft was not stored."""

    GONE = "gone"
    """No such study."""
    TOKEN = "token"
    """The token is not that rater's."""
    CLOSED = "closed"
    STALE = "stale"
    """Saved meanwhile (another tab or device): not at the revision it was based on."""


class LimitField(StrEnum):
    """The fields of a provider key's allowance (`keys.provider_limit`)."""

    REQUESTS_AT = "requests_at"
    """When the requests rate next lets one go (epoch seconds)."""
    TOKENS_AT = "tokens_at"
    """When the tokens rate next lets one go."""
    HOLD_UNTIL = "hold_until"
    """Until when a 429 holds every process's calls."""
    MINUTE = "minute"
    """The minute (epoch seconds over 60) `requests` and `tokens` are counted in."""
    REQUESTS = "requests"
    TOKENS = "tokens"
    RATE_LIMITED = "rate_limited"
    """429 answers seen."""
