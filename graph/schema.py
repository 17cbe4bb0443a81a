"""Assembles the schema: root types and the extensions that guard it."""

from collections.abc import Callable

import strawberry
from graphql import GraphQLError
from strawberry.extensions import (
    MaskErrors,
    MaxAliasesLimiter,
    MaxTokensLimiter,
    QueryDepthLimiter,
    SchemaExtension,
)

from graph.mutation import Mutation
from graph.query import Query
from graph.subscription import Subscription

MAX_DEPTH = 10
MAX_ALIASES = 30
MAX_TOKENS = 5_000


def is_unexpected(error: GraphQLError) -> bool:
    """Mask crashes only; validation, limit and input errors keep their message."""
    original = error.original_error
    return original is not None and not isinstance(original, GraphQLError)


def extensions() -> list[Callable[[], SchemaExtension] | type[SchemaExtension]]:
    return [
        lambda: QueryDepthLimiter(max_depth=MAX_DEPTH),
        lambda: MaxAliasesLimiter(max_alias_count=MAX_ALIASES),
        lambda: MaxTokensLimiter(max_token_count=MAX_TOKENS),
        lambda: MaskErrors(should_mask_error=is_unexpected),
    ]


def build_schema() -> strawberry.Schema:
    return strawberry.Schema(
        query=Query, mutation=Mutation, subscription=Subscription, extensions=extensions()
    )


schema = build_schema()
