"""Errors as GraphQL reports them: each with a code a client can act on, crashes masked.

Codes in `extensions.code` (README, "Errors"): BAD_USER_INPUT (an argument refused; fix it),
UNAVAILABLE (Redis cannot be reached; retryable, after `extensions.retryAfterSeconds`, and with
an idempotency key a retried start returns what was written), and INTERNAL ("Unexpected
error.", logged on the server).
"""

from typing import Any

import redis.exceptions
from graphql import GraphQLError
from strawberry.extensions import MaskErrors

from resolvers.errors import BadArgument

BAD_USER_INPUT = {"code": "BAD_USER_INPUT"}
RETRY_AFTER_SECONDS = 1
UNAVAILABLE = {"code": "UNAVAILABLE", "retryable": True, "retryAfterSeconds": RETRY_AFTER_SECONDS}
INTERNAL = {"code": "INTERNAL"}
OUTAGES = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)
"""What Redis raises while it is down, restarting or loading (BusyLoadingError is one)."""


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
    if original is None or isinstance(original, (GraphQLError, BadArgument, *OUTAGES)):
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


def client_errors(errors: list[GraphQLError]) -> list[GraphQLError]:
    """Errors as ErrorPolicy hands them to clients (for results made outside Strawberry's
    pipeline, graph/fanout.py)."""
    return ErrorPolicy()._process_errors(errors)


def _coded(error: GraphQLError) -> GraphQLError:
    original = error.original_error
    if isinstance(original, BadArgument):
        return _with(error, error.message, BAD_USER_INPUT)
    if isinstance(original, OUTAGES):
        message = f"storage is unavailable (Redis: {original}); retry in {RETRY_AFTER_SECONDS} s"
        return _with(error, message, UNAVAILABLE)
    return error


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
