"""What a person holding only a seat token may ask: their seat, nothing else (and, judged the
same way, what a rater token may ask: graph/rater_access.py).

Where the API has tokens, a participant is not given one: the seat page sends
`Authorization: Seat <seat token>` (a websocket, `{"seatToken": …}` in connection_init). The
credential is looked up when it arrives (lifecycle/seats.py `Seats.holder`): an unknown one is
refused like a wrong bearer token, a known one scopes the request to its one seat of its one
episode. Such a request may only read that seat's view (`seatView`), play its turn
(`submitAction`) and follow what its agent sees (`episodeEvents` with `as`), each naming that
episode and seat (`SEAT_FIELDS`); every other root field needs an API token.

The decision is taken once per executed operation, on the operation graphql-core chose to run:
`SeatScopedExecutor.build` is where every path (HTTP POST and GET, both websocket protocols,
the subscription fanout) turns a document into the one operation it executes. A document of
several operations must name the one to run (`names_its_operation`), so that no reader of it
can take another for it.
"""

from collections.abc import Mapping
from typing import Any

from graphql import (
    GraphQLError,
    OperationDefinitionNode,
    OperationType,
    parse,
)
from graphql.execution.collect_fields import collect_fields
from graphql.execution.executor import Executor
from graphql.execution.values import get_argument_values
from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from parley.graph.context import Context
from parley.graph.rater_access import RATER_FIELDS, RATER_REFUSED
from parley.graph.scoped_fields import ScopedField, offered_token

SEAT_SCHEME = "seat"


SEAT_FIELDS: dict[OperationType, dict[str, ScopedField]] = {
    OperationType.QUERY: {"seatView": ScopedField(("episodeId",), ("seat",))},
    OperationType.MUTATION: {
        "submitAction": ScopedField(("input", "episodeId"), ("input", "seat"))
    },
    OperationType.SUBSCRIPTION: {"episodeEvents": ScopedField(("id",), ("as",))},
}
"""Every root field a seat credential may use; any other needs an API token."""
FORBIDDEN = {"code": "FORBIDDEN"}
REFUSED = (
    "a seat token grants only seatView, submitAction and episodeEvents(as: …) of its own seat; "
    "other operations need an API token"
)
NAME_THE_OPERATION = (
    "with a seat or rater token, a document of several operations needs operationName to say "
    "which to run"
)


def refusal(message: str) -> GraphQLError:
    return GraphQLError(message, extensions=FORBIDDEN)


def names_its_operation(query: str | None, operation_name: str | None, max_tokens: int) -> bool:
    """Whether the request says which operation runs: one operation, or operationName given (a
    document that does not parse is left to the normal path to report)."""
    if operation_name is not None or not query:
        return True
    try:
        document = parse(query, no_location=True, max_tokens=max_tokens)
    except GraphQLError:
        return True
    operations = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    return len(operations) <= 1


def seat_connection(params: object) -> str | None:
    """The seat token a websocket connection_init payload offers, if any."""
    return offered_token(params, "seatToken")


def within(
    executor: Executor[Any],
    fields: Mapping[OperationType, Mapping[str, ScopedField]],
    owner: tuple[object, object],
) -> bool:
    """Whether every root field the executor's operation runs is one of `fields` naming
    `owner` (an episode and seat, a study and rater) in its arguments (fields skipped by @skip
    or @include do not run)."""
    schema, operation = executor.schema, executor.operation
    root = schema.get_root_type(operation.operation)
    allowed = fields.get(operation.operation, {})
    if root is None:
        return False
    try:
        collected = collect_fields(
            schema, executor.fragments, executor.variable_values, root, operation
        )
    except RecursionError:
        return False
    for details in collected.grouped_field_set.values():
        for detail in details:
            name = detail.node.name.value
            if name == "__typename":
                continue
            field = allowed.get(name)
            if field is None:
                return False
            try:
                arguments = get_argument_values(
                    root.fields[name],
                    detail.node,
                    executor.variable_values,
                    detail.fragment_variable_values,
                )
            except GraphQLError:
                return False
            first, second = field.paths
            if (argument(arguments, first), argument(arguments, second)) != owner:
                return False
    return True


def argument(arguments: dict[str, Any], path: tuple[str, ...]) -> object:
    value: object = arguments
    for name in path:
        value = value.get(name) if isinstance(value, dict) else None
    return value


def refused(executor: Executor[Any]) -> GraphQLError | None:
    """Why the scoped credential the request holds (a seat's, a rater's) does not grant the
    executor's operation; None when it does, or when the request holds none."""
    context = executor.context_value
    if not isinstance(context, Context):
        return None
    seat, rater = context.seat, context.rater
    if seat is not None and not within(executor, SEAT_FIELDS, (seat.episode_id, seat.seat)):
        return refusal(REFUSED)
    if rater is not None and not within(executor, RATER_FIELDS, (rater.study_id, rater.rater)):
        return refusal(RATER_REFUSED)
    return None


class SeatScopedExecutor(StrawberryGraphQLCoreExecutionContext):
    """graphql-core's executor, refusing an operation that a seat (or rater) credential does
    not grant.

    `build` is where graphql-core picks the operation to run (the one named, or Strawberry's
    choice when none is: the first) and coerces its variables, for every request; an operation
    refused here never starts, and its refusal says nothing of any episode or seat.
    """

    @classmethod
    def build(cls, *args: Any, **kwargs: Any) -> list[GraphQLError] | Executor[Any]:
        built = super().build(*args, **kwargs)
        if isinstance(built, Executor) and (error := refused(built)) is not None:
            return [error]
        return built
