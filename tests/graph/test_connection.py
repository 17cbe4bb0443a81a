"""Connections over real HTTP: the `order` argument of every list, paging back through the other
order, slots named by their number, and cursors that are malformed or of another list refused
as BAD_USER_INPUT."""

import base64
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as redis

from bench.support.fake_llm import FakeLLM
from bench.support.read_world import parley_episode
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
