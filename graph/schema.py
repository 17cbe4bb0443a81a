"""Assembles the schema: root types and the extensions that guard it."""

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache

import strawberry
from graphql import (
    ASTValidationRule,
    DocumentNode,
    GraphQLError,
    GraphQLSchema,
    ValidationContext,
    parse,
    validate,
)
from graphql.validation import NoSchemaIntrospectionCustomRule
from strawberry.extensions import SchemaExtension, max_aliases, query_depth_limiter
from strawberry.schema.validation_rules.maybe_null import MaybeNullValidationRule
from strawberry.schema.validation_rules.one_of import OneOfInputValidationRule
from strawberry.types import ExecutionContext
from strawberry.types.base import get_object_definition

from parley.graph.answer_cache import AnswerCache, Printed
from parley.graph.episode_types import Episode
from parley.graph.errors import ErrorPolicy, log_error
from parley.graph.execution import AnswerCachingExecutor
from parley.graph.mutation import Mutation
from parley.graph.projection import own_types
from parley.graph.query import Query
from parley.graph.subscription import Subscription
from parley.graph.types import Agent, Relationship, Scenario

CACHED_DOCUMENTS = 256
"""Parsed and validated documents kept (clients send the same few documents over and over)."""
CACHED_ANSWERS = 2_000
"""Completed list items kept (graph/answer_cache.py): 1,000 episodes with every field (half of
them of 20 turns) took 21 MiB, so about 40 MiB at most for records like those."""
KEPT_TYPES = {
    get_object_definition(t, strict=True).name: own_types(t)
    for t in (Agent, Scenario, Relationship, Episode)
}
"""The record types list queries return (with a version: graph/listed.py), whose completed
answers are kept, each with the types those answers may be made of."""


@dataclass(frozen=True)
class Limits:
    """What one document may ask for."""

    max_depth: int = 10
    max_aliases: int = 30
    max_tokens: int = 5_000
    introspection: bool = True


def depth_limit(max_depth: int) -> type[ASTValidationRule]:
    """Strawberry's depth rule, which measures the document when it is made and looks up each
    spread fragment by name: a spread of an unknown fragment raised KeyError out of validation
    (answered with the message `'Name'`). Such a document is left to KnownFragmentNamesRule,
    which refuses it with a validation error; its depth is not measured."""
    measured = query_depth_limiter.create_validator(max_depth, should_ignore=None)

    class DepthLimit(measured):  # type: ignore[valid-type, misc]
        def __init__(self, context: ValidationContext) -> None:
            try:
                super().__init__(context)
            except KeyError:
                ASTValidationRule.__init__(self, context)

    return DepthLimit


def validation_rules(limits: Limits) -> list[type[ASTValidationRule]]:
    """Built once per schema, so the validation cache (keyed by the rules) hits across requests;
    the QueryDepthLimiter and MaxAliasesLimiter extensions would make new rule classes per request.
    """
    rules: list[type[ASTValidationRule]] = [
        depth_limit(limits.max_depth),
        max_aliases.create_validator(limits.max_aliases),
    ]
    if not limits.introspection:
        rules.append(NoSchemaIntrospectionCustomRule)
    return rules


cached_parse = lru_cache(maxsize=CACHED_DOCUMENTS)(parse)


@lru_cache(maxsize=CACHED_DOCUMENTS)
def cached_validate(
    schema: GraphQLSchema, document: DocumentNode, rules: tuple[type[ASTValidationRule], ...]
) -> list[GraphQLError]:
    """Strawberry's validation (`rules` and its own two), with no suggestion in any error
    ("Did you mean …?" would name arguments, types, enum values and input fields the schema
    holds, also with introspection off)."""
    every = (*rules, MaybeNullValidationRule, OneOfInputValidationRule)
    return validate(schema, document, every, hide_suggestions=True)


class Documents(SchemaExtension):
    """What Strawberry's AddValidationRules, MaxTokensLimiter, ParserCache and ValidationCache
    do, as one extension: a document is parsed under the token limit and validated with the
    limit rules, each step through a process-wide cache (one extension's hooks per request
    instead of four's)."""

    def __init__(self, rules: tuple[type[ASTValidationRule], ...], max_tokens: int) -> None:
        super().__init__()
        self.rules = rules
        self.max_tokens = max_tokens

    def on_operation(self) -> Iterator[None]:
        context = self.execution_context
        context.parse_options["max_tokens"] = self.max_tokens
        context.validation_rules = context.validation_rules + self.rules
        yield

    def on_parse(self) -> Iterator[None]:
        context = self.execution_context
        context.graphql_document = cached_parse(context.query, **context.parse_options)
        yield

    def on_validate(self) -> Iterator[None]:
        context = self.execution_context
        assert context.graphql_document is not None
        context.pre_execution_errors = cached_validate(
            context.schema._schema, context.graphql_document, context.validation_rules
        )
        yield


def extensions(limits: Limits) -> list[Callable[[], SchemaExtension]]:
    rules = tuple(validation_rules(limits))
    return [lambda: Documents(rules, limits.max_tokens), ErrorPolicy]


class Schema(strawberry.Schema):
    """Logs each error by what it is (graph/errors.py `log_error`), not all as crashes."""

    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        for error in errors:
            log_error(error)


def build_schema(limits: Limits | None = None, answers: int = CACHED_ANSWERS) -> strawberry.Schema:
    caches = {"answers": AnswerCache(answers), "printed": Printed(), "own_types": KEPT_TYPES}
    executor = type("Executor", (AnswerCachingExecutor,), caches)
    return Schema(
        query=Query,
        mutation=Mutation,
        subscription=Subscription,
        extensions=extensions(limits or Limits()),
        execution_context_class=executor,
    )


schema = build_schema()
