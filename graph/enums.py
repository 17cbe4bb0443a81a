"""Python enums exposed as GraphQL enums (registered once, used everywhere in graph/)."""

import strawberry

from resolvers.errors import ErrorCode
from storage.models import RelationshipType

strawberry.enum(
    RelationshipType,
    description="How well two agents know each other; stored as Sotopia's integer code 0..5.",
)
strawberry.enum(ErrorCode, name="UserErrorCode", description="Why a mutation refused its input.")

__all__ = ["ErrorCode", "RelationshipType"]
