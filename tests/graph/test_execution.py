"""What graph/execution.py relies on in the installed graphql-core, pinned: the executor methods it
overrides (their names, parameters, and that completion goes through them), the private
`_relevant_sub_fields` cache that per-event executors share, and the attributes the answer cache
reads. A graphql-core that changes any of these fails here by name, instead of a cache that
silently stops being used or a leak that silently returns."""

import inspect
from typing import Any

from graphql import ExecutionResult, GraphQLError, build_schema, execute, parse
from graphql.execution.collect_fields import FieldDetails
from graphql.execution.executor import Executor

from parley.graph.execution import AnswerCachingExecutor, EventScopedExecutor, UnsuggestingExecutor

SCHEMA = build_schema(
    "enum Colour { RED GREEN }"
    " type Item { name: String! }"
    " type Query { items(colour: Colour): [Item!]! }"
)
DOCUMENT = parse("query($colour: Colour) { items(colour: $colour) { name } }")
ROOT = {"items": [{"name": "a"}, {"name": "b"}]}
ANSWER = ExecutionResult(data={"items": [{"name": "a"}, {"name": "b"}]}, errors=None)


def built(executor: type[Executor[Any]], variables: dict[str, Any] | None = None) -> Any:
    return executor.build(SCHEMA, DOCUMENT, ROOT, raw_variable_values=variables)


def test_the_overrides_have_graphql_cores_parameters() -> None:
    for name in ("complete_list_value", "complete_object_value"):
        ours = inspect.signature(getattr(AnswerCachingExecutor, name)).parameters
        theirs = inspect.signature(getattr(Executor, name)).parameters
        assert list(ours) == list(theirs), name
    assert list(inspect.signature(Executor.build_per_event_executor).parameters) == [
        "self",
        "payload",
    ]
    assert "hide_suggestions" in inspect.signature(Executor.build).parameters


def test_list_items_and_objects_are_completed_through_the_overridable_methods() -> None:
    """The answer cache is reached only if graphql-core completes each list and each object in
    a list through these methods (an upgrade that inlined them would bypass it unnoticed: the
    answers would be the same, only slower)."""
    calls: list[str] = []

    class Recording(Executor[Any]):
        def complete_list_value(self, *args: Any) -> Any:
            calls.append("list")
            return super().complete_list_value(*args)

        def complete_object_value(self, *args: Any) -> Any:
            calls.append("object")
            return super().complete_object_value(*args)

    assert execute(SCHEMA, DOCUMENT, ROOT, executor_class=Recording) == ANSWER
    assert calls == ["list", "object", "object"]


def test_the_answer_cache_reads_these_executor_and_field_attributes() -> None:
    executor = built(Executor)
    assert isinstance(executor, Executor)
    assert executor.collected_errors.errors == []
    assert executor.fragments == {}
    assert {"node", "defer_usage", "fragment_variable_values"} <= set(FieldDetails._fields)


def test_graphql_core_shares_the_sub_field_cache_between_events_and_ours_does_not() -> None:
    """graphql-core's per-event executor is a shallow copy: its `_relevant_sub_fields` (keyed by
    lists made fresh per event) is the parent's, and grows by every event. The day it is not,
    EventScopedExecutor can go."""
    parent = built(Executor)
    event = parent.build_per_event_executor(ROOT)
    assert parent._relevant_sub_fields == {}
    assert event._relevant_sub_fields is parent._relevant_sub_fields
    assert event.execute_operation() == ANSWER
    assert len(parent._relevant_sub_fields) == 1  # the event's entry, left in the parent's

    ours = built(EventScopedExecutor)
    event = ours.build_per_event_executor(ROOT)
    assert event._relevant_sub_fields is not ours._relevant_sub_fields
    assert event.execute_operation() == ANSWER
    assert ours._relevant_sub_fields == {}


def test_variables_are_coerced_with_suggestions_unless_hidden() -> None:
    errors = built(Executor, {"colour": "RDE"})
    assert isinstance(errors, list) and "Did you mean" in errors[0].message
    errors = built(UnsuggestingExecutor, {"colour": "RDE"})
    assert isinstance(errors, list) and isinstance(errors[0], GraphQLError)
    assert "RDE" in errors[0].message and "Did you mean" not in errors[0].message
    assert "RED" not in errors[0].message
