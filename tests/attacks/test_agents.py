"""Agent filters no search can express: `|` alone (redis-om drops it from the query, leaving
it malformed: INTERNAL before, for the name, gender and occupation filters), NUL, DEL and a
lone surrogate; for the name, which is searched as a first and a last name when it has two
words, either of them. Each is refused as BAD_USER_INPUT.

And an agent deleted while a relationship to it is created: one of the two must be refused."""

import asyncio
from typing import Any

import pytest

from tests.support.server import GraphQLClient
from tests.support.world import create_agents

UNSEARCHABLE = ["|", "||", "a\x00b", "\x7f", "\ud800"]
AGENTS = "query($filter: AgentFilter) { agents(filter: $filter) { totalCount } }"


@pytest.mark.parametrize("field", ["name", "gender", "occupation", "tag"])
async def test_an_unsearchable_agent_filter_is_refused(gql: GraphQLClient, field: str) -> None:
    for value in [*UNSEARCHABLE, *(["| x"] if field == "name" else [])]:  # a name's two parts
        body = await gql.post(AGENTS, {"filter": {field: value}})
        assert [e["extensions"]["code"] for e in body["errors"]] == ["BAD_USER_INPUT"], body
        assert body["errors"][0]["message"].startswith("A filter value or id cannot"), body


RELATE = """
mutation($a: ID!, $b: ID!) {
  createRelationship(input: {agentId: $a, otherAgentId: $b, relationship: FRIEND}) {
    relationship { id } userErrors { code }
  }
}"""
DELETE = "mutation($a: ID!) { deleteAgent(input: {id: $a}) { userErrors { code } } }"
ROUNDS = 10


async def race(
    gql: GraphQLClient, name: str, deletion: str
) -> tuple[list[str], dict[str, Any], dict[str, Any]]:
    """Two new agents, then their relationship made while `deletion` deletes the first: their
    ids, and what each of the two answered."""
    ids = await create_agents(gql, f"{name} A", f"{name} B")
    related, deleted = await asyncio.gather(
        gql.data(RELATE, {"a": ids[0], "b": ids[1]}), gql.data(deletion, {"a": ids[0]})
    )
    return ids, related, deleted


async def test_an_agent_and_a_relationship_to_it_are_never_both_accepted(
    gql: GraphQLClient,
) -> None:
    """deleteAgent (without cascade) and createRelationship of that agent sent at once: each
    checks before it writes, and neither sees the other, so both were accepted in 39 of 40
    rounds, leaving a relationship whose agent is gone (`agent: null`), what the README says
    both refuse (IN_USE; an unknown agent)."""
    both = 0
    for n in range(ROUNDS):
        _, related, deleted = await race(gql, f"Race{n}", DELETE)
        if (
            related["createRelationship"]["relationship"]
            and not deleted["deleteAgent"]["userErrors"]
        ):
            both += 1
    assert both == 0, f"{both} of {ROUNDS} relationships point at a deleted agent"


CASCADE = """
mutation($a: ID!) {
  deleteAgent(input: {id: $a, cascade: true}) { deletedRelationshipIds userErrors { code } }
}"""
BETWEEN = """
query($a: ID!, $b: ID!) { relationshipBetween(agentId: $a, otherAgentId: $b) { id } }"""


async def test_a_cascade_deletes_a_relationship_made_while_it_runs(gql: GraphQLClient) -> None:
    """deleteAgent with cascade and createRelationship of that agent at once: a relationship
    accepted is one the deletion found and deleted, or one refused for want of the agent; none
    is left pointing at a deleted agent."""
    for n in range(ROUNDS):
        ids, related, deleted = await race(gql, f"Cascade{n}", CASCADE)
        assert deleted["deleteAgent"]["userErrors"] == [], deleted
        made = related["createRelationship"]["relationship"]
        removed = deleted["deleteAgent"]["deletedRelationshipIds"]
        assert removed == ([made["id"]] if made else []), (related, deleted)
        assert (await gql.data(BETWEEN, {"a": ids[0], "b": ids[1]}))["relationshipBetween"] is None
