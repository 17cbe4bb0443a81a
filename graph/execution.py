"""Every override of graphql-core's executor (3.3) Parley makes, and why; nothing else.

Each reaches past graphql-core's documented API, so tests/graph/test_execution.py pins what it
relies on in the installed graphql-core (the names and parameters of the overridden methods, the
private `_relevant_sub_fields` cache and how per-event executors share it): an upgrade that
changes one fails there, by name, instead of answering wrongly.

- `EventScopedExecutor` gives each subscription event its own sub-field cache. graphql-core
  copies the executor shallowly for every event, so all events of a subscription shared one
  cache keyed by lists made fresh per event: it gained an entry per delivered event and was
  never emptied (about 1.6 KiB per event, measured by bench/soak.py).
- `UnsuggestingExecutor` coerces variables with no suggestion in an error (a misspelled enum
  value or input field is named as it was sent, never with the schema's own names).
- `AnswerCachingExecutor` completes list items and objects through graph/answer_cache.py, which
  reuses the completed answers of records whose stored fields are unchanged.
"""

from collections.abc import Mapping
from typing import Any

from graphql import (
    GraphQLError,
    GraphQLList,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLResolveInfo,
    get_nullable_type,
)
from graphql.execution.collect_fields import FieldDetailsList
from graphql.execution.executor import Executor
from graphql.pyutils import Path

from parley.graph.answer_cache import AnswerCache, Printed, Shapes, cached_completion, kept_answers
from parley.graph.seat_access import SeatScopedExecutor


class EventScopedExecutor(SeatScopedExecutor):
    """Gives each subscription event its own sub-field cache (see the module's docstring)."""

    def build_per_event_executor(self, payload: Any) -> Executor[Any]:
        executor = super().build_per_event_executor(payload)
        executor._relevant_sub_fields = {}
        return executor


class UnsuggestingExecutor(EventScopedExecutor):
    """Coerces variables with no suggestion in an error."""

    @classmethod
    def build(cls, *args: Any, **kwargs: Any) -> list[GraphQLError] | Executor[Any]:
        return super().build(*args, **{**kwargs, "hide_suggestions": True})


class AnswerCachingExecutor(UnsuggestingExecutor):
    """Reuses the completed answers of list items whose stored fields are unchanged. A subclass
    sets the caches and `own_types` (type name -> the types its kept answers may be made of:
    graph/projection.py `own_types`)."""

    answers: AnswerCache
    printed: Printed
    own_types: Mapping[str, frozenset[str]]
    _shapes: Shapes | None = None

    @property
    def shapes(self) -> Shapes:
        if self._shapes is None:
            self._shapes = Shapes(self.own_types, self.fragments, self.printed)
        return self._shapes

    def complete_list_value(
        self,
        return_type: GraphQLList[GraphQLOutputType],
        field_details_list: FieldDetailsList,
        info: GraphQLResolveInfo[Any],
        path: Path,
        result: Any,
        position_context: Any,
    ) -> Any:
        item_type = get_nullable_type(return_type.of_type)
        if isinstance(item_type, GraphQLObjectType) and isinstance(result, list) and result:
            kept = kept_answers(self.answers, self.shapes, item_type, field_details_list, result)
            if kept is not None:
                return kept
        return super().complete_list_value(
            return_type, field_details_list, info, path, result, position_context
        )

    def complete_object_value(
        self,
        return_type: GraphQLObjectType,
        field_details_list: FieldDetailsList,
        info: GraphQLResolveInfo[Any],
        path: Path,
        result: Any,
        position_context: Any,
    ) -> Any:
        def complete() -> Any:
            return super(AnswerCachingExecutor, self).complete_object_value(
                return_type, field_details_list, info, path, result, position_context
            )

        errors = self.collected_errors.errors
        return cached_completion(
            self.answers, self.shapes, errors, return_type, field_details_list, result, complete
        )
