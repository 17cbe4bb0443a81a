"""Relationships: one per pair, two distinct existing agents, queried from either side."""

from typing import Any

import pytest

from tests.support.server import GraphQLClient, create_agent

CREATE = """
mutation($input: CreateRelationshipInput!) {
  createRelationship(input: $input) {
    relationship { id agentId otherAgentId relationship backgroundStory
                   agent { name } otherAgent { name } }
    userErrors { field message code }
  }
}"""
UPDATE = """
mutation($input: UpdateRelationshipInput!) {
  updateRelationship(input: $input) {
    relationship { id relationship backgroundStory tag } userErrors { field code }
  }
}"""
LIST = """
query($filter: RelationshipFilter, $first: Int) {
  relationships(filter: $filter, first: $first) { totalCount nodes { id relationship } }
}"""
BETWEEN = """
query($a: ID!, $b: ID!) { relationshipBetween(agentId: $a, otherAgentId: $b) { id } }"""


@pytest.fixture
async def trio(gql: GraphQLClient) -> list[str]:
    names = ("Rel1", "Rel2", "Rel3")
    return [(await create_agent(gql, firstName=n, tag="rel-test"))["id"] for n in names]


async def relate(gql: GraphQLClient, a: str, b: str, kind: str, **extra: Any) -> dict[str, Any]:
    variables = {"input": {"agentId": a, "otherAgentId": b, "relationship": kind, **extra}}
    payload: dict[str, Any] = (await gql.data(CREATE, variables))["createRelationship"]
    return payload


async def test_create_query_update_delete(gql: GraphQLClient, trio: list[str]) -> None:
    a, b, c = trio
    made = await relate(gql, a, b, "FAMILY_MEMBER", backgroundStory="Cousins", tag="rel-test")
    assert made["userErrors"] == []
    rel = made["relationship"]
    assert rel["agent"]["name"] == "Rel1 Byron" and rel["otherAgent"]["name"] == "Rel2 Byron"
    assert (await relate(gql, a, c, "STRANGER"))["userErrors"] == []

    for x, y in ((a, b), (b, a)):
        found = await gql.data(BETWEEN, {"a": x, "b": y})
        assert found["relationshipBetween"]["id"] == rel["id"]
    assert (await gql.data(BETWEEN, {"a": b, "b": c}))["relationshipBetween"] is None

    of_a = await gql.data(LIST, {"filter": {"agentId": a}})
    assert of_a["relationships"]["totalCount"] == 2
    pair = await gql.data(LIST, {"filter": {"agentIds": [b, a]}})
    assert [n["id"] for n in pair["relationships"]["nodes"]] == [rel["id"]]
    family = await gql.data(LIST, {"filter": {"relationship": "FAMILY_MEMBER", "tag": "rel-test"}})
    assert [n["id"] for n in family["relationships"]["nodes"]] == [rel["id"]]

    seen_from_b = await gql.data(
        "query($id: ID!) { agent(id: $id) { relationships { type otherAgent { id } } } }",
        {"id": b},
    )
    assert seen_from_b["agent"]["relationships"] == [
        {"type": "FAMILY_MEMBER", "otherAgent": {"id": a}}
    ]

    changed = await gql.data(UPDATE, {"input": {"id": rel["id"], "relationship": "FRIEND"}})
    assert changed["updateRelationship"]["relationship"]["relationship"] == "FRIEND"
    assert changed["updateRelationship"]["relationship"]["backgroundStory"] == "Cousins"

    removed = await gql.data(
        "mutation($id: ID!) { deleteRelationship(input: {id: $id}) { deletedId } }", rel
    )
    assert removed["deleteRelationship"]["deletedId"] == rel["id"]
    assert (await relate(gql, b, a, "ACQUAINTANCE"))["userErrors"] == []


async def test_duplicate_pair_in_either_order_is_a_conflict(
    gql: GraphQLClient, trio: list[str], unchanged: Any
) -> None:
    a, b, _ = trio
    assert (await relate(gql, a, b, "FRIEND"))["userErrors"] == []
    async with unchanged():
        for x, y in ((a, b), (b, a)):
            refused = await relate(gql, x, y, "STRANGER")
            assert refused["relationship"] is None
            assert refused["userErrors"][0]["code"] == "CONFLICT"


async def test_concurrent_duplicates_make_one_record(gql: GraphQLClient, trio: list[str]) -> None:
    import asyncio

    a, b, _ = trio
    results = await asyncio.gather(*(relate(gql, a, b, "FRIEND") for _ in range(6)))
    assert sum(1 for r in results if r["relationship"]) == 1
    assert all(r["userErrors"][0]["code"] == "CONFLICT" for r in results if not r["relationship"])


async def test_bad_inputs_write_nothing(
    gql: GraphQLClient, trio: list[str], unchanged: Any
) -> None:
    a, b, _ = trio
    async with unchanged():
        self_rel = await relate(gql, a, a, "FRIEND")
        assert self_rel["userErrors"][0]["code"] == "INVALID"
        assert "two different agents" in self_rel["userErrors"][0]["message"]
        missing = await relate(gql, a, "no-such-agent", "FRIEND")
        assert missing["userErrors"] == [
            {
                "field": ["input", "otherAgentId"],
                "message": "no agent with id 'no-such-agent'",
                "code": "NOT_FOUND",
            }
        ]
        for bad in ("SIBLING", 6, -1):
            await gql.errors(
                CREATE, {"input": {"agentId": a, "otherAgentId": b, "relationship": bad}}
            )
        unknown = await gql.data(UPDATE, {"input": {"id": "nope", "relationship": "FRIEND"}})
        assert unknown["updateRelationship"]["userErrors"][0]["code"] == "NOT_FOUND"
        messages = await gql.errors(LIST, {"filter": {"agentIds": [a]}})
        assert any("exactly two" in m for m in messages)
        await gql.errors(LIST, {"first": 1000})


UPDATE_AGENT = """
mutation($input: UpdateAgentInput!) {
  updateAgent(input: $input) { agent { id name } userErrors { field message code } }
}"""


async def test_agents_who_may_meet_keep_different_names(
    gql: GraphQLClient, trio: list[str], unchanged: Any
) -> None:
    """Relationship sampling pairs the two agents of a relationship in an episode, which cannot
    seat two agents of one name: a relationship between namesakes is refused, and so is giving
    an agent the name of one it has a relationship with. Other renames are free."""
    a, b, c = trio
    namesake = (await create_agent(gql, firstName="Rel1", tag="rel-test"))["id"]  # a's name
    async with unchanged():
        refused = await relate(gql, a, namesake, "FRIEND")
    assert refused["relationship"] is None
    assert refused["userErrors"] == [
        {
            "field": ["input", "otherAgentId"],
            "message": "both agents are named 'Rel1 Byron': a relationship joins two agents who "
            "may meet in an episode, and they need different names",
            "code": "INVALID",
        }
    ]

    assert (await relate(gql, a, b, "FRIEND"))["userErrors"] == []
    rename = {"input": {"id": b, "firstName": "Rel1"}}
    async with unchanged():
        clash = (await gql.data(UPDATE_AGENT, rename))["updateAgent"]
    assert clash["agent"] is None
    assert clash["userErrors"] == [
        {
            "field": ["input", "firstName"],
            "message": f"agent {a!r}, with whom this agent has a relationship, is named "
            "'Rel1 Byron': two agents who may meet in an episode need different names",
            "code": "CONFLICT",
        }
    ]
    free = (await gql.data(UPDATE_AGENT, {"input": {"id": c, "firstName": "Rel1"}}))["updateAgent"]
    assert free["userErrors"] == [] and free["agent"]["name"] == "Rel1 Byron"
