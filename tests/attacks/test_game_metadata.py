"""A scenario's `gameMetadata` holding a lone surrogate (no UTF-8 form, so Redis cannot store
it), as a value or as a key, is refused as INVALID on `gameMetadata` and nothing is written:
createScenario answered INTERNAL before, and updateScenario stored it mangled (three U+FFFD in
its place) and answered success."""

from typing import Any

import pytest

from tests.support.server import CREATE_SCENARIO, GraphQLClient

UPDATE = """
mutation($input: UpdateScenarioInput!) {
  updateScenario(input: $input) { scenario { id } userErrors { field message code } }
}"""
READ = "query($id: ID!) { scenario(id: $id) { gameMetadata } }"
UNSTORABLE: list[Any] = [{"note": "a\ud800b"}, {"k\udc00": 1}, {"rules": [{"x": ["\ud83d"]}]}]
SCENARIO = {"scenario": "Two friends meet.", "agentGoals": ["Talk", "Listen"], "tag": "games"}


def refused(payload: dict[str, Any]) -> bool:
    return [(e["field"], e["code"]) for e in payload["userErrors"]] == [
        (["input", "gameMetadata"], "INVALID")
    ]


@pytest.mark.parametrize("metadata", UNSTORABLE)
async def test_a_new_scenario_with_a_lone_surrogate_in_its_game_is_refused(
    gql: GraphQLClient, unchanged: Any, metadata: Any
) -> None:
    async with unchanged():
        body = await gql.post(CREATE_SCENARIO, {"input": {**SCENARIO, "gameMetadata": metadata}})
        assert "errors" not in body, body
        payload = body["data"]["createScenario"]
        assert payload["scenario"] is None and refused(payload), payload


@pytest.mark.parametrize("metadata", UNSTORABLE)
async def test_an_update_with_a_lone_surrogate_in_its_game_is_refused(
    gql: GraphQLClient, unchanged: Any, metadata: Any
) -> None:
    created = await gql.mutate("createScenario", "CreateScenarioInput", SCENARIO, "scenario { id }")
    pk = created["scenario"]["id"]
    async with unchanged():
        body = await gql.post(UPDATE, {"input": {"id": pk, "gameMetadata": metadata}})
        assert "errors" not in body, body
        payload = body["data"]["updateScenario"]
        assert payload["scenario"] is None and refused(payload), payload
    assert (await gql.data(READ, {"id": pk}))["scenario"]["gameMetadata"] is None
