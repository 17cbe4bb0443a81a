"""Errors as GraphQL reports them: arguments refused with a code, crashes masked."""

from graphql import GraphQLError
from strawberry.extensions import MaskErrors

from resolvers.errors import BadArgument

BAD_USER_INPUT = {"code": "BAD_USER_INPUT"}


class UserInputError(GraphQLError):
    """An argument the API refuses (an unknown episode to follow, a malformed pair)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, extensions=BAD_USER_INPUT)


def is_unexpected(error: GraphQLError) -> bool:
    """Mask crashes only; validation, limit and input errors keep their message.

    A crash is a plain exception raised while executing: in a field (the error has a path) or in a
    subscription's event stream (the error points nowhere in the document). One that points into
    the document without a path comes from validating it, even when a scalar's parser raised a
    plain exception there (as int() does for an integer literal of over 4,300 digits).
    """
    original = error.original_error
    if original is None or isinstance(original, GraphQLError | BadArgument):
        return False
    return error.path is not None or not error.nodes


class ErrorPolicy(MaskErrors):
    """MaskErrors for crashes, and the BAD_USER_INPUT code for arguments the service layer
    refused (it raises BadArgument, knowing nothing of GraphQL)."""

    def __init__(self) -> None:
        super().__init__(should_mask_error=is_unexpected)

    def _process_errors(self, errors: list[GraphQLError]) -> list[GraphQLError]:
        return [_coded(error) for error in super()._process_errors(errors)]


def _coded(error: GraphQLError) -> GraphQLError:
    if not isinstance(error.original_error, BadArgument):
        return error
    return GraphQLError(
        error.message,
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        path=error.path,
        original_error=error.original_error,
        extensions=BAD_USER_INPUT,
    )
