"""Cursor connections (Relay style) with a total count; each cursor names its item. The root
fields that read records: a list as a connection (`list_field`), one by id (`one_field`)."""

from collections.abc import Awaitable, Callable
from typing import Annotated, Any

import strawberry

from parley.graph.context import Info
from parley.graph.fields import wrapped
from parley.graph.inputs import provided
from parley.graph.projection import Reads, fields_for
from parley.resolvers.keyset import SortOrder
from parley.resolvers.pagination import Page


@strawberry.type(description="Where a page sits in the whole list.")
class PageInfo:
    has_next_page: bool = strawberry.field(description="More items follow this page.")
    has_previous_page: bool = strawberry.field(
        description="This page was asked for after a cursor, so items may precede it (those "
        "still there are the other order's pages after this page's startCursor)."
    )
    start_cursor: str | None = strawberry.field(description="Cursor of the first item.")
    end_cursor: str | None = strawberry.field(
        description="Cursor of the last item: pass it as `after` for the next page."
    )


@strawberry.type(description="One item of a page and its cursor.")
class Edge[T]:
    cursor: str = strawberry.field(
        description="Names this item by its place in the list's order: the page after it "
        "starts right after it, whatever was added or deleted meanwhile (itself included)."
    )
    node: T = strawberry.field(description="The item.")


@strawberry.type(description="A page of a list, with the list's total size.")
class Connection[T]:
    items: strawberry.Private[list[T]]
    page: strawberry.Private[Page[Any]]

    @strawberry.field(description="Items of this page with cursors.")
    def edges(self) -> list[Edge[T]]:
        return [Edge(cursor=self.page.cursor(i), node=n) for i, n in enumerate(self.items)]

    @strawberry.field(description="Items of this page.")
    def nodes(self) -> list[T]:
        return self.items

    @strawberry.field(description="Where this page sits.")
    def page_info(self) -> PageInfo:
        last = len(self.items) - 1
        return PageInfo(
            has_next_page=self.page.has_next,
            has_previous_page=self.page.after,
            start_cursor=self.page.cursor(0) if self.items else None,
            end_cursor=self.page.cursor(last) if self.items else None,
        )

    @strawberry.field(description="Items matching the filter, in all pages.")
    def total_count(self) -> int:
        return self.page.total


def to_connection[R, T](page: Page[R], wrap: Callable[[R], T]) -> Connection[T]:
    """A page's connection; its edges and cursors are made only when selected."""
    return Connection(items=[wrap(item) for item in page.items], page=page)


FIRST = "How many items to return, 0..100 (default 20)."
AFTER = "Cursor of the item to start after (a previous page's endCursor)."
BY_ID = "Along the id: ASCENDING (the default) or DESCENDING."
NEWEST_FIRST = (
    "Along the creation time, then the id: DESCENDING (newest first, the default) or ASCENDING."
)

_BY_ID_LIST = "by id (generated ids sort oldest first)"


def list_field[F, R, T](
    node: type[Any],
    wrap: Callable[[R], T],
    filter_type: type[F],
    find: Callable[..., Awaitable[Page[R]]],
    *,
    reads: Reads | None = None,
    terms: Callable[[F], dict[str, Any]] = provided,
    newest_first: bool = False,
) -> Any:
    """A root list field of `node`s: `filter` (its `terms` are `find`'s keywords), `first`,
    `after` and `order` (along the id, or newest first), answered as a connection of `wrap`ped
    items; with `reads`, `find` reads only the record fields the query selects."""
    order_default = SortOrder.DESCENDING if newest_first else SortOrder.ASCENDING
    along = "newest first unless asked otherwise" if newest_first else _BY_ID_LIST

    async def resolve(
        info: Info,
        filter: F | None = None,
        first: int | None = None,
        after: str | None = None,
        order: SortOrder = order_default,
    ) -> Connection[T]:
        given = terms(filter if filter is not None else filter_type())
        if reads is not None:
            given["fields"] = fields_for(info, reads)
        page = await find(
            **given,
            first=first,
            after=after,
            order=order,
            documents=info.context.services.documents,
        )
        return to_connection(page, wrap)

    resolve.__annotations__ = {
        "info": Info,
        "filter": filter_type | None,
        "first": Annotated[int | None, strawberry.argument(description=FIRST)],
        "after": Annotated[str | None, strawberry.argument(description=AFTER)],
        "order": Annotated[
            SortOrder, strawberry.argument(description=NEWEST_FIRST if newest_first else BY_ID)
        ],
        "return": Connection[node],  # type: ignore[valid-type]
    }
    return strawberry.field(resolver=resolve, description=f"{node.__name__}s, {along}.")


def one_field[R](
    node: type[Any],
    find: Callable[[Info, str], Awaitable[R | None]],
    what: str,
    *,
    description: str | None = None,
) -> Any:
    """A root field of the `node` wrapping the record `find` reads by `id`, null without one."""

    async def resolve(info: Info, id: strawberry.ID) -> Any:
        return wrapped(node, await find(info, str(id)))

    resolve.__annotations__ = {"info": Info, "id": strawberry.ID, "return": node | None}
    return strawberry.field(
        resolver=resolve,
        description=description or f"One {what} by id; null if there is none.",
    )
