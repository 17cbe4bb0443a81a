"""resolvers/pagination.py and graph/connection.py: a cursor names its item, so the page after
it starts right after that item whatever was inserted or deleted meanwhile (the item itself
included), on every list."""

import json
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest
import redis.asyncio as redis

from bench.support.fake_llm import FakeLLM
from bench.support.read_world import parley_episode
from bench.support.simulation import make_world, start_input
from parley.storage.models import (
    AgentProfile,
    EnvironmentProfile,
    EpisodeLog,
    Experiment,
    Record,
    RelationshipProfile,
)
from tests.support.server import GraphQLClient

PAGE = 2


@dataclass
class World:
    """The records one test makes: a tag of its own, a scenario and agents to refer to."""

    gql: GraphQLClient
    client: redis.Redis
    tag: str
    model: str
    scenario: str
    agents: list[str]
    made: list[tuple[str, str]]
    """(root, id) of every record made, deleted at the end."""


@dataclass(frozen=True)
class Kind:
    root: str
    make: Callable[[World, int], Awaitable[str]]
    """Makes record number `i` (1, 2, ...) of the list; 0 is one that goes first."""
    delete: Callable[[World, str], Awaitable[None]]


def user_id(world: World, i: int) -> str:
    """Ids that sort in the order of `i` (the lists by id are ascending)."""
    return f"{world.tag}-{i:03d}"


async def make_agent(world: World, i: int) -> str:
    input = {"id": user_id(world, i), "firstName": f"Pager{i}", "lastName": "X", "tag": world.tag}
    made = await world.gql.mutate("createAgent", "CreateAgentInput", input, "agent { id }")
    return str(made["agent"]["id"])


async def delete_agent(world: World, pk: str) -> None:
    await world.gql.mutate("deleteAgent", "DeleteAgentInput", {"id": pk})


async def make_scenario(world: World, i: int) -> str:
    input = {"id": user_id(world, i), "scenario": f"Scene {i}", "agentGoals": ["a", "b"]}
    made = await world.gql.mutate(
        "createScenario", "CreateScenarioInput", {**input, "tag": world.tag}, "scenario { id }"
    )
    return str(made["scenario"]["id"])


async def delete_scenario(world: World, pk: str) -> None:
    await world.gql.mutate("deleteScenario", "DeleteInput", {"id": pk})


async def make_relationship(world: World, i: int) -> str:
    other = AgentProfile(first_name=f"Other{i}", last_name=world.tag, tag=f"{world.tag}-setup")
    await other.save()
    world.made.append(("agents", str(other.pk)))
    input = {
        "id": user_id(world, i),
        "agentId": world.agents[0],
        "otherAgentId": str(other.pk),
        "relationship": "FRIEND",
        "tag": world.tag,
    }
    made = await world.gql.mutate(
        "createRelationship", "CreateRelationshipInput", input, "relationship { id }"
    )
    return str(made["relationship"]["id"])


async def delete_relationship(world: World, pk: str) -> None:
    await world.gql.mutate("deleteRelationship", "DeleteInput", {"id": pk})


async def make_episode(world: World, i: int) -> str:
    """Finished episodes, one a second apart in the past; 0 is one started now (newest first)."""
    if i == 0:
        input = start_input(world.scenario, world.agents, world.model, tag=world.tag)
        made = await world.gql.mutate(
            "startSimulation", "StartSimulationInput", input, "episode { id }"
        )
        return str(made["episode"]["id"])
    doc = json.loads(parley_episode(i, 2, 1, 2, world.tag).model_dump_json())
    doc.update(tag=world.tag, environment=world.scenario, agents=world.agents)
    doc["created_at"] = time.time() - 1000 + i
    await world.client.json().set(EpisodeLog.make_primary_key(doc["pk"]), "$", doc)
    return str(doc["pk"])


async def delete_episode(world: World, pk: str) -> None:
    await world.gql.mutate("deleteEpisode", "DeleteInput", {"id": pk})


async def make_experiment(world: World, i: int) -> str:
    """Experiments are newest first: each made now goes first."""
    design = {
        "scenarios": {"ids": [world.scenario]},
        "agents": {"pairs": [world.agents]},
        "models": {"compare": [world.model], "partner": world.model},
        "maxTurns": 2,
        "judgeModel": world.model,
    }
    input = {"name": f"pager {i}", "tag": world.tag, "design": design}
    made = await world.gql.mutate(
        "createExperiment", "CreateExperimentInput", input, "experiment { id }"
    )
    return str(made["experiment"]["id"])


async def delete_experiment(world: World, pk: str) -> None:
    """No mutation deletes an experiment; another writer may."""
    assert await world.client.delete(Experiment.make_primary_key(pk)) == 1


KINDS = {
    "agents": Kind("agents", make_agent, delete_agent),
    "scenarios": Kind("scenarios", make_scenario, delete_scenario),
    "relationships": Kind("relationships", make_relationship, delete_relationship),
    "episodes": Kind("episodes", make_episode, delete_episode),
    "experiments": Kind("experiments", make_experiment, delete_experiment),
}
RECORDS: dict[str, type[Record]] = {
    "agents": AgentProfile,
    "scenarios": EnvironmentProfile,
    "relationships": RelationshipProfile,
    "episodes": EpisodeLog,
    "experiments": Experiment,
}
FILTER_TYPES = {
    "agents": "AgentFilter",
    "scenarios": "ScenarioFilter",
    "relationships": "RelationshipFilter",
    "episodes": "EpisodeFilter",
    "experiments": "ExperimentFilter",
}


@pytest.fixture
async def world(
    gql: GraphQLClient, redis_client: redis.Redis, fake_llm: FakeLLM
) -> AsyncIterator[World]:
    tag = f"pager-{uuid.uuid4().hex[:8]}"
    scenario, agents = await make_world(f"{tag}-setup")  # not in the lists paged
    made = [("scenarios", scenario), *(("agents", a) for a in agents)]
    yield World(gql, redis_client, tag, fake_llm.model_name(), scenario, agents, made)
    for root, pk in reversed(made):  # episodes stay, as runs do (a queued one is cancelled)
        if root != "episodes":
            await redis_client.delete(RECORDS[root].make_primary_key(pk))


async def page(world: World, root: str, first: int, after: str | None = None) -> dict[str, Any]:
    query = (
        f"query($filter: {FILTER_TYPES[root]}, $after: String) {{ {root}(first: {first}, "
        "after: $after, filter: $filter) { nodes { id } pageInfo { endCursor hasNextPage } } }"
    )
    data = await world.gql.data(query, {"filter": {"tag": world.tag}, "after": after})
    connection: dict[str, Any] = data[root]
    return connection


def ids(connection: dict[str, Any]) -> list[str]:
    return [node["id"] for node in connection["nodes"]]


async def listed(world: World, kind: Kind) -> list[str]:
    """Six records of `kind`, in the list's order."""
    made = []
    for i in range(1, 7):
        made.append(await kind.make(world, i))
        world.made.append((kind.root, made[-1]))
    every = ids(await page(world, kind.root, 100))
    assert sorted(every) == sorted(made)
    return every


@pytest.mark.parametrize("root", KINDS)
async def test_an_item_inserted_before_the_cursor_shifts_no_page(world: World, root: str) -> None:
    """A new episode arrives while a client pages the newest-first list (or an agent whose id
    sorts first): page 2 still begins after page 1's last item, repeating none."""
    kind = KINDS[root]
    every = await listed(world, kind)
    first = await page(world, root, PAGE)
    assert ids(first) == every[:PAGE]
    world.made.append((root, await kind.make(world, 0)))
    assert ids(await page(world, root, 100))[0] == world.made[-1][1]  # it went first
    second = await page(world, root, PAGE, first["pageInfo"]["endCursor"])
    assert ids(second) == every[PAGE : 2 * PAGE]


@pytest.mark.parametrize("root", KINDS)
async def test_an_item_deleted_before_the_cursor_skips_none(world: World, root: str) -> None:
    kind = KINDS[root]
    every = await listed(world, kind)
    first = await page(world, root, PAGE)
    await kind.delete(world, every[0])
    second = await page(world, root, PAGE, first["pageInfo"]["endCursor"])
    assert ids(second) == every[PAGE : 2 * PAGE]


@pytest.mark.parametrize("root", KINDS)
async def test_the_page_after_a_deleted_cursor_item_starts_right_after_it(
    world: World, root: str
) -> None:
    kind = KINDS[root]
    every = await listed(world, kind)
    first = await page(world, root, PAGE)
    await kind.delete(world, every[PAGE - 1])
    second = await page(world, root, PAGE, first["pageInfo"]["endCursor"])
    assert ids(second) == every[PAGE : 2 * PAGE]
