"""The enums of the stored world and the engine, registered once as GraphQL enums."""

from enum import Enum

import strawberry

from parley.core.errors import ErrorCode
from parley.engine.ledger import CallPurpose, ReplayCode, Served
from parley.engine.types import (
    ActionType,
    Aggregate,
    JudgeErrorCode,
    RelationshipType,
    TurnOrder,
)
from parley.resolvers.keyset import SortOrder
from parley.storage.events import EventKind
from parley.storage.models import EpisodeStatus, EvaluationStatus, Redelivery, SeatTimeout

_GRAPHQL: tuple[tuple[type[Enum], str | None, str], ...] = (
    (
        RelationshipType,
        None,
        "How well two agents know each other; stored as Sotopia's integer code 0..5.",
    ),
    (ErrorCode, "UserErrorCode", "Why a mutation refused its input."),
    (EpisodeStatus, None, "Where an episode is in its life."),
    (EvaluationStatus, None, "Where a re-judging's evaluation is."),
    (Redelivery, None, "What a new worker does with an episode whose worker was lost."),
    (SeatTimeout, None, "What happens to a human seat that does not act in time."),
    (ActionType, None, "What an agent did on its turn (Sotopia's action types)."),
    (TurnOrder, None, "Who acts when."),
    (SortOrder, None, "Which way a list runs along its sort key."),
    (
        Aggregate,
        "JudgeAggregate",
        "How a judge panel's scores make one per agent and dimension: their MEAN or MEDIAN "
        "over the judge runs that gave scores; the overall is the mean of the dimensions.",
    ),
    (JudgeErrorCode, None, "Why a judge run gave no valid scores."),
    (
        CallPurpose,
        "ModelCallPurpose",
        "Why a model was asked: an agent's TURN, the one REASK after an unusable answer (of a "
        "turn or a judge), or a JUDGE's scores.",
    ),
    (
        Served,
        "ModelCallServed",
        "Where the answer of a call that asked no model came from: REPLAY (the ledger of the "
        "episode replayed) or CACHE (an identical request's, in an experiment's cache mode).",
    ),
    (
        ReplayCode,
        None,
        "Why a replay does not match its source: REPLAY_MISSING_CALL (a request its ledger "
        "does not hold: the prompts changed) or REPLAY_DIVERGED (the transcript, scores or "
        "outcome differ).",
    ),
    (
        EventKind,
        "EpisodeEventKind",
        "SNAPSHOT is the state when a subscription starts; then STATUS, TURN and INJECTION "
        "(an environment message) events.",
    ),
)
"""Each enum, its GraphQL name (None: its own) and its description."""

for enum_type, name, description in _GRAPHQL:
    strawberry.enum(enum_type, name=name, description=description)

__all__ = [
    "ActionType",
    "Aggregate",
    "CallPurpose",
    "EpisodeStatus",
    "ErrorCode",
    "EvaluationStatus",
    "EventKind",
    "JudgeErrorCode",
    "Redelivery",
    "RelationshipType",
    "ReplayCode",
    "SeatTimeout",
    "Served",
    "SortOrder",
    "TurnOrder",
]
