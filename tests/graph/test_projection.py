"""List queries fetch only what they select, and answer exactly what one-record lookups (which
read whole records through redis-om) answer, field by field, for records of both writers."""

import json
from typing import Any

import pytest
import redis.asyncio as redis
import strawberry
from graphql import GraphQLObjectType, build_schema

from bench.support.read_world import write_world
from parley.graph.episode_types import EPISODE_READS
from parley.graph.projection import Reads, own_types, reading
from parley.graph.schema import schema
from parley.graph.types import AGENT_READS, RELATIONSHIP_READS, SCENARIO_READS
from parley.resolvers.episodes import EPISODES
from parley.resolvers.keyset import SortOrder
from parley.storage.models import AgentProfile, EpisodeLog
from tests.support.lists import in_order
from tests.support.server import GraphQLClient

WORLD = "proj"
TAGS = (f"{WORLD}-sotopia", f"{WORLD}-parley")
A1 = f"{WORLD}A000001"
LISTS = {
    "episodes": [f'{{tag: "{tag}"}}' for tag in TAGS],
    # Older Sotopia agents and relationships have no tag: reach them by name and by agent.
    "agents": [f'{{name: "{WORLD}Sotopia"}}', f'{{name: "{WORLD}Parley"}}'],
    "scenarios": [f'{{tag: "{tag}"}}' for tag in TAGS],
    "relationships": [
        f'{{agentId: "{A1}"}}',
        f'{{agentId: "{WORLD}A000003"}}',
        f'{{tag: "{TAGS[1]}"}}',
    ],
}

EPISODE = {
    **{n: n for n in EPISODE_READS.fields},
    "statusHistory": "statusHistory { status at sequence attempt reason resumedFromTurn }",
    "progress": "progress { turn maxTurns }",
    "scenario": "scenario { id codename }",
    "game": "game { round phase over winner out teams { name members out } }",
    "agents": "agents { id name }",
    "relationships": "relationships { id relationship }",
    "turns": "turns { turn agentIndex speaker actionType argument to phase sequence at }",
    "rewards": "rewards { agentIndex agent { id } overall dimensions { dimension score } }",
    "evaluations": "evaluations { id judgeModel status rewards { agent { id } overall } error "
    "judges { model repeats } judgeRuns { model status } judgeRunsCounted }",
    "judges": "judges { model repeats }",
    "judgeRuns": "judgeRuns { model repeat status rewards { agentIndex overall } reasoning error "
    "code promptTokens completionTokens estimatedTokens }",
    "usage": "usage { model promptTokens completionTokens estimated cost }",
    "humanSeats": "humanSeats { seat claimed }",
    "waiting": "waiting { turn seats deadline }",
    "environmentMessages": "environmentMessages { sequence turn text to at }",
    "perspective": "perspective(seat: 1) { seat agentName goal background partners { name "
    "relationship profile } seen { sequence turn speaker text to } yourTurn { turn } }",
    "modelCalls": "modelCalls(first: 5) { totalCount nodes { id purpose turn messages { role } "
    "answer } }",
    "parent": "parent { id forkedAtTurn }",
    "forkChange": "forkChange { seatModels { seat model } injectMessage { text to } goals { seat "
    "goal } profiles { seat age secret } }",
    "forks": "forks { id parentId }",
    "replay": "replay { matched code turnsMatched divergence }",
    "family": "family { id parentId }",
}
"""Every field of an episode: its name, or for one of an object type, what to select of it."""
AGENT = {
    **{n: n for n in AGENT_READS.fields if n != "relationships"},
    "relationships": "relationships { type otherAgentId relationship { id } }",
}
SCENARIO = {
    **{n: n for n in SCENARIO_READS.fields if n != "game"},
    "game": "game { name teams { name seats } phases { name actionTypes } endings }",
}
RELATIONSHIP = {
    **{n: n for n in RELATIONSHIP_READS.fields if n not in ("agent", "otherAgent")},
    "agent": "agent { id name }",
    "otherAgent": "otherAgent { id }",
}
KINDS = {
    "episodes": ("episode", EPISODE, EPISODE_READS, "Episode"),
    "agents": ("agent", AGENT, AGENT_READS, "Agent"),
    "scenarios": ("scenario", SCENARIO, SCENARIO_READS, "Scenario"),
    "relationships": ("relationship", RELATIONSHIP, RELATIONSHIP_READS, "Relationship"),
}


@pytest.fixture(scope="module")
async def world(redis_client: redis.Redis) -> None:
    await write_world(redis_client, WORLD, episodes=12, agents=8, scenarios=6, relationships=8)


async def listed(
    gql: GraphQLClient, root: str, selection: str, filter: str
) -> list[dict[str, Any]]:
    query = f"{{ {root}(first: 100, filter: {filter}) {{ nodes {{ {selection} }} }} }}"
    nodes: list[dict[str, Any]] = (await gql.data(query))[root]["nodes"]
    assert nodes, query
    return nodes


async def looked_up(
    gql: GraphQLClient, one: str, selection: str, ids: list[str]
) -> list[dict[str, Any]]:
    """The same records through the one-record lookup, in one document."""
    parts = " ".join(f'r{i}: {one}(id: "{pk}") {{ {selection} }}' for i, pk in enumerate(ids))
    data = await gql.data(f"{{ {parts} }}")
    return [data[f"r{i}"] for i in range(len(ids))]


def test_every_field_of_a_listed_type_says_what_it_reads() -> None:
    """A field without its line would make every list query selecting it fetch whole records."""
    sdl = build_schema(schema.as_str())
    for _, fields, reads, type_name in KINDS.values():
        definition = sdl.get_type(type_name)
        assert isinstance(definition, GraphQLObjectType)
        assert set(definition.fields) == set(reads.fields) == set(fields), type_name


def test_an_unknown_field_means_whole_records() -> None:
    reads = Reads({"id": ("pk",), "tag": ("tag",)})
    assert reads.needed(["id", "__typename"]) == frozenset({"pk"})
    assert reads.needed(["id", "later"]) is None


def test_a_field_that_does_not_say_what_it_reads_is_refused() -> None:
    @strawberry.type
    class Said:
        @strawberry.field(metadata=reading("a", "b"))
        def first(self) -> int:
            return 1

        @strawberry.field
        def second(self) -> int:
            return 2

    with pytest.raises(TypeError, match=r"Said\.second does not say"):
        Reads.of_type(Said)


@strawberry.type
class Leaf:
    n: int


@strawberry.type
class Other:
    @strawberry.field
    def leaf(self) -> Leaf:
        return Leaf(n=1)


@strawberry.type
class Inner:
    leaves: list[Leaf]

    @strawberry.field
    async def other(self) -> Other:
        return Other()


@strawberry.type
class Root:
    @strawberry.field
    def inner(self) -> Inner | None:
        return None

    @strawberry.field
    async def elsewhere(self) -> list[Other]:
        return []


def test_kept_answers_are_made_of_the_types_reached_without_awaiting() -> None:
    """What an awaiting field returns (another record, say) and all beneath it is left out."""
    assert own_types(Root) == {"Inner", "Leaf"}
    assert own_types(Other) == {"Leaf"}


@pytest.mark.parametrize("root", KINDS)
async def test_each_field_alone_lists_as_it_looks_up(
    world: None, gql: GraphQLClient, root: str
) -> None:
    one, fields, _, _ = KINDS[root]
    for filter in LISTS[root]:
        ids = [n["id"] for n in await listed(gql, root, "id", filter)]
        for name, selection in fields.items():
            nodes = await listed(gql, root, f"id {selection}", filter)
            assert [n["id"] for n in nodes] == ids
            assert nodes == await looked_up(gql, one, f"id {selection}", ids), (filter, name)


@pytest.mark.parametrize("root", KINDS)
async def test_every_field_at_once_through_fragments_and_edges(
    world: None, gql: GraphQLClient, root: str
) -> None:
    one, fields, _, type_name = KINDS[root]
    every = " ".join(fields.values())
    for filter in LISTS[root]:
        query = (
            f"fragment F on {type_name} {{ {every} }} "
            f"{{ {root}(first: 100, filter: {filter}) {{ "
            f"edges {{ cursor node {{ __typename ...F }} }} "
            f"nodes {{ ... on {type_name} {{ id }} }} }} }}"
        )
        connection = (await gql.data(query))[root]
        nodes = [e["node"] for e in connection["edges"]]
        ids = [n["id"] for n in connection["nodes"]]
        assert [n["id"] for n in nodes] == ids and ids
        expected = await looked_up(gql, one, f"__typename {every}", ids)
        assert json.dumps(nodes) == json.dumps(expected)


async def test_sotopia_records_list_with_their_gaps(world: None, gql: GraphQLClient) -> None:
    """Sotopia's episodes carry none of Parley's run state (their turns are read from their
    messages: one action a turn after the first); its older agents lack later fields."""
    selection = "status tag turns { turn } progress { turn }"
    nodes = await listed(gql, "episodes", selection, LISTS["episodes"][0])
    turns = [{"turn": t} for t in range(1, 21)]
    assert {json.dumps(n) for n in nodes} == {
        json.dumps({"status": "COMPLETED", "tag": TAGS[0], "turns": turns, "progress": {"turn": 0}})
    }
    agents = await listed(gql, "agents", "id tag mbti", LISTS["agents"][0])
    assert {"id": A1, "tag": "", "mbti": ""} in agents


PAGE = """query($after: String, $filter: EpisodeFilter) {
  episodes(first: 4, after: $after, filter: $filter) {
    totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    edges { cursor node { id status } }
  }
}"""


@pytest.mark.parametrize(
    "filter",
    [
        {"tag": TAGS[1]},
        {"tag": TAGS[1], "status": "FAILED"},
        {"agentId": A1},
        {"scenarioId": f"{WORLD}S000000"},
    ],
)
async def test_pages_walk_the_filtered_list_in_order(
    world: None, gql: GraphQLClient, redis_client: redis.Redis, filter: dict[str, Any]
) -> None:
    expected = await redis_om_order(redis_client, filter)
    seen: list[str] = []
    after = None
    while True:
        page = (await gql.data(PAGE, {"after": after, "filter": filter}))["episodes"]
        assert page["totalCount"] == len(expected)
        assert page["pageInfo"]["hasPreviousPage"] is (after is not None)
        cursors = [e["cursor"] for e in page["edges"]]
        assert page["pageInfo"]["startCursor"] == (cursors[0] if cursors else None)
        assert page["pageInfo"]["endCursor"] == (cursors[-1] if cursors else None)
        seen += [e["node"]["id"] for e in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert seen == expected and expected


async def redis_om_order(client: redis.Redis, filter: dict[str, Any]) -> list[str]:
    """The ids redis-om's own query finds for `filter`, newest first (those with no creation
    time, Sotopia's, last), then by id."""
    e = EpisodeLog
    terms: list[Any] = []
    if "tag" in filter:
        terms.append(e.tag == filter["tag"])
    if "status" in filter:
        terms.append(e.status == filter["status"])
    if "agentId" in filter:
        terms.append(e.agents << [filter["agentId"]])  # type: ignore[operator]
    if "scenarioId" in filter:
        terms.append(e.environment == filter["scenarioId"])
    found = [str(r.pk) for r in await e.find(*terms).all()]
    return await in_order(client, e, EPISODES, SortOrder.DESCENDING, found)


async def test_empty_pages(world: None, gql: GraphQLClient) -> None:
    query = (
        '{ episodes(first: 0, filter: {tag: "%s"}) '
        "{ totalCount nodes { id } pageInfo { hasNextPage } } }"
    )
    assert (await gql.data(query % TAGS[1]))["episodes"] == {
        "totalCount": 6,
        "nodes": [],
        "pageInfo": {"hasNextPage": True},
    }


async def test_changed_and_deleted_records_are_never_served_stale(
    world: None, gql: GraphQLClient, redis_client: redis.Redis
) -> None:
    await write_world(redis_client, "stale", episodes=4, agents=4, scenarios=2, relationships=2)
    tag = '{tag: "stale-parley"}'
    before = await listed(gql, "episodes", "id status reasoning", tag)
    assert len(before) == 2

    # Another writer (Sotopia, say) rewrites one in place; a delete removes the other.
    key = EpisodeLog.make_primary_key(before[0]["id"])
    await redis_client.json().set(key, "$.reasoning", "rewritten")
    deleted = await gql.data(
        "mutation($id: ID!) { deleteEpisode(input: {id: $id}) { deletedId userErrors { code } } }",
        {"id": before[1]["id"]},
    )
    assert deleted["deleteEpisode"] == {"deletedId": before[1]["id"], "userErrors": []}
    after = await listed(gql, "episodes", "id status reasoning", tag)
    assert after == [{**before[0], "reasoning": "rewritten"}]
    count = f"{{ episodes(filter: {tag}) {{ totalCount }} }}"
    assert (await gql.data(count))["episodes"]["totalCount"] == 1

    agent = (await listed(gql, "agents", "id firstName", tag))[0]
    await gql.data(
        'mutation($id: ID!) { updateAgent(input: {id: $id, firstName: "Renamed"}) '
        "{ userErrors { code } } }",
        {"id": agent["id"]},
    )
    assert {"id": agent["id"], "firstName": "Renamed"} in await listed(
        gql, "agents", "id firstName", tag
    )
    await redis_client.delete(AgentProfile.make_primary_key(agent["id"]))
    assert agent["id"] not in [a["id"] for a in await listed(gql, "agents", "id", tag)]
