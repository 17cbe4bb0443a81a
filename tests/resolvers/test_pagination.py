"""Every list, in both orders, paged while records are inserted and deleted between pages (the
cursor's own item too): each page is exactly the items after the cursor's position in the
list's order at that moment, and the total counts what is stored then."""

import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import redis.asyncio as redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parley.lifecycle.experiments import EXPERIMENTS, list_experiments
from parley.resolvers.agents import AGENTS, list_agents
from parley.resolvers.episodes import EPISODES, find_episodes
from parley.resolvers.keyset import Keyset, Position, SortOrder
from parley.resolvers.pagination import Page, numbered
from parley.resolvers.relationships import RELATIONSHIPS, list_relationships
from parley.resolvers.scenarios import SCENARIOS, list_scenarios
from parley.storage.models import (
    AgentProfile,
    EnvironmentProfile,
    EpisodeLog,
    Experiment,
    ListedRecord,
    RelationshipProfile,
)
from tests.support.lists import compare, ordered, positions

type Lister = Callable[..., Awaitable[Page[Any]]]


@dataclass(frozen=True)
class Kind:
    model: type[ListedRecord]
    keyset: Keyset
    list: Lister


async def experiments(**arguments: Any) -> Page[Any]:
    arguments.pop("fields")
    return await list_experiments(name=None, **arguments)


KINDS = {
    "agents": Kind(AgentProfile, AGENTS, list_agents),
    "scenarios": Kind(EnvironmentProfile, SCENARIOS, list_scenarios),
    "relationships": Kind(RelationshipProfile, RELATIONSHIPS, list_relationships),
    "episodes": Kind(EpisodeLog, EPISODES, find_episodes),
    "experiments": Kind(Experiment, EXPERIMENTS, experiments),
}
TIMES = st.one_of(st.none(), st.sampled_from([1.0, 2.0, 3.5, 1750000000.1234562]))
"""Creation times that tie often, and none (a record Sotopia wrote)."""
IDS = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=4)
CHANGES = st.lists(
    st.one_of(
        st.tuples(st.just("insert"), IDS, TIMES),
        st.tuples(st.just("delete"), st.integers(0, 30), st.none()),
        st.tuples(st.just("delete the cursor's"), st.none(), st.none()),
    ),
    max_size=4,
)
counter = itertools.count()


class World:
    """Records of one kind under a tag of their own, written as another writer would."""

    def __init__(self, client: redis.Redis, kind: Kind) -> None:
        self.client, self.kind = client, kind
        self.tag = f"paging-{next(counter)}"
        self.pks: list[str] = []

    async def insert(self, suffix: str, at: float | None) -> None:
        pk = f"{self.tag}-{suffix}"
        if pk in self.pks:
            return
        doc: dict[str, Any] = {"pk": pk, "tag": self.tag, "name": pk}
        if at is not None:
            doc["created_at"] = at
        await self.client.json().set(self.kind.model.make_primary_key(pk), "$", doc)
        self.pks.append(pk)

    async def delete(self, pk: str) -> None:
        if pk in self.pks:
            await self.client.delete(self.kind.model.make_primary_key(pk))
            self.pks.remove(pk)

    async def after(self, order: SortOrder, position: Position | None) -> list[str]:
        """The stored records after `position` in `order`, worked out here."""
        at = await positions(self.client, self.kind.model, self.kind.keyset, self.pks)
        every = ordered(order, at)
        return [pk for pk in every if position is None or compare(order, at[pk], position) > 0]

    async def page(self, order: SortOrder, first: int, after: str | None) -> Page[Any]:
        return await self.kind.list(
            tag=self.tag, first=first, after=after, order=order, fields={"pk"}
        )

    async def drop(self) -> None:
        for pk in list(self.pks):
            await self.delete(pk)


def ids(page: Page[Any]) -> list[str]:
    return [str(getattr(item, "record", item).pk) for item in page.items]


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    kind=st.sampled_from(list(KINDS)),
    order=st.sampled_from(list(SortOrder)),
    initial=st.lists(st.tuples(IDS, TIMES), max_size=10),
    pages=st.lists(st.tuples(st.integers(1, 4), CHANGES), min_size=1, max_size=5),
)
async def test_each_page_is_the_items_after_its_cursor_whatever_changed(
    redis_client: redis.Redis,
    kind: str,
    order: SortOrder,
    initial: list[tuple[str, float | None]],
    pages: list[tuple[int, list[tuple[str, Any, Any]]]],
) -> None:
    world = World(redis_client, KINDS[kind])
    try:
        for suffix, at in initial:
            await world.insert(suffix, at)
        cursor: str | None = None
        position: Position | None = None
        for size, changes in pages:
            page = await world.page(order, size, cursor)
            expected = await world.after(order, position)
            assert ids(page) == expected[:size]
            assert page.total == len(world.pks)
            assert page.has_next == (len(expected) > size)
            assert page.after == (cursor is not None)
            if not page.items:
                break
            cursor = page.cursor(len(page.items) - 1)
            position = world.kind.keyset.position(cursor)
            named = ids(page)[-1]
            for change, value, at in changes:
                if change == "insert":
                    await world.insert(value, at)
                elif change == "delete" and world.pks:
                    await world.delete(world.pks[value % len(world.pks)])
                elif change == "delete the cursor's":
                    await world.delete(named)
    finally:
        await world.drop()


@given(
    count=st.integers(0, 12),
    order=st.sampled_from(list(SortOrder)),
    sizes=st.lists(st.integers(0, 5), min_size=1, max_size=6),
)
def test_numbered_pages_walk_a_fixed_list_either_way(
    count: int, order: SortOrder, sizes: list[int]
) -> None:
    expected = list(range(count)) if order is SortOrder.ASCENDING else list(range(count))[::-1]
    seen: list[int] = []
    after: str | None = None
    for size in sizes:
        page = numbered(count, size, after, order)
        assert page.items == expected[len(seen) : len(seen) + size]
        seen += page.items
        assert page.has_next == (len(seen) < count)
        if page.items:
            after = page.cursor(len(page.items) - 1)
