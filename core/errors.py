"""Expected failures, returned to clients as data (`userErrors`), never as crashes."""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from pydantic import BaseModel, ValidationError

from parley.core.limits import PATTERNS, has_utf8_form
from parley.core.wording import Location, problems


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


def field_path(prefix: Sequence[str], loc: Sequence[str | int]) -> list[str]:
    """A validation error's location as a GraphQL (camelCase) field path under `prefix`."""
    return [*prefix, *(camel(p) if isinstance(p, str) else str(p) for p in loc)]


def plain_problems(error: ValidationError) -> list[tuple[Location, str]]:
    """(location, message in plain words) of each pydantic error: no pydantic phrasing or
    documentation link ever reaches a user."""
    return problems(error, PATTERNS)


def from_validation(error: ValidationError, prefix: Sequence[str] = ("input",)) -> list[UserError]:
    """One user error per pydantic error, with the GraphQL (camelCase) field path."""
    return [
        UserError(field=field_path(prefix, loc), message=message, code=ErrorCode.INVALID)
        for loc, message in plain_problems(error)
    ]


def validated[M: BaseModel](
    schema: type[M], fields: Mapping[str, Any], prefix: Sequence[str] = ("input",)
) -> tuple[M | None, list[UserError]]:
    """`fields` as a `schema`, or why not: a user error per problem (`from_validation`)."""
    try:
        return schema(**fields), []
    except ValidationError as err:
        return None, from_validation(err, prefix)


def not_found(kind: str, pk: str, field: str = "id") -> UserError:
    return UserError(["input", field], f"no {kind} with id {pk!r}", ErrorCode.NOT_FOUND)


def searchable_tag(value: str) -> str:
    """`value`, if a TAG query can look it up (every filter value and id a search is built from
    passes here). It cannot for: nothing or only `|` characters (the separator of redis-om's TAG
    fields, which it drops from a query, leaving it malformed), and what `searchable_text`
    refuses."""
    if not value.strip("|") or not _expressible(value):
        raise BadArgument(
            "A filter value or id cannot be '|' alone or empty, or contain NUL, DEL (U+007F) "
            "or a lone surrogate."
        )
    return value


def searchable_text(value: str) -> str:
    """`value`, if a RediSearch query can hold it (a search text, not a whole value)."""
    if not _expressible(value):
        raise BadArgument("A search text cannot contain NUL, DEL (U+007F) or a lone surrogate.")
    return value


def _expressible(value: str) -> bool:
    """False for text RediSearch's query syntax cannot carry: NUL (its parser stops there),
    DEL (U+007F: it cannot express it, escaped or not), and a lone surrogate (no UTF-8 form to
    send)."""
    return "\x00" not in value and "\x7f" not in value and has_utf8_form(value)
