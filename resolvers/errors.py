"""Expected failures, returned to clients as data (`userErrors`), never as crashes."""

from dataclasses import dataclass
from enum import Enum

from pydantic import ValidationError


class ErrorCode(Enum):
    NOT_FOUND = "NOT_FOUND"
    INVALID = "INVALID"
    CONFLICT = "CONFLICT"
    IN_USE = "IN_USE"
    FORBIDDEN = "FORBIDDEN"
    """A seat token that is not the seat's."""


@dataclass(frozen=True)
class UserError:
    field: list[str]
    message: str
    code: ErrorCode


class BadArgument(ValueError):
    """A query argument that cannot be served (bad cursor, page size over the cap); GraphQL
    reports it with its message and the code BAD_USER_INPUT."""


def camel(name: str) -> str:
    """The GraphQL name of a stored field (`pk` is exposed as `id`)."""
    if name == "pk":
        return "id"
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def from_validation(error: ValidationError, prefix: str = "input") -> list[UserError]:
    """One user error per pydantic error, with the GraphQL (camelCase) field path."""
    errors = []
    for item in error.errors():
        path = [prefix, *(camel(str(p)) if isinstance(p, str) else str(p) for p in item["loc"])]
        message = item["msg"].removeprefix("Value error, ")
        errors.append(UserError(field=path, message=message, code=ErrorCode.INVALID))
    return errors


def not_found(kind: str, pk: str, field: str = "id") -> UserError:
    return UserError(["input", field], f"no {kind} with id {pk!r}", ErrorCode.NOT_FOUND)


def searchable_tag(tag: str) -> str:
    """`tag`, if the search index can look it up. It cannot for two values: a lone `|` (the
    separator of the index's TAG fields, which redis-om drops from a query, leaving it malformed)
    and anything holding DEL (U+007F), which RediSearch's query syntax cannot express, escaped or
    not."""
    if tag == "|" or "\x7f" in tag:
        raise BadArgument("A tag filter cannot be '|' alone or contain the DEL character (U+007F).")
    return tag
