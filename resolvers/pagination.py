"""Cursor pagination: pages of a list after the item a cursor names, a capped page size."""

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, TypedDict, Unpack

from parley.core.errors import BadArgument
from parley.core.limits import has_utf8_form
from parley.resolvers.keyset import Keyset, Position, SortKey, SortOrder
from parley.resolvers.search import Hit, search
from parley.storage.tracking import TrackedDocuments

DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100
SLOTS = Keyset("slots", (SortKey("number", int, required=True),), SortOrder.ASCENDING)
"""An experiment's slots: a fixed plan, each named by its number."""


@dataclass(frozen=True)
class Page[T]:
    items: list[T]
    positions: list[Position]
    """Where each item sits in the list's order, for its cursor."""
    keyset: Keyset
    total: int
    has_next: bool
    after: bool
    """The page was asked for after a cursor."""

    def cursor(self, index: int) -> str:
        return self.keyset.cursor(self.positions[index])

    def with_items[U](self, items: list[U]) -> "Page[U]":
        return Page(items, self.positions, self.keyset, self.total, self.has_next, self.after)


def page_size(first: int | None) -> int:
    """The page size `first` asks for, refusing sizes outside 0..MAX_PAGE_SIZE."""
    limit = DEFAULT_PAGE_SIZE if first is None else first
    if not 0 <= limit <= MAX_PAGE_SIZE:
        raise BadArgument(f"first must be between 0 and {MAX_PAGE_SIZE}, got {limit}")
    return limit


def searchable(query: Any) -> bool:
    """False for a query RediSearch cannot run, whose filter values no stored record can match:
    one holding a NUL (the query parser stops there) or a lone surrogate (no UTF-8 form)."""
    text = str(query.query)
    return "\x00" not in text and has_utf8_form(text)


class PageArgs(TypedDict, total=False):
    """Which page of a list to read, and how: `first` items after the one the cursor `after`
    names, in `order` (the list's own when None); with `fields` (record field names) the records
    hold only those (see resolvers/search.py), and records held in `documents` are not fetched
    again."""

    first: int | None
    after: str | None
    order: SortOrder | None
    fields: Collection[str] | None
    documents: TrackedDocuments | None


async def fetch_hits(query: Any, keyset: Keyset, **page: Unpack[PageArgs]) -> Page[Hit[Any]]:
    """One page of a redis-om FindQuery and its total count, in one round trip (two when
    documents are read)."""
    after = page.get("after")
    limit = page_size(page.get("first"))
    position = None if after is None else keyset.position(after)
    if not searchable(query):
        return Page([], [], keyset, 0, False, after is not None)
    order = page.get("order") or keyset.default
    found = await search(
        query, keyset, order, position, limit, page.get("fields"), page.get("documents")
    )
    positions = [hit.position for hit in found.hits]
    return Page(found.hits, positions, keyset, found.total, found.has_next, after is not None)


async def fetch_page(query: Any, keyset: Keyset, **page: Unpack[PageArgs]) -> Page[Any]:
    """`fetch_hits`, as records."""
    found = await fetch_hits(query, keyset, **page)
    return found.with_items([hit.record for hit in found.items])


def numbered(
    count: int, first: int | None, after: str | None, order: SortOrder | None = None
) -> Page[int]:
    """A page of the numbers 0..count-1 of a fixed list (an experiment's slots), after the
    number the cursor `after` names."""
    limit = page_size(first)
    number = None if after is None else SLOTS.position(after)[0]
    assert number is None or isinstance(number, int)
    if (order or SLOTS.default) is SortOrder.ASCENDING:
        start = 0 if number is None else max(number + 1, 0)
        numbers = list(range(start, min(start + limit, count)))
        more = start + limit < count
    else:
        top = count - 1 if number is None else min(number - 1, count - 1)
        numbers = list(range(top, max(top - limit, -1), -1))
        more = top - limit >= 0
    positions: list[Position] = [(n,) for n in numbers]
    return Page(numbers, positions, SLOTS, count, more, after is not None)
