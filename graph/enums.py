"""The enums of the stored world and the engine, registered once as GraphQL enums."""

import strawberry

from parley.core.errors import ErrorCode
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

strawberry.enum(
    RelationshipType,
    description="How well two agents know each other; stored as Sotopia's integer code 0..5.",
)
strawberry.enum(ErrorCode, name="UserErrorCode", description="Why a mutation refused its input.")
strawberry.enum(EpisodeStatus, description="Where an episode is in its life.")
strawberry.enum(EvaluationStatus, description="Where a re-judging's evaluation is.")
strawberry.enum(
    Redelivery, description="What a new worker does with an episode whose worker was lost."
)
strawberry.enum(SeatTimeout, description="What happens to a human seat that does not act in time.")
strawberry.enum(ActionType, description="What an agent did on its turn (Sotopia's action types).")
strawberry.enum(TurnOrder, description="Who acts when.")
strawberry.enum(SortOrder, description="Which way a list runs along its sort key.")
strawberry.enum(
    Aggregate,
    name="JudgeAggregate",
    description="How a judge panel's scores make one per agent and dimension: their MEAN or "
    "MEDIAN over the judge runs that gave scores; the overall is the mean of the dimensions.",
)
strawberry.enum(JudgeErrorCode, description="Why a judge run gave no valid scores.")
strawberry.enum(
    EventKind,
    name="EpisodeEventKind",
    description="SNAPSHOT is the state when a subscription starts; then STATUS, TURN and "
    "INJECTION (an environment message) events.",
)

__all__ = [
    "ActionType",
    "Aggregate",
    "EpisodeStatus",
    "ErrorCode",
    "EvaluationStatus",
    "EventKind",
    "JudgeErrorCode",
    "Redelivery",
    "RelationshipType",
    "SeatTimeout",
    "SortOrder",
    "TurnOrder",
]
