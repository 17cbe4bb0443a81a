"""Where an item sits in a list's order, and the cursor that names it.

A list runs along sort keys, index fields its index keeps SORTABLE, the last of them the
record's id, so no two items tie. An item's position is its values of them; its cursor is that
position with the name of its list. The page after a cursor starts at the first item that sorts
after the position, whatever was inserted or deleted meanwhile, the item itself included: a
RediSearch FILTER of the position (`after`) ahead of the SORTBY of the order (`sortby`).

RediSearch sorts an item that lacks a key's value (a Sotopia episode has no `created_at`) after
every item that has one, in either direction, and among themselves by the keys that follow; the
FILTER says the same, testing `exists()` before comparing (comparing a missing value is an
error). Strings compare byte by byte in both, numbers as doubles.
"""

import base64
import binascii
import json
import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from parley.core.errors import BadArgument
from parley.core.limits import has_utf8_form

type Value = str | int | float | None
type Position = tuple[Value, ...]

PREFIX = "parley:"


class SortOrder(StrEnum):
    """Which way a list runs along its sort keys."""

    ASCENDING = "ASCENDING"
    DESCENDING = "DESCENDING"


@dataclass(frozen=True)
class SortKey:
    field: str
    """The index field, and the key of the stored JSON it indexes (`$.<field>`)."""
    kind: type[str] | type[float] | type[int]
    required: bool = False
    """Every item has a value (else a missing one sorts last)."""

    def valid(self, value: Any) -> bool:
        if value is None:
            return not self.required
        if isinstance(value, bool):
            return False
        if self.kind is str:  # a FILTER cannot hold NUL, nor Redis a lone surrogate
            return isinstance(value, str) and "\x00" not in value and has_utf8_form(value)
        if self.kind is int:
            return isinstance(value, int)
        return isinstance(value, int | float) and _finite(value)


@dataclass(frozen=True)
class Keyset:
    """A list's order: its name in cursors, its sort keys (the last the id) and the order it
    has when none is asked for."""

    name: str
    keys: tuple[SortKey, ...]
    default: SortOrder

    def cursor(self, position: Position) -> str:
        """The opaque cursor of the item at `position`."""
        values = json.dumps(list(position), ensure_ascii=False, separators=(",", ":"))
        return base64.urlsafe_b64encode(f"{PREFIX}{self.name}:{values}".encode()).decode()

    def position(self, cursor: str) -> Position:
        """The position a cursor of this list names; BadArgument for anything else."""
        try:
            text = base64.urlsafe_b64decode(cursor.encode()).decode()
            name, _, values = text.removeprefix(PREFIX).partition(":")
            if not text.startswith(PREFIX) or not values:
                raise ValueError(text)
            position = json.loads(values)
        except (ValueError, binascii.Error, UnicodeError, RecursionError):
            raise BadArgument(f"malformed cursor {cursor!r}") from None
        if name != self.name:
            raise BadArgument(f"cursor {cursor!r} is a cursor of {name}, not of {self.name}")
        if not isinstance(position, list) or len(position) != len(self.keys):
            raise BadArgument(f"malformed cursor {cursor!r}")
        if not all(key.valid(value) for key, value in zip(self.keys, position, strict=True)):
            raise BadArgument(f"malformed cursor {cursor!r}")
        return tuple(position)

    def sortby(self, order: SortOrder) -> list[str | int]:
        """FT.AGGREGATE's SORTBY arguments for `order` (without MAX)."""
        way = "ASC" if order is SortOrder.ASCENDING else "DESC"
        return ["SORTBY", 2 * len(self.keys), *(x for k in self.keys for x in (f"@{k.field}", way))]

    def after(self, order: SortOrder, position: Position) -> str:
        """A FILTER expression true of exactly the items that sort after `position`."""
        beyond = ">" if order is SortOrder.ASCENDING else "<"
        condition = "0"  # nothing sorts after an item equal to the position in every key
        for key, value in reversed(list(zip(self.keys, position, strict=True))):
            field = f"@{key.field}"
            if value is None:  # only items lacking it too, and then only by the keys after
                if condition != "0":
                    condition = f"(!exists({field}) && {condition})"
                continue
            literal = _literal(value)
            tie = "" if condition == "0" else f" || ({field} == {literal} && {condition})"
            condition = f"(!exists({field}) || {field} {beyond} {literal}{tie})"
        return condition


def _finite(value: int | float) -> bool:
    """Whether `value` is a finite double (JSON reads an integer of 400 digits exactly, and no
    double holds it)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _literal(value: str | int | float) -> str:
    """`value` as a RediSearch expression literal: a number as the double it is (Python's
    shortest round-trip form, without the `+` of an exponent, which the expression parser
    refuses), a string quoted, its quotes, backslashes and line breaks escaped (an unescaped
    line break ends the expression)."""
    if isinstance(value, str):
        escaped = "".join("\\" + c if c in "\\'\n\r" else c for c in value)
        return f"'{escaped}'"
    return repr(float(value)).replace("e+", "e")


ID = SortKey("pk", str)
CREATED = SortKey("created_at", float)


def by_id(name: str) -> Keyset:
    """A list in the order of its ids, ascending unless asked otherwise."""
    return Keyset(name, (ID,), SortOrder.ASCENDING)


def newest_first(name: str) -> Keyset:
    """A list by creation time then id, newest first unless asked otherwise."""
    return Keyset(name, (CREATED, ID), SortOrder.DESCENDING)
