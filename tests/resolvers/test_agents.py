"""Agents over real HTTP: every query and mutation, and every bad input refused cleanly."""

from typing import Any

import pytest

from tests.support.server import CREATE_AGENT as CREATE
from tests.support.server import GraphQLClient, create_agent

UPDATE = """
mutation($input: UpdateAgentInput!) {
  updateAgent(input: $input) {
    agent { id firstName age occupation tag }
    userErrors { field message code }
  }
}"""
DELETE = """
mutation($input: DeleteAgentInput!) {
  deleteAgent(input: $input) { deletedId deletedRelationshipIds userErrors { field message code } }
}"""
LIST = """
query($filter: AgentFilter, $first: Int, $after: String) {
  agents(filter: $filter, first: $first, after: $after) {
    totalCount
    edges { cursor node { id name } }
    pageInfo { hasNextPage hasPreviousPage endCursor }
  }
}"""
RELATE = """
mutation($input: CreateRelationshipInput!) {
  createRelationship(input: $input) { relationship { id } userErrors { code } }
}"""


async def test_create_read_update_delete(gql: GraphQLClient) -> None:
    agent = await create_agent(
        gql, age=36, occupation="Mathematician", gender="Woman", secret="s", moralValues=["Care"]
    )
    assert len(agent["id"]) == 26 and agent["name"] == "Ada Byron"

    fetched = await gql.data("query($id: ID!) { agent(id: $id) { name secret } }", agent)
    assert fetched["agent"] == {"name": "Ada Byron", "secret": "s"}

    updated = await gql.data(UPDATE, {"input": {"id": agent["id"], "age": 37}})
    assert updated["updateAgent"]["agent"]["age"] == 37
    assert updated["updateAgent"]["agent"]["occupation"] == "Mathematician"

    removed = await gql.data(DELETE, {"input": {"id": agent["id"]}})
    assert removed["deleteAgent"] == {
        "deletedId": agent["id"],
        "deletedRelationshipIds": [],
        "userErrors": [],
    }
    gone = await gql.data("query($id: ID!) { agent(id: $id) { id } }", agent)
    assert gone["agent"] is None


async def test_user_given_id_and_conflict(gql: GraphQLClient, unchanged: Any) -> None:
    agent = await create_agent(gql, id="tmppk_agent_given")
    assert agent["id"] == "tmppk_agent_given"
    async with unchanged():
        again = await gql.data(
            CREATE, {"input": {"id": "tmppk_agent_given", "firstName": "X", "lastName": "Y"}}
        )
    assert again["createAgent"]["agent"] is None
    assert again["createAgent"]["userErrors"][0]["code"] == "CONFLICT"


async def test_filters_and_pagination(gql: GraphQLClient) -> None:
    for i in range(5):
        await create_agent(gql, firstName=f"Page{i}", occupation="Pager", tag="paging")
    await create_agent(gql, firstName="Other", gender="Nonbinary", tag="paging")

    first = (await gql.data(LIST, {"filter": {"occupation": "pager"}, "first": 2}))["agents"]
    assert first["totalCount"] == 5 and len(first["edges"]) == 2
    assert first["pageInfo"]["hasNextPage"] and not first["pageInfo"]["hasPreviousPage"]
    seen = [e["node"]["name"] for e in first["edges"]]
    after = first["pageInfo"]["endCursor"]
    while after:
        page = (
            await gql.data(LIST, {"filter": {"occupation": "pager"}, "first": 2, "after": after})
        )["agents"]
        seen += [e["node"]["name"] for e in page["edges"]]
        after = page["pageInfo"]["endCursor"] if page["pageInfo"]["hasNextPage"] else None
    assert sorted(seen) == [f"Page{i} Byron" for i in range(5)]

    by_gender = await gql.data(LIST, {"filter": {"gender": "nonbinary", "tag": "paging"}})
    assert [e["node"]["name"] for e in by_gender["agents"]["edges"]] == ["Other Byron"]
    by_name = await gql.data(LIST, {"filter": {"name": "page3 byron"}})
    assert [e["node"]["name"] for e in by_name["agents"]["edges"]] == ["Page3 Byron"]
    by_tag = await gql.data(LIST, {"filter": {"tag": "paging"}, "first": 0})
    assert by_tag["agents"]["totalCount"] == 6 and by_tag["agents"]["edges"] == []


@pytest.mark.parametrize(
    ("fields", "path", "needle"),
    [
        ({"firstName": ""}, ["input", "firstName"], "cannot be empty"),
        ({"firstName": "   "}, ["input", "firstName"], "cannot be empty"),
        ({"age": -1}, ["input", "age"], "must be at least 0"),
        ({"age": 151}, ["input", "age"], "must be at most 150"),
        ({"occupation": "x" * 201}, ["input", "occupation"], "at most 200"),
        ({"secret": "x" * 20_001}, ["input", "secret"], "at most 20000"),
        ({"moralValues": ["v"] * 51}, ["input", "moralValues"], "at most 50"),
        ({"id": "bad id with spaces"}, ["input", "id"], "an id is 1 to 100 letters"),
    ],
)
async def test_create_refuses_bad_values(
    gql: GraphQLClient, unchanged: Any, fields: dict[str, Any], path: list[str], needle: str
) -> None:
    async with unchanged():
        body = await gql.data(CREATE, {"input": {"firstName": "A", "lastName": "B", **fields}})
    payload = body["createAgent"]
    assert payload["agent"] is None
    assert payload["userErrors"][0]["field"] == path
    assert payload["userErrors"][0]["code"] == "INVALID"
    assert needle in payload["userErrors"][0]["message"]


@pytest.mark.parametrize(
    "variables",
    [
        {"input": {"firstName": "A"}},  # missing required field
        {"input": {"firstName": "A", "lastName": "B", "age": "old"}},  # wrong type
        {"input": {"firstName": "A", "lastName": "B", "age": 2**40}},  # beyond Int
        {"input": {"firstName": 5, "lastName": "B"}},
        {"input": {"firstName": "A", "lastName": "B", "unknown": 1}},
    ],
)
async def test_create_refuses_wrong_types(
    gql: GraphQLClient, unchanged: Any, variables: dict[str, Any]
) -> None:
    async with unchanged():
        await gql.errors(CREATE, variables)


async def test_update_and_delete_unknown_id(gql: GraphQLClient, unchanged: Any) -> None:
    async with unchanged():
        updated = await gql.data(UPDATE, {"input": {"id": "no-such-agent", "age": 3}})
        removed = await gql.data(DELETE, {"input": {"id": "no-such-agent"}})
    assert updated["updateAgent"]["userErrors"][0]["code"] == "NOT_FOUND"
    assert removed["deleteAgent"]["userErrors"][0]["code"] == "NOT_FOUND"
    assert removed["deleteAgent"]["deletedId"] is None


async def test_update_refuses_bad_values(gql: GraphQLClient, unchanged: Any) -> None:
    agent = await create_agent(gql)
    async with unchanged():
        empty = await gql.data(UPDATE, {"input": {"id": agent["id"], "firstName": ""}})
        null = await gql.data(UPDATE, {"input": {"id": agent["id"], "lastName": None}})
    assert empty["updateAgent"]["userErrors"][0]["field"] == ["input", "firstName"]
    assert null["updateAgent"]["userErrors"][0]["field"] == ["input", "lastName"]


async def test_delete_refused_while_referenced_unless_cascade(
    gql: GraphQLClient, unchanged: Any
) -> None:
    one, two = await create_agent(gql), await create_agent(gql, firstName="Bea")
    made = await gql.data(
        RELATE,
        {"input": {"agentId": one["id"], "otherAgentId": two["id"], "relationship": "FRIEND"}},
    )
    rel_id = made["createRelationship"]["relationship"]["id"]
    async with unchanged():
        refused = await gql.data(DELETE, {"input": {"id": one["id"]}})
    assert refused["deleteAgent"]["userErrors"][0]["code"] == "IN_USE"

    removed = await gql.data(DELETE, {"input": {"id": one["id"], "cascade": True}})
    assert removed["deleteAgent"]["deletedRelationshipIds"] == [rel_id]
    left = await gql.data("query($id: ID!) { relationship(id: $id) { id } }", {"id": rel_id})
    assert left["relationship"] is None
    # The pair is free again: a new agent may relate to the remaining one.
    three = await create_agent(gql, firstName="Cy")
    again = await gql.data(
        RELATE,
        {"input": {"agentId": three["id"], "otherAgentId": two["id"], "relationship": "STRANGER"}},
    )
    assert again["createRelationship"]["userErrors"] == []


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ({"first": 101}, "between 0 and 100"),
        ({"first": -1}, "between 0 and 100"),
        ({"after": "not-a-cursor"}, "malformed cursor"),
        ({"after": "cGFybGV5Oi01"}, "malformed cursor"),  # a negative offset
    ],
)
async def test_list_refuses_bad_page_arguments(
    gql: GraphQLClient, args: dict[str, Any], needle: str
) -> None:
    messages = await gql.errors(LIST, args)
    assert any(needle in m for m in messages)


@pytest.mark.parametrize("tag", ["?", "a\tb", "`", "_", "a|b", "x y", "semi;colon"])
async def test_filters_take_any_text(gql: GraphQLClient, tag: str) -> None:
    """Punctuation, whitespace and control characters are escaped in the search, never an error
    (what no search can express is refused: tests/attacks/test_agents.py)."""
    await create_agent(gql, tag=tag)
    for query in (
        LIST,
        "query($filter: EpisodeFilter) { episodes(filter: $filter) { totalCount } }",
    ):
        body = await gql.post(query, {"filter": {"tag": tag}})
        assert "errors" not in body, body
    found = (await gql.data(LIST, {"filter": {"tag": tag}}))["agents"]
    assert found["totalCount"] == 1
