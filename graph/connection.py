"""Cursor connections (Relay style) with a total count."""

from collections.abc import Callable
from typing import Any

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
    edges: list[Edge[T]] = strawberry.field(description="Items of this page with cursors.")
    nodes: list[T] = strawberry.field(description="Items of this page.")
    page_info: PageInfo = strawberry.field(description="Where this page sits.")
    total_count: int = strawberry.field(description="Items matching the filter, in all pages.")


def to_connection[R, T](page: Page[R], wrap: Callable[[R], T]) -> Connection[T]:
    nodes = [wrap(item) for item in page.items]
    cursors = [encode_cursor(page.offset + i) for i in range(len(nodes))]
    edges: list[Edge[Any]] = [Edge(cursor=c, node=n) for c, n in zip(cursors, nodes, strict=True)]
    return Connection(
        edges=edges,
        nodes=nodes,
        page_info=PageInfo(
            has_next_page=page.has_next,
            has_previous_page=page.offset > 0,
            start_cursor=cursors[0] if cursors else None,
            end_cursor=cursors[-1] if cursors else None,
        ),
        total_count=page.total,
    )
