"""Keyset cursors: RediSearch's FILTER of a position and its SORTBY agree with the documented
order for any stored values (checked against the real thing), and a cursor reads back exactly
the position it was made from, anything else being refused."""

import base64
import itertools
import json
import math
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as redis

from parley.core.errors import BadArgument
from parley.resolvers.keyset import ID, Keyset, Position, SortKey, SortOrder, by_id, newest_first
from tests.support.lists import compare

PREFIX = "test:keyset:"
INDEX = "test:keyset:index"
TRICKY = [
    "a", "B", "b", "ab", "a'b", 'q"q', "back\\slash", "ends\\", "\\", "'", "new\nline",
    "cr\rx", "tab\tx", "é", "e\u0301", "\U0001f600", "\u2028", "@x", "$y", "{z}", "(0)",
    "0", "1e5", "a|b", " lead", "trail ", "\x01", "\x1f", "\x7f", "-", "~",
]  # fmt: skip
"""Ids to sort: quotes, escapes, line breaks, control characters, non-ASCII, query syntax."""
TIMES = [
    None, 0.0, -0.0, 1.0, 1.0, 2.5, -7.25, 1e-7, 5e-324, 1e300, 12345678901234567890,
    0.1 + 0.2, 0.3, 1750000000.123456, 1750000000.1234562, 1750000000.1234562, None,
]  # fmt: skip
"""Creation times: ties, missing ones, both zeros, exponents either way, the closest doubles."""
KEYSETS = {"by id": by_id("things"), "newest first": newest_first("things")}


@pytest.fixture(scope="module")
async def stored(redis_client: redis.Redis) -> AsyncIterator[dict[str, Position]]:
    """Documents under an index of their own: key -> its (created_at, pk) as stored."""
    await redis_client.execute_command(  # type: ignore[no-untyped-call]
        "FT.CREATE", INDEX, "ON", "JSON", "PREFIX", 1, PREFIX, "SCHEMA",
        "$.pk", "AS", "pk", "TAG", "SEPARATOR", "|", "SORTABLE", "UNF",
        "$.created_at", "AS", "created_at", "NUMERIC", "SORTABLE",
    )  # fmt: skip
    documents: dict[str, Position] = {}
    for i, pk in enumerate(TRICKY):
        at = TIMES[i % len(TIMES)]
        doc: dict[str, Any] = {"pk": pk} if at is None else {"pk": pk, "created_at": at}
        await redis_client.json().set(PREFIX + pk, "$", doc)
        documents[PREFIX + pk] = (float(at) if at is not None else None, pk)
    yield documents
    await redis_client.execute_command("FT.DROPINDEX", INDEX, "DD")  # type: ignore[no-untyped-call]


async def keys_after(
    client: redis.Redis, keyset: Keyset, order: SortOrder, position: Position | None
) -> list[str]:
    args: list[Any] = ["FT.AGGREGATE", INDEX, "*"]
    if position is not None:
        args += ["FILTER", keyset.after(order, position)]
    args += [*keyset.sortby(order), "MAX", 1000, "LOAD", 1, "@__key", "DIALECT", 3]
    raw: Any = await client.execute_command(*args)  # type: ignore[no-untyped-call]
    return [row["extra_attributes"]["__key"] for row in raw["results"]]


def own(keyset: Keyset, position: Position) -> Position:
    """The part of a (created_at, pk) position a keyset sorts by."""
    return position if len(keyset.keys) == 2 else position[1:]


@pytest.mark.parametrize("order", list(SortOrder))
@pytest.mark.parametrize("name", KEYSETS)
async def test_the_page_after_any_position_is_every_item_after_it_in_order(
    redis_client: redis.Redis, stored: dict[str, Position], name: str, order: SortOrder
) -> None:
    keyset = KEYSETS[name]
    at = {key: own(keyset, position) for key, position in stored.items()}
    everything = await keys_after(redis_client, keyset, order, None)
    assert sorted(everything) == sorted(at)
    for a, b in itertools.pairwise(everything):
        assert compare(order, at[a], at[b]) < 0, (a, b)  # SORTBY keeps the documented order
    missing_id = (None,) if len(keyset.keys) == 1 else (None, None)
    for position in [*at.values(), (None, "zz") if len(keyset.keys) == 2 else ("zz",), missing_id]:
        after = await keys_after(redis_client, keyset, order, position)
        expected = [key for key in everything if compare(order, at[key], position) > 0]
        assert after == expected, position


@pytest.mark.parametrize("keyset", KEYSETS.values(), ids=list(KEYSETS))
def test_a_cursor_reads_back_the_position_it_names(keyset: Keyset) -> None:
    for pk in TRICKY:
        for at in [t for t in TIMES if t is None or math.isfinite(t)]:
            position = (pk,) if len(keyset.keys) == 1 else (at, pk)
            assert keyset.position(keyset.cursor(position)) == position


def cursor_of(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode()


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "not-a-cursor",
        "%%%",
        cursor_of("parley:5"),  # an offset cursor of before
        cursor_of("parley:-5"),
        cursor_of("parley:things:"),
        cursor_of("parley:things:[1.0,"),
        cursor_of("parley:things:{}"),
        cursor_of('parley:things:"a"'),
        cursor_of("parley:things:[1.0]"),
        cursor_of('parley:things:[1.0,"a","b"]'),
        cursor_of('parley:things:["a","a"]'),
        cursor_of('parley:things:[true,"a"]'),
        cursor_of('parley:things:[NaN,"a"]'),
        cursor_of('parley:things:[Infinity,"a"]'),
        cursor_of('parley:things:[1e999,"a"]'),
        cursor_of("parley:things:[1.0,3]"),
        cursor_of('parley:things:[1.0,"a\\u0000b"]'),
        cursor_of('other:things:[1.0,"a"]'),
        cursor_of("[" * 100_000),
    ],
)
def test_a_malformed_cursor_is_refused(cursor: str) -> None:
    with pytest.raises(BadArgument, match="malformed cursor"):
        newest_first("things").position(cursor)


def test_a_cursor_of_another_list_is_refused_naming_both() -> None:
    agents, episodes = by_id("agents"), newest_first("episodes")
    with pytest.raises(BadArgument, match="is a cursor of agents, not of episodes"):
        episodes.position(agents.cursor(("a",)))
    with pytest.raises(BadArgument, match="is a cursor of episodes, not of agents"):
        agents.position(episodes.cursor((1.0, "a")))


def test_a_required_key_has_a_value_and_an_integer_one_is_whole() -> None:
    slots = Keyset("slots", (SortKey("number", int, required=True),), SortOrder.ASCENDING)
    assert slots.position(slots.cursor((7,))) == (7,)
    for values in ([None], [7.5], [True], ["7"]):
        with pytest.raises(BadArgument, match="malformed cursor"):
            slots.position(cursor_of(f"parley:slots:{json.dumps(values)}"))
    assert Keyset("ids", (ID,), SortOrder.ASCENDING).position(cursor_of("parley:ids:[null]")) == (
        None,
    )
