"""Connections over real HTTP: the `order` argument of every list, paging back through the other
order, slots named by their number, and cursors that are malformed or of another list refused
as BAD_USER_INPUT. And `list_field` itself, on a tiny schema built here: the arguments it
declares, and what it asks its `find` for and makes of the page."""

import base64
import re
import uuid
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import pytest
import redis.asyncio as redis
import strawberry
from pydantic import BaseModel

from bench.support.fake_llm import FakeLLM
from bench.support.read_world import parley_episode
from parley.graph.connection import list_field
from parley.graph.projection import Reads, reading
from parley.resolvers.keyset import Position, SortOrder, by_id
from parley.resolvers.pagination import Page
from parley.storage.models import (
    AgentProfile,
    EnvironmentProfile,
    Experiment,
    Record,
    RelationshipProfile,
)
from tests.support.experiments import Worlds, sampled_design
from tests.support.server import GraphQLClient

LISTS = {
    "agents": ("AgentFilter", "ASCENDING"),
    "scenarios": ("ScenarioFilter", "ASCENDING"),
    "relationships": ("RelationshipFilter", "ASCENDING"),
    "episodes": ("EpisodeFilter", "DESCENDING"),
    "experiments": ("ExperimentFilter", "DESCENDING"),
}
"""Each list's filter type and default order."""
OTHER = {"ASCENDING": "DESCENDING", "DESCENDING": "ASCENDING"}
PAGE = """query($filter: {filter}, $first: Int, $after: String{order_variable}) {{
  {root}(filter: $filter, first: $first, after: $after{order_argument}) {{
    totalCount
    edges {{ cursor node {{ id }} }}
    pageInfo {{ hasNextPage hasPreviousPage startCursor endCursor }}
  }}
}}"""
SLOTS = """query($id: ID!, $first: Int, $after: String, $order: SortOrder) {
  experiment(id: $id) {
    slots(first: $first, after: $after, order: $order) {
      totalCount
      edges { cursor node { number } }
      pageInfo { hasNextPage hasPreviousPage endCursor }
    }
  }
}"""


@pytest.fixture(scope="module")
async def tag(redis_client: redis.Redis) -> AsyncIterator[str]:
    """Five records of each kind under one tag, each created at its own time."""
    tag = f"conn-{uuid.uuid4().hex[:8]}"
    records: list[Record] = []
    for i in range(5):
        episode = parley_episode(i, 2, 1, 1, tag)
        episode.tag = tag
        records += [
            AgentProfile(pk=f"{tag}-a{i}", first_name="C", last_name=str(i), tag=tag),
            EnvironmentProfile(pk=f"{tag}-s{i}", scenario="s", agent_goals=["a", "b"], tag=tag),
            RelationshipProfile(
                pk=f"{tag}-r{i}", agent_1_id="x", agent_2_id=f"y{i}", relationship=1, tag=tag
            ),
            episode,
            Experiment(pk=f"{tag}-x{i}", name=f"e{i}", tag=tag, created_at=100.0 + i),
        ]
    for record in records:
        await record.save()
    yield tag
    await redis_client.delete(*[type(r).make_primary_key(str(r.pk)) for r in records])


async def listed(
    gql: GraphQLClient, root: str, tag: str, order: str | None = None, **variables: Any
) -> dict[str, Any]:
    query = PAGE.format(
        root=root,
        filter=LISTS[root][0],
        order_variable=", $order: SortOrder" if order else "",
        order_argument=", order: $order" if order else "",
    )
    data = await gql.data(query, {"filter": {"tag": tag}, "order": order, **variables})
    connection: dict[str, Any] = data[root]
    return connection


def ids(connection: dict[str, Any]) -> list[str]:
    return [edge["node"]["id"] for edge in connection["edges"]]


@pytest.mark.parametrize("root", LISTS)
async def test_every_list_runs_both_ways_and_keeps_its_default(
    gql: GraphQLClient, tag: str, root: str
) -> None:
    ascending = ids(await listed(gql, root, tag, "ASCENDING"))
    descending = ids(await listed(gql, root, tag, "DESCENDING"))
    assert len(ascending) == 5 and descending == ascending[::-1]
    default = ascending if LISTS[root][1] == "ASCENDING" else descending
    assert ids(await listed(gql, root, tag)) == default


@pytest.mark.parametrize("root", LISTS)
async def test_the_other_order_after_a_start_cursor_pages_back(
    gql: GraphQLClient, tag: str, root: str
) -> None:
    first = await listed(gql, root, tag, first=2)
    assert not first["pageInfo"]["hasPreviousPage"] and first["pageInfo"]["hasNextPage"]
    second = await listed(gql, root, tag, first=2, after=first["pageInfo"]["endCursor"])
    assert second["pageInfo"]["hasPreviousPage"] and second["totalCount"] == 5
    back = await listed(
        gql, root, tag, OTHER[LISTS[root][1]], first=5, after=second["pageInfo"]["startCursor"]
    )
    assert ids(back) == ids(first)[::-1] and not back["pageInfo"]["hasNextPage"]


def codes(body: dict[str, Any]) -> list[str]:
    return [error["extensions"]["code"] for error in body["errors"]]


@pytest.mark.parametrize("root", LISTS)
async def test_a_malformed_or_foreign_cursor_is_bad_user_input(
    gql: GraphQLClient, tag: str, root: str
) -> None:
    other = "episodes" if root != "episodes" else "agents"
    foreign = (await listed(gql, other, tag, first=1))["pageInfo"]["endCursor"]
    old_offset = base64.urlsafe_b64encode(b"parley:1").decode()
    query = PAGE.format(root=root, filter=LISTS[root][0], order_variable="", order_argument="")
    for after, message in [
        ("nope", "malformed cursor"),
        (old_offset, "malformed cursor"),
        (foreign, f"is a cursor of {other}, not of {root}"),
    ]:
        body = await gql.post(query, {"filter": {"tag": tag}, "after": after})
        assert codes(body) == ["BAD_USER_INPUT"], body
        assert message in body["errors"][0]["message"], body


@pytest.fixture
async def worlds() -> AsyncIterator[Worlds]:
    made = Worlds()
    yield made
    await made.drop()


async def test_slots_are_named_by_their_number_either_way(
    gql: GraphQLClient, worlds: Worlds, fake_llm: FakeLLM, redis_client: redis.Redis
) -> None:
    scenarios, _ = await worlds("conn-slots")
    design = sampled_design(scenarios, fake_llm.model_name())
    input = {"name": "slots both ways", "tag": "conn-slots", "design": design}
    made = await gql.mutate("createExperiment", "CreateExperimentInput", input, "experiment { id }")
    pk = made["experiment"]["id"]
    try:

        async def walk(order: str, first: int, after: str | None = None) -> list[list[int]]:
            pages: list[list[int]] = []
            while True:
                variables = {"id": pk, "first": first, "after": after, "order": order}
                slots = (await gql.data(SLOTS, variables))["experiment"]["slots"]
                numbers = [edge["node"]["number"] for edge in slots["edges"]]
                for edge in slots["edges"]:
                    text = base64.urlsafe_b64decode(edge["cursor"]).decode()
                    assert text == f"parley:slots:[{edge['node']['number']}]"
                assert slots["totalCount"] == 8
                assert slots["pageInfo"]["hasPreviousPage"] is (after is not None)
                pages.append(numbers)
                if not slots["pageInfo"]["hasNextPage"]:
                    return pages
                after = slots["pageInfo"]["endCursor"]

        assert await walk("ASCENDING", 3) == [[0, 1, 2], [3, 4, 5], [6, 7]]
        assert await walk("DESCENDING", 3) == [[7, 6, 5], [4, 3, 2], [1, 0]]
        fourth = base64.urlsafe_b64encode(b"parley:slots:[4]").decode()
        assert await walk("DESCENDING", 10, fourth) == [[3, 2, 1, 0]]
        assert await walk("ASCENDING", 10, fourth) == [[5, 6, 7]]
        agents = (await listed(gql, "agents", "conn-slots", first=1))["pageInfo"]["endCursor"]
        body = await gql.post(SLOTS, {"id": pk, "after": agents})
        assert codes(body) == ["BAD_USER_INPUT"], body
    finally:
        await redis_client.delete(Experiment.make_primary_key(pk))


class Pet(BaseModel):
    name: str
    legs: int = 4


@strawberry.type(description="A pet.")
class PetNode:
    record: strawberry.Private[Pet]

    @strawberry.field(description="Its name.", metadata=reading("name"))
    def name(self) -> str:
        return self.record.name

    @strawberry.field(description="Its legs.", metadata=reading("legs"))
    def legs(self) -> int:
        return self.record.legs


@strawberry.input(description="Narrows a pet list.")
class PetFilter:
    kind: str | None = None
    home: str = "shelter"


PETS = by_id("pets")
asked: list[dict[str, Any]] = []


async def find_pets(**given: Any) -> Page[Pet]:
    """Two pets of three, as a page after the cursor given (if any)."""
    asked.append(given)
    positions: list[Position] = [("p1",), ("p2",)]
    pets = [Pet(name="ann"), Pet(name="bo", legs=3)]
    return Page(pets, positions, PETS, 3, True, given["after"] is not None)


def as_node(pet: Pet) -> PetNode:
    return PetNode(record=pet)


@strawberry.type
class PetQuery:
    pets = list_field(PetNode, as_node, PetFilter, find_pets, reads=Reads.of_type(PetNode))
    newest = list_field(PetNode, as_node, PetFilter, find_pets, newest_first=True)


PET_SCHEMA = strawberry.Schema(query=PetQuery)
CONTEXT = SimpleNamespace(services=SimpleNamespace(documents=None))


async def pet_data(query: str) -> dict[str, Any]:
    asked.clear()
    result = await PET_SCHEMA.execute(query, context_value=CONTEXT)
    assert result.errors is None, result.errors
    assert result.data is not None
    return result.data


def test_a_list_field_takes_filter_first_after_and_its_own_default_order() -> None:
    sdl = PET_SCHEMA.as_str()
    fields = sdl.split("type PetQuery {")[1].split("\n}")[0]
    pets, newest = fields.split('\n\n  """PetNodes, newest first')
    assert pets.startswith('\n  """PetNodes, by id (generated ids sort oldest first)."""\n  pets(')
    assert newest.startswith(' unless asked otherwise."""\n  newest(')
    for field, order in ((pets, "ASCENDING"), (newest, "DESCENDING")):
        lines = [line.strip() for line in field.splitlines()]
        arguments = [line for line in lines if re.match(r"[a-z]\w*: |\): ", line)]
        assert arguments == [
            "filter: PetFilter = null",
            "first: Int = null",
            "after: String = null",
            f"order: SortOrder! = {order}",
            "): PetNodeConnection!",
        ]
    assert '"""How many items to return, 0..100 (default 20)."""' in pets
    assert "DESCENDING (newest first, the default) or ASCENDING." in newest


async def test_find_is_asked_with_the_filters_defaults_and_only_the_fields_selected() -> None:
    """No filter given is the filter type's defaults, never a crash reading None."""
    data = await pet_data(
        "{ pets(first: 2) { totalCount nodes { name } edges { cursor node { name } } "
        "pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }"
    )
    [given] = asked
    assert given == {
        "kind": None,
        "home": "shelter",
        "fields": frozenset({"name"}),
        "first": 2,
        "after": None,
        "order": SortOrder.ASCENDING,
        "documents": None,
    }
    cursors = [PETS.cursor(("p1",)), PETS.cursor(("p2",))]
    assert data["pets"] == {
        "totalCount": 3,
        "nodes": [{"name": "ann"}, {"name": "bo"}],
        "edges": [
            {"cursor": c, "node": {"name": n}} for c, n in zip(cursors, ["ann", "bo"], strict=True)
        ],
        "pageInfo": {
            "hasNextPage": True,
            "hasPreviousPage": False,
            "startCursor": cursors[0],
            "endCursor": cursors[1],
        },
    }


async def test_a_list_without_reads_asks_for_whole_records_in_its_order() -> None:
    data = await pet_data(
        '{ newest(filter: {kind: "cat"}, after: "c", order: ASCENDING) '
        "{ nodes { legs } pageInfo { hasPreviousPage } } }"
    )
    [given] = asked
    assert "fields" not in given
    assert (given["kind"], given["home"], given["after"]) == ("cat", "shelter", "c")
    assert given["order"] is SortOrder.ASCENDING
    assert data["newest"] == {
        "nodes": [{"legs": 4}, {"legs": 3}],
        "pageInfo": {"hasPreviousPage": True},
    }
    await pet_data("{ newest { totalCount } }")
    assert asked[0]["order"] is SortOrder.DESCENDING
