"""What a person holding only a seat token may ask: their seat, nothing else.

Where the API has tokens, a participant is not given one: the seat page sends
`Authorization: Seat <seat token>` (a websocket, `{"seatToken": …}` in connection_init), and such a
request may only read its seat's view (`seatView`), play its turn (`submitAction`) and follow what
its agent sees (`episodeEvents` with `as`). Each of those checks the seat token it is given; the
omniscient episode is never reachable from them (graph/seat_types.py, graph/seats.py).
"""

from graphql import (
    FieldNode,
    GraphQLError,
    OperationDefinitionNode,
    OperationType,
    get_operation_ast,
    parse,
)

SEAT_SCHEME = "seat"
SEAT_FIELDS: dict[OperationType, frozenset[str]] = {
    OperationType.QUERY: frozenset({"seatView", "__typename"}),
    OperationType.MUTATION: frozenset({"submitAction"}),
    OperationType.SUBSCRIPTION: frozenset({"episodeEvents"}),
}
REFUSED = (
    "a seat token grants only seatView, submitAction and episodeEvents(as: …) with that seat's "
    "token; other operations need an API token"
)


def seat_scoped(query: str | None, operation_name: str | None) -> bool:
    """Whether the operation asks only for what a seat token grants (a document that does not
    parse is left to the normal path to report)."""
    if not query:
        return True
    try:
        operation = get_operation_ast(parse(query), operation_name)
    except GraphQLError:
        return True
    if not isinstance(operation, OperationDefinitionNode):
        return True
    allowed = SEAT_FIELDS[operation.operation]
    for selection in operation.selection_set.selections:
        if not isinstance(selection, FieldNode) or selection.name.value not in allowed:
            return False
        if operation.operation == OperationType.SUBSCRIPTION:
            named = {argument.name.value for argument in selection.arguments or ()}
            if not {"as", "seatToken"} <= named:
                return False
    return True


def seat_connection(params: object) -> bool:
    """A websocket connection_init payload that offers a seat token (and no API token)."""
    return isinstance(params, dict) and isinstance(params.get("seatToken"), str)
