"""Cursor pagination over RediSearch queries: opaque offset cursors, a capped page size."""

import base64
import binascii
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from resolvers.errors import BadArgument
from resolvers.records import has_utf8_form
from resolvers.search import Hit, search
from storage.tracking import TrackedDocuments

DEFAULT_PAGE_SIZE = 20
MAX_PAGE_SIZE = 100
_PREFIX = "parley:"


@dataclass(frozen=True)
class Page[T]:
    items: list[T]
    offset: int
    total: int

    @property
    def has_next(self) -> bool:
        return self.offset + len(self.items) < self.total


def encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"{_PREFIX}{offset}".encode()).decode()


def decode_cursor(cursor: str) -> int:
    try:
        text = base64.urlsafe_b64decode(cursor.encode()).decode()
        if not text.startswith(_PREFIX):
            raise ValueError(text)
        offset = int(text.removeprefix(_PREFIX))
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise BadArgument(f"malformed cursor {cursor!r}") from None
    if offset < 0:
        raise BadArgument(f"malformed cursor {cursor!r}")
    return offset


def window(first: int | None, after: str | None) -> tuple[int, int]:
    """(offset, limit) for `first`/`after`, refusing sizes outside 0..MAX_PAGE_SIZE."""
    limit = DEFAULT_PAGE_SIZE if first is None else first
    if not 0 <= limit <= MAX_PAGE_SIZE:
        raise BadArgument(f"first must be between 0 and {MAX_PAGE_SIZE}, got {limit}")
    offset = 0 if after is None else decode_cursor(after) + 1
    return offset, limit


def searchable(query: Any) -> bool:
    """False for a query RediSearch cannot run, whose filter values no stored record can match:
    one holding a NUL (the query parser stops there) or a lone surrogate (no UTF-8 form)."""
    text = str(query.query)
    return "\x00" not in text and has_utf8_form(text)


async def fetch_hits(
    query: Any,
    first: int | None,
    after: str | None,
    fields: Collection[str] | None = None,
    documents: TrackedDocuments | None = None,
) -> Page[Hit[Any]]:
    """One page of a redis-om FindQuery and its total count, in one round trip.

    With `fields` (record field names), the records hold only those (see resolvers/search.py);
    with `documents`, records held there are not fetched again.
    """
    offset, limit = window(first, after)
    if not searchable(query):
        return Page(items=[], offset=offset, total=0)
    found = await search(query, offset, limit, fields, documents)
    return Page(items=found.hits, offset=offset, total=found.total)


async def fetch_page(
    query: Any, first: int | None, after: str | None, fields: Collection[str] | None = None
) -> Page[Any]:
    """`fetch_hits`, as records."""
    page = await fetch_hits(query, first, after, fields)
    return Page([hit.record for hit in page.items], page.offset, page.total)
