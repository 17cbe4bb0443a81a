"""Errors as GraphQL reports them: each with a code a client can act on, crashes masked.

Codes in `extensions.code` (README, "Errors"): BAD_USER_INPUT (an argument refused; fix it),
UNAVAILABLE (Redis cannot be reached, refuses writes, or has lost Parley's indexes, which are then
made again; retryable, after
`extensions.retryAfterSeconds`, and with an idempotency key a retried start returns what was
written), and INTERNAL ("Unexpected error.", logged on the server).
"""

from typing import Any

from graphql import GraphQLError
from strawberry.exceptions import MissingQueryError
from strawberry.extensions import MaskErrors
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.utils.logging import StrawberryLogger

from parley.core.errors import BadArgument
from parley.storage.outages import is_outage

BAD_USER_INPUT = {"code": "BAD_USER_INPUT"}
RETRY_AFTER_SECONDS = 1
UNAVAILABLE = {"code": "UNAVAILABLE", "retryable": True, "retryAfterSeconds": RETRY_AFTER_SECONDS}
INTERNAL = {"code": "INTERNAL"}


class UserInputError(GraphQLError):
    """An argument the API refuses (an unknown episode to follow, a malformed pair)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, extensions=BAD_USER_INPUT)


CLIENT_FAULTS = (
    GraphQLError,
    BadArgument,
    InvalidOperationTypeError,
    CannotGetOperationTypeError,
    MissingQueryError,
)
"""What a client's request got wrong, raised before execution: a query where only subscriptions
are carried (legacy graphql-ws), an operation name the document lacks, no query at all."""


def is_unexpected(error: GraphQLError) -> bool:
    """Mask crashes only; validation, limit and input errors keep their message.

    A crash is a plain exception raised while executing: in a field (the error has a path) or in a
    subscription's event stream (the error points nowhere in the document). One that points into
    the document without a path comes from validating it, even when a scalar's parser raised a
    plain exception there (as int() does for an integer literal of over 4,300 digits).
    """
    original = error.original_error
    if original is None or isinstance(original, CLIENT_FAULTS) or is_outage(original):
        return False
    return error.path is not None or not error.nodes


class ErrorPolicy(MaskErrors):
    """MaskErrors for crashes, and the BAD_USER_INPUT code for arguments the service layer
    refused (it raises BadArgument, knowing nothing of GraphQL)."""

    def __init__(self) -> None:
        super().__init__(should_mask_error=is_unexpected)

    def _process_errors(self, errors: list[GraphQLError]) -> list[GraphQLError]:
        return [_coded(error) for error in super()._process_errors(errors)]

    def anonymise_error(self, error: GraphQLError) -> GraphQLError:
        masked = super().anonymise_error(error)
        return _with(masked, masked.message, INTERNAL)


def log_error(error: GraphQLError) -> None:
    """A crash at ERROR with its traceback (as Strawberry logs every error); Redis unavailable at
    WARNING, and what a client got wrong (a document that does not validate, a refused argument)
    at INFO, each in one line."""
    if is_unexpected(error):
        StrawberryLogger.error(error)
    elif is_outage(error.original_error):
        StrawberryLogger.logger.warning("%s", unavailable_message(error.original_error))
    else:
        StrawberryLogger.logger.info("refused: %s", error.message)


def client_errors(errors: list[GraphQLError]) -> list[GraphQLError]:
    """Errors as ErrorPolicy hands them to clients (for results made outside Strawberry's
    pipeline, graph/fanout.py)."""
    return ErrorPolicy()._process_errors(errors)


def _coded(error: GraphQLError) -> GraphQLError:
    original = error.original_error
    if isinstance(original, BadArgument):
        return _with(error, error.message, BAD_USER_INPUT)
    if is_outage(original):
        return _with(error, unavailable_message(original), UNAVAILABLE)
    return error


def unavailable_message(error: BaseException | None) -> str:
    return f"storage is unavailable (Redis: {error}); retry in {RETRY_AFTER_SECONDS} s"


def _with(error: GraphQLError, message: str, extensions: dict[str, Any]) -> GraphQLError:
    return GraphQLError(
        message,
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        path=error.path,
        original_error=error.original_error,
        extensions=extensions,
    )


def unavailable(response: Any) -> bool:
    """Whether a GraphQL response (or a batch) reports that storage is unavailable."""
    results = response if isinstance(response, list) else [response]
    return any(
        isinstance(error, dict) and (error.get("extensions") or {}).get("code") == "UNAVAILABLE"
        for result in results
        if isinstance(result, dict)
        for error in result.get("errors") or []
    )
