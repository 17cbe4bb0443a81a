"""The order lists document, worked out here from the stored JSON, for tests to compare with.

An item sorts by its values of the list's sort keys in turn; one lacking a value sorts after
every item that has one, in either direction (RediSearch's SORTBY); strings by code point,
which is their UTF-8 byte order.
"""

import functools
from typing import Any

import redis.asyncio as redis

from parley.resolvers.keyset import Keyset, Position, SortOrder
from parley.storage.models import Record


def compare(order: SortOrder, a: Position, b: Position) -> int:
    for x, y in zip(a, b, strict=True):
        if x == y:
            continue
        if x is None:
            return 1
        if y is None:
            return -1
        less: bool = x < y  # type: ignore[operator]
        return (-1 if less else 1) * (1 if order is SortOrder.ASCENDING else -1)
    return 0


async def positions(
    client: redis.Redis, model: type[Record], keyset: Keyset, pks: list[str]
) -> dict[str, Position]:
    """Each record's values of the sort keys as stored (None where it has none)."""
    out: dict[str, Position] = {}
    paths = [f"$.{key.field}" for key in keyset.keys]
    for pk in pks:
        found: Any = await client.json().get(model.make_primary_key(pk), *paths)
        if len(paths) == 1:
            found = {paths[0]: found}
        out[pk] = tuple((found[path] or [None])[0] for path in paths)
    return out


async def in_order(
    client: redis.Redis, model: type[Record], keyset: Keyset, order: SortOrder, pks: list[str]
) -> list[str]:
    """`pks` in the list's documented `order`."""
    return ordered(order, await positions(client, model, keyset, pks))


def ordered(order: SortOrder, at: dict[str, Position]) -> list[str]:
    """The ids of `at` in `order` of their positions."""

    def by_position(a: str, b: str) -> int:
        return compare(order, at[a], at[b])

    return sorted(at, key=functools.cmp_to_key(by_position))
