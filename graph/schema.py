"""Assembles the schema: root types and the extensions that guard it."""

from collections.abc import Callable

import strawberry
from graphql import ASTValidationRule, GraphQLError
from strawberry.extensions import (
    AddValidationRules,
    MaskErrors,
    MaxTokensLimiter,
    ParserCache,
    SchemaExtension,
    ValidationCache,
    max_aliases,
    query_depth_limiter,
)

from graph.mutation import Mutation
from graph.query import Query
from graph.subscription import Subscription

MAX_DEPTH = 10
MAX_ALIASES = 30
MAX_TOKENS = 5_000
CACHED_DOCUMENTS = 256
"""Parsed and validated documents kept (clients send the same few documents over and over)."""


def is_unexpected(error: GraphQLError) -> bool:
    """Mask crashes only; validation, limit and input errors keep their message."""
    original = error.original_error
    return original is not None and not isinstance(original, GraphQLError)


# Built once, so the validation cache (keyed by the rules) hits across requests; the
# QueryDepthLimiter and MaxAliasesLimiter extensions would make new rule classes per request.
LIMIT_RULES: list[type[ASTValidationRule]] = [
    query_depth_limiter.create_validator(MAX_DEPTH, should_ignore=None),
    max_aliases.create_validator(MAX_ALIASES),
]


def extensions() -> list[Callable[[], SchemaExtension] | type[SchemaExtension]]:
    return [
        lambda: AddValidationRules(LIMIT_RULES),
        lambda: MaxTokensLimiter(max_token_count=MAX_TOKENS),
        lambda: MaskErrors(should_mask_error=is_unexpected),
        lambda: ParserCache(maxsize=CACHED_DOCUMENTS),
        lambda: ValidationCache(maxsize=CACHED_DOCUMENTS),
    ]


def build_schema() -> strawberry.Schema:
    return strawberry.Schema(
        query=Query, mutation=Mutation, subscription=Subscription, extensions=extensions()
    )


schema = build_schema()
