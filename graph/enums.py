"""Python enums exposed as GraphQL enums (registered once, used everywhere in graph/)."""

from enum import Enum

import strawberry

from resolvers.errors import ErrorCode
from storage.models import EpisodeStatus, RelationshipType

strawberry.enum(
    RelationshipType,
    description="How well two agents know each other; stored as Sotopia's integer code 0..5.",
)
strawberry.enum(ErrorCode, name="UserErrorCode", description="Why a mutation refused its input.")


class ActionType(Enum):
    NONE = "none"
    SPEAK = "speak"
    NON_VERBAL_COMMUNICATION = "non-verbal communication"
    ACTION = "action"
    LEAVE = "leave"


class TurnOrder(Enum):
    ROUND_ROBIN = "round-robin"
    SIMULTANEOUS = "simultaneous"
    RANDOM = "random"


class EventKind(Enum):
    SNAPSHOT = "snapshot"
    STATUS = "status"
    TURN = "turn"


strawberry.enum(EpisodeStatus, description="Where an episode is in its life.")
strawberry.enum(ActionType, description="What an agent did on its turn (Sotopia's action types).")
strawberry.enum(TurnOrder, description="Who acts when.")
strawberry.enum(
    EventKind,
    name="EpisodeEventKind",
    description="SNAPSHOT is the state when a subscription starts; then STATUS and TURN events.",
)

__all__ = ["ActionType", "EpisodeStatus", "ErrorCode", "EventKind", "RelationshipType", "TurnOrder"]
