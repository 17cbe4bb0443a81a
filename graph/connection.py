"""Cursor connections (Relay style) with a total count."""

from collections.abc import Callable

import strawberry

from resolvers.pagination import Page, encode_cursor


@strawberry.type(description="Where a page sits in the whole list.")
class PageInfo:
    has_next_page: bool = strawberry.field(description="More items follow this page.")
    has_previous_page: bool = strawberry.field(description="Items precede this page.")
    start_cursor: str | None = strawberry.field(description="Cursor of the first item.")
    end_cursor: str | None = strawberry.field(description="Cursor to pass as `after`.")


@strawberry.type(description="One item of a page and its cursor.")
class Edge[T]:
    cursor: str = strawberry.field(description="Opaque position of this item.")
    node: T = strawberry.field(description="The item.")


@strawberry.type(description="A page of a list, with the list's total size.")
class Connection[T]:
    items: strawberry.Private[list[T]]
    total: strawberry.Private[int]
    offset: strawberry.Private[int]
    has_next: strawberry.Private[bool]

    @strawberry.field(description="Items of this page with cursors.")
    def edges(self) -> list[Edge[T]]:
        return [Edge(cursor=c, node=n) for c, n in zip(self._cursors(), self.items, strict=True)]

    @strawberry.field(description="Items of this page.")
    def nodes(self) -> list[T]:
        return self.items

    @strawberry.field(description="Where this page sits.")
    def page_info(self) -> PageInfo:
        cursors = self._cursors()
        return PageInfo(
            has_next_page=self.has_next,
            has_previous_page=self.offset > 0,
            start_cursor=cursors[0] if cursors else None,
            end_cursor=cursors[-1] if cursors else None,
        )

    @strawberry.field(description="Items matching the filter, in all pages.")
    def total_count(self) -> int:
        return self.total

    def _cursors(self) -> list[str]:
        return [encode_cursor(self.offset + i) for i in range(len(self.items))]


def to_connection[R, T](page: Page[R], wrap: Callable[[R], T]) -> Connection[T]:
    """A page's connection; its edges and cursors are made only when selected."""
    items = [wrap(item) for item in page.items]
    return Connection(items=items, total=page.total, offset=page.offset, has_next=page.has_next)
