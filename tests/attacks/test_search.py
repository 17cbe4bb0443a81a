"""resolvers/search.py: a list answered from held documents is never older than a write that
completed before it, at any position of the page, whoever wrote: Parley's mutations, its
re-judging and status transitions, or another client writing the JSON itself."""

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
import redis.asyncio as redis

from bench.support.fake_llm import FakeLLM
from bench.support.simulation import start_input
from parley.storage.models import (
    AgentProfile,
    EnvironmentProfile,
    EpisodeLog,
    Experiment,
    Record,
    RelationshipProfile,
)
from tests.support.server import GraphQLClient, serve

N = 4
"""Records per list: the page holds them all, each at its own position."""

LISTS: dict[str, tuple[str, str, str, type[Record]]] = {
    # root: (filter type, one-record field, selection, model)
    "agents": ("AgentFilter", "agent", "id occupation tag", AgentProfile),
    "scenarios": ("ScenarioFilter", "scenario", "id scenario tag", EnvironmentProfile),
    "relationships": (
        "RelationshipFilter",
        "relationship",
        "id backgroundStory tag",
        RelationshipProfile,
    ),
    "episodes": (
        "EpisodeFilter",
        "episode",
        "id status reasoning evaluations { id status }",
        EpisodeLog,
    ),
    "experiments": ("ExperimentFilter", "experiment", "id name startedAt", Experiment),
}
EDITED_BY_HAND = {
    "agents": ("$.occupation", "occupation"),
    "scenarios": ("$.scenario", "scenario"),
    "relationships": ("$.background_story", "backgroundStory"),
    "episodes": ("$.reasoning", "reasoning"),
    "experiments": ("$.name", "name"),
}


@pytest.fixture(scope="module")
async def api(
    redis_url: str, redis_client: redis.Redis, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[GraphQLClient]:
    """The API with its worker (episodes and re-judgings run), holding what it lists."""
    async with (
        serve(redis_url, tmp_path_factory.mktemp("stale"), worker=True) as url,
        httpx.AsyncClient(base_url=url, timeout=60) as http,
    ):
        yield GraphQLClient(http)


async def eventually[T](read: Callable[[], Awaitable[T]], done: Callable[[T], bool]) -> T:
    deadline = time.monotonic() + 60
    while True:
        value = await read()
        if done(value):
            return value
        assert time.monotonic() < deadline, value
        await asyncio.sleep(0.1)


async def listed(gql: GraphQLClient, root: str, tag: str) -> list[dict[str, Any]]:
    filter_type, _, selection, _ = LISTS[root]
    query = (
        f"query($f: {filter_type}) {{ {root}(first: {N}, filter: $f) "
        f"{{ nodes {{ {selection} }} }} }}"
    )
    nodes: list[dict[str, Any]] = (await gql.data(query, {"f": {"tag": tag}}))[root]["nodes"]
    return nodes


async def each_alone(gql: GraphQLClient, root: str, ids: list[str]) -> list[dict[str, Any]]:
    _, one, selection, _ = LISTS[root]
    query = f"query($id: ID!) {{ {one}(id: $id) {{ {selection} }} }}"
    return [(await gql.data(query, {"id": pk}))[one] for pk in ids]


async def make_world(gql: GraphQLClient, tag: str, model: str) -> dict[str, str]:
    """N records of each kind, tagged: the filter of each list (episodes in two sets), by list."""
    agents, scenarios = [], []
    input: dict[str, Any]
    for i in range(N):
        input = {"firstName": f"Stale{i}", "lastName": tag, "tag": tag}
        made = await gql.mutate("createAgent", "CreateAgentInput", input, "agent { id }")
        agents.append(made["agent"]["id"])
        input = {"scenario": f"Scene {i}", "agentGoals": ["talk", "listen"], "tag": tag}
        made = await gql.mutate("createScenario", "CreateScenarioInput", input, "scenario { id }")
        scenarios.append(made["scenario"]["id"])
    for i in range(N):
        pair = {"agentId": agents[i], "otherAgentId": agents[(i + 1) % N]}
        input = {**pair, "relationship": "FRIEND", "tag": tag}
        await gql.mutate("createRelationship", "CreateRelationshipInput", input)
        played = start_input(scenarios[i], agents[:2], model, maxTurns=1, tag=f"{tag}-played")
        await gql.mutate("startSimulation", "StartSimulationInput", played)
        seated = start_input(scenarios[i], agents[:2], model, tag=f"{tag}-seated")
        seated["humanSeats"] = [0, 1]  # the worker parks it WAITING for its people
        await gql.mutate("startSimulation", "StartSimulationInput", seated)
        design = {
            "scenarios": {"ids": [scenarios[i]]},
            "agents": {"pairs": [agents[:2]]},
            "models": {"compare": [model], "partner": model},
            "maxTurns": 1,
            "judgeModel": model,
        }
        input = {"name": f"stale {i}", "tag": tag, "design": design}
        await gql.mutate("createExperiment", "CreateExperimentInput", input)
    for kind, status in (("played", "COMPLETED"), ("seated", "WAITING")):
        await eventually(
            lambda kind=kind: listed(gql, "episodes", f"{tag}-{kind}"),  # type: ignore[misc]
            lambda nodes, status=status: [n["status"] for n in nodes] == [status] * N,  # type: ignore[misc]
        )
    return {
        "agents": tag,
        "scenarios": tag,
        "relationships": tag,
        "played": f"{tag}-played",
        "seated": f"{tag}-seated",
        "experiments": tag,
    }


def root_of(list_name: str) -> str:
    return "episodes" if list_name in ("played", "seated") else list_name


async def every_list(gql: GraphQLClient, tags: dict[str, str]) -> dict[str, list[dict[str, Any]]]:
    """Every list as listed, each checked against its records read one by one."""
    found = {}
    for name, tag in tags.items():
        nodes = await listed(gql, root_of(name), tag)
        assert len(nodes) == N, (name, nodes)
        assert nodes == await each_alone(gql, root_of(name), [n["id"] for n in nodes]), name
        found[name] = nodes
    return found


async def edit_through_parley(
    gql: GraphQLClient, lists: dict[str, list[dict[str, Any]]], judge: str
) -> None:
    updates = (
        ("agents", "updateAgent", "UpdateAgentInput", "occupation"),
        ("scenarios", "updateScenario", "UpdateScenarioInput", "scenario"),
        ("relationships", "updateRelationship", "UpdateRelationshipInput", "backgroundStory"),
    )
    for name, field, input_type, edited in updates:
        for i, node in enumerate(lists[name]):
            input = {"id": node["id"], edited: f"edited by Parley {i}"}
            await gql.mutate(field, input_type, input)
    ids = [n["id"] for n in lists["played"]]
    input = {"episodeIds": ids, "judgeModel": judge}
    queued = await gql.mutate("rejudgeEpisodes", "RejudgeEpisodesInput", input, "rejudging { id }")
    progress = "query($id: ID!) { rejudging(id: $id) { progress { completed failed } } }"
    await eventually(
        lambda: gql.data(progress, {"id": queued["rejudging"]["id"]}),
        lambda data: data["rejudging"]["progress"] == {"completed": N, "failed": 0},
    )
    for node in lists["seated"]:
        await gql.mutate("cancelSimulation", "DeleteInput", {"id": node["id"]})
    for node in lists["experiments"]:
        for field in ("startExperiment", "cancelExperiment"):
            await gql.mutate(field, "ExperimentIdInput", {"id": node["id"]})


async def test_every_record_of_every_list_is_listed_as_written_by_anyone(
    api: GraphQLClient, other_writer: redis.Redis, fake_llm: FakeLLM
) -> None:
    tag = f"stale-{uuid.uuid4().hex[:8]}"
    model = fake_llm.model_name()
    tags = await make_world(api, tag, model)
    before = await every_list(api, tags)  # each page now held
    try:
        await edit_through_parley(api, before, model)
        after = await every_list(api, tags)
        for name in ("agents", "scenarios", "relationships"):
            _, field = EDITED_BY_HAND[name]
            assert [n[field] for n in after[name]] == [f"edited by Parley {i}" for i in range(N)]
        assert [len(n["evaluations"]) for n in after["played"]] == [1] * N
        assert all(n["evaluations"][0]["status"] == "COMPLETED" for n in after["played"])
        assert [n["status"] for n in after["seated"]] == ["CANCELLED"] * N
        assert all(n["startedAt"] is not None for n in after["experiments"])
        assert all(n["startedAt"] is None for n in before["experiments"])

        for name, nodes in after.items():
            path, field = EDITED_BY_HAND[root_of(name)]
            for i, node in enumerate(nodes):
                key = LISTS[root_of(name)][3].make_primary_key(node["id"])
                text = json.dumps(f"edited by hand {i}")
                await other_writer.execute_command("JSON.SET", key, path, text)  # type: ignore[no-untyped-call]
        by_hand = await every_list(api, tags)
        for name, nodes in by_hand.items():
            _, field = EDITED_BY_HAND[root_of(name)]
            assert [n[field] for n in nodes] == [f"edited by hand {i}" for i in range(N)], name
    finally:  # episodes stay, as runs do
        for name in ("agents", "scenarios", "relationships", "experiments"):
            keys = [LISTS[name][3].make_primary_key(n["id"]) for n in before[name]]
            await other_writer.delete(*keys)
