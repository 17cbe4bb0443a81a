"""Scenarios over real HTTP."""

from typing import Any

import pytest

from tests.support.server import GraphQLClient

CREATE = """
mutation($input: CreateScenarioInput!) {
  createScenario(input: $input) {
    scenario { id codename scenario agentGoals relationship tag }
    userErrors { field message code }
  }
}"""
UPDATE = """
mutation($input: UpdateScenarioInput!) {
  updateScenario(input: $input) {
    scenario { id codename relationship agentGoals }
    userErrors { field message code }
  }
}"""
DELETE = """
mutation($id: ID!) { deleteScenario(input: {id: $id}) { deletedId userErrors { code } } }"""
LIST = """
query($filter: ScenarioFilter, $first: Int, $after: String) {
  scenarios(filter: $filter, first: $first, after: $after) {
    totalCount nodes { codename } pageInfo { hasNextPage endCursor }
  }
}"""
VALID = {
    "scenario": "Two flatmates split the cost of a broken fridge.",
    "agentGoals": ["Pay as little as possible", "Get the fridge replaced this week"],
    "codename": "broken_fridge",
    "relationship": "FRIEND",
    "tag": "scenario-test",
}


async def test_crud(gql: GraphQLClient) -> None:
    made = (await gql.data(CREATE, {"input": VALID}))["createScenario"]
    assert made["userErrors"] == []
    scenario = made["scenario"]
    assert scenario["relationship"] == "FRIEND" and scenario["agentGoals"] == VALID["agentGoals"]

    changed = await gql.data(UPDATE, {"input": {"id": scenario["id"], "relationship": "STRANGER"}})
    assert changed["updateScenario"]["scenario"]["relationship"] == "STRANGER"
    assert changed["updateScenario"]["scenario"]["codename"] == "broken_fridge"

    listed = await gql.data(LIST, {"filter": {"codename": "broken_fridge"}})
    assert listed["scenarios"]["totalCount"] == 1

    removed = await gql.data(DELETE, {"id": scenario["id"]})
    assert removed["deleteScenario"]["deletedId"] == scenario["id"]
    assert (await gql.data(LIST, {"filter": {"codename": "broken_fridge"}}))["scenarios"][
        "totalCount"
    ] == 0


async def test_list_by_tag_pages(gql: GraphQLClient) -> None:
    for i in range(3):
        await gql.data(CREATE, {"input": {**VALID, "codename": f"c{i}", "tag": "scen-pages"}})
    page = (await gql.data(LIST, {"filter": {"tag": "scen-pages"}, "first": 2}))["scenarios"]
    assert page["totalCount"] == 3 and page["pageInfo"]["hasNextPage"]
    rest = await gql.data(
        LIST, {"filter": {"tag": "scen-pages"}, "first": 2, "after": page["pageInfo"]["endCursor"]}
    )
    assert len(rest["scenarios"]["nodes"]) == 1 and not rest["scenarios"]["pageInfo"]["hasNextPage"]


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"scenario": ""}, ["input", "scenario"]),
        ({"agentGoals": ["only one"]}, ["input", "agentGoals"]),
        ({"agentGoals": ["a", ""]}, ["input", "agentGoals", "1"]),
        ({"codename": "c" * 201}, ["input", "codename"]),
    ],
)
async def test_create_refuses_bad_values(
    gql: GraphQLClient, unchanged: Any, change: dict[str, Any], path: list[str]
) -> None:
    async with unchanged():
        payload = (await gql.data(CREATE, {"input": {**VALID, **change}}))["createScenario"]
    assert payload["scenario"] is None
    assert payload["userErrors"][0]["field"] == path
    assert payload["userErrors"][0]["code"] == "INVALID"


async def test_relationship_out_of_range_is_a_validation_error(
    gql: GraphQLClient, unchanged: Any
) -> None:
    async with unchanged():
        for bad in ("BEST_FRIEND", 7, 3):
            messages = await gql.errors(CREATE, {"input": {**VALID, "relationship": bad}})
            assert any("RelationshipType" in m for m in messages)


async def test_unknown_ids(gql: GraphQLClient, unchanged: Any) -> None:
    async with unchanged():
        updated = await gql.data(UPDATE, {"input": {"id": "nope", "codename": "x"}})
        removed = await gql.data(DELETE, {"id": "nope"})
    assert updated["updateScenario"]["userErrors"][0]["code"] == "NOT_FOUND"
    assert removed["deleteScenario"]["userErrors"][0]["code"] == "NOT_FOUND"
    assert (await gql.data('{ scenario(id: "nope") { id } }'))["scenario"] is None
