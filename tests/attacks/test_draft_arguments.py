"""draftAgents and draftScenarios take their arguments at the top (`prompt`, `count`,
`agentIds`, `model`), with no `input`: a refused one is named by its own path (["count"]), not
under an `input` they do not have."""

from typing import Any

import pytest

from tests.support.server import GraphQLClient

CASES = {
    "draftAgents count": ('mutation { draftAgents(prompt: "x", count: 0) ', ["count"]),
    "draftAgents model": (
        'mutation { draftAgents(prompt: "x", count: 1, model: "no-such-model") ',
        ["model"],
    ),
    "draftScenarios agentIds": (
        'mutation { draftScenarios(prompt: "x", count: 1, agentIds: ["a1", "a b"]) ',
        ["agentIds", "1"],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
async def test_a_refused_argument_is_named_by_its_own_path(
    gql: GraphQLClient, unchanged: Any, case: str
) -> None:
    head, path = CASES[case]
    root = head.split("{")[1].split("(")[0].strip()
    async with unchanged():
        payload = (await gql.data(head + "{ userErrors { field code } } }"))[root]
    assert [e["field"] for e in payload["userErrors"]] == [path], payload
