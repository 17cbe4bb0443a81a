"""storage/records.py: records inserted never over a stored one, saved together and removed;
and an update through Parley must not undo what another writer wrote meanwhile to a field the
update does not name.

updateAgent, updateScenario and updateRelationship read the record (JSON.GET), apply the
changes and save the whole document back (JSON.SET at the root). A write another writer
(Sotopia's code on the same Redis) completes between that read and that save is reverted: once
both have answered, Redis and every read hold the older value, a read older than a completed
write. Here the other writer writes the moment MONITOR shows Parley's read of the record, to a
real `parley serve` process on the same Redis.
"""

import asyncio
import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
import redis.asyncio as redis

from bench.support.processes import api_process, parley_env
from parley.core.errors import ErrorCode
from parley.storage.models import AgentProfile, EnvironmentProfile, Record, RelationshipProfile
from parley.storage.records import exist, get_many, insert, insert_new, remove, save_all
from tests.support.server import GraphQLClient
from tests.support.world import create_agents, create_scenario

ROUNDS = 10


@pytest.fixture(scope="module")
async def parley(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    """A `parley serve` process of its own (no worker) on the shared Redis; its URL."""
    directory = tmp_path_factory.mktemp("records")
    env = parley_env(redis_url, directory / "data", worker="false")
    with api_process(env, directory / "api.log") as api:
        yield api.url


async def made(gql: GraphQLClient, tag: str) -> dict[str, str]:
    """An agent, a scenario and a relationship of two new agents; kind -> id."""
    agents = await create_agents(gql, f"One {tag}", f"Two {tag}", tag=tag)
    scenario = await create_scenario(gql, scenario=f"Scene {tag}", agentGoals=["a", "b"], tag=tag)
    relationship = await gql.mutate(
        "createRelationship",
        "CreateRelationshipInput",
        {"agentId": agents[0], "otherAgentId": agents[1], "relationship": "FRIEND", "tag": tag},
        "relationship { id }",
    )
    return {
        "agent": agents[0],
        "scenario": scenario,
        "relationship": str(relationship["relationship"]["id"]),
    }


# kind -> (record, mutation, its input type, the field it changes, a stored key it leaves alone)
KINDS: dict[str, tuple[type[Record], str, str, str, str]] = {
    "agent": (AgentProfile, "updateAgent", "UpdateAgentInput", "firstName", "last_name"),
    "scenario": (
        EnvironmentProfile,
        "updateScenario",
        "UpdateScenarioInput",
        "codename",
        "scenario",
    ),
    "relationship": (
        RelationshipProfile,
        "updateRelationship",
        "UpdateRelationshipInput",
        "backgroundStory",
        "tag",
    ),
}


async def write_when_read(
    redis_url: str, client: redis.Redis, key: str, path: str, value: str
) -> None:
    """Set `path` of `key` as soon as a client reads `key` (seen through MONITOR)."""
    watcher = redis.Redis.from_url(redis_url)
    try:
        async with watcher.monitor() as monitor:
            async for seen in monitor.listen():
                command = str(seen.get("command", ""))
                if command.startswith("JSON.GET") and key in command:
                    await client.json().set(key, path, value)
                    return
    finally:
        await watcher.aclose()


@pytest.mark.parametrize("kind", KINDS)
async def test_an_update_keeps_what_another_writer_wrote_meanwhile(
    parley: str, redis_url: str, redis_client: redis.Redis, kind: str
) -> None:
    record, mutation, input_type, field, other_key = KINDS[kind]
    async with httpx.AsyncClient(base_url=parley, timeout=30) as http:
        gql = GraphQLClient(http)
        pk = (await made(gql, f"lost-{uuid.uuid4().hex[:8]}"))[kind]
        key = record.make_primary_key(pk)
        lost = []
        for n in range(ROUNDS):
            other = asyncio.create_task(
                write_when_read(redis_url, redis_client, key, f"$.{other_key}", f"other {n}")
            )
            await asyncio.sleep(0.2)  # MONITOR is on
            await gql.mutate(mutation, input_type, {"id": pk, field: f"parley {n}"})
            await asyncio.wait_for(other, 5)
            stored = await redis_client.json().get(key, f"$.{other_key}")
            if stored != [f"other {n}"]:
                lost.append((f"other {n}", stored))
    assert lost == [], f"{len(lost)} of {ROUNDS} completed writes undone: {lost[:3]}"


TAG = "storage-records"


def scenario(text: str) -> EnvironmentProfile:
    return EnvironmentProfile(scenario=text, agent_goals=["g1", "g2"], tag=TAG)


async def test_a_taken_key_is_never_overwritten(redis_client: redis.Redis) -> None:
    stored, new = scenario("first"), scenario("new")
    assert await insert(stored) == (stored, [])
    taken = scenario("second")
    taken.pk = stored.pk
    refused, errors = await insert(taken)
    assert refused is None and [e.code for e in errors] == [ErrorCode.CONFLICT]
    assert await insert_new(redis_client, [taken, new]) == [False, True]
    assert (await EnvironmentProfile.get(stored.pk)).scenario == "first"
    assert (await EnvironmentProfile.get(new.pk)).scenario == "new"


async def test_records_saved_together_are_removed_together(redis_client: redis.Redis) -> None:
    people = [AgentProfile(first_name=f"Rec{i}", last_name="Ord", tag=TAG) for i in range(3)]
    await save_all(AgentProfile, people)
    refs: list[tuple[type[Record], str]] = [(AgentProfile, str(p.pk)) for p in people]
    assert await exist(redis_client, refs) == [True, True, True]
    await remove(AgentProfile, str(people[0].pk), str(people[2].pk))
    assert await exist(redis_client, refs) == [False, True, False]
    await remove(AgentProfile)  # nothing named: nothing removed
    assert await exist(redis_client, refs[1:2]) == [True]


async def test_many_records_are_read_in_the_order_asked_with_none_where_missing(
    redis_client: redis.Redis,
) -> None:
    first, second = scenario("one of many"), scenario("two of many")
    await save_all(EnvironmentProfile, [first, second])
    asked = [str(second.pk), "no-such-scenario", str(first.pk)]
    found = await get_many(redis_client, EnvironmentProfile, asked)
    assert [s.scenario if s else None for s in found] == ["two of many", None, "one of many"]
    assert found[0] == second
    assert await get_many(redis_client, EnvironmentProfile, []) == []
