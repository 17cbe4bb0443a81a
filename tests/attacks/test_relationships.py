"""Agent ids no search can express in the relationship lookups: `|` alone (INTERNAL before, in
relationshipBetween and the agentId and agentIds filters), NUL, DEL and a lone surrogate. Each
is refused as BAD_USER_INPUT."""

import pytest

from tests.support.server import GraphQLClient

UNSEARCHABLE = ["|", "||", "a\x00b", "\x7f", "\ud800"]
BETWEEN = "query($a: ID!, $b: ID!) { relationshipBetween(agentId: $a, otherAgentId: $b) { id } }"
LIST = "query($filter: RelationshipFilter) { relationships(filter: $filter) { totalCount } }"


def refused(body: dict[str, object]) -> bool:
    errors = body.get("errors")
    return isinstance(errors, list) and [e["extensions"]["code"] for e in errors] == [
        "BAD_USER_INPUT"
    ]


@pytest.mark.parametrize("side", ["a", "b"])
async def test_relationship_between_an_unsearchable_id_is_refused(
    gql: GraphQLClient, side: str
) -> None:
    for value in UNSEARCHABLE:
        body = await gql.post(BETWEEN, {"a": "agent-x", "b": "agent-y", side: value})
        assert refused(body), body


async def test_relationships_of_an_unsearchable_id_are_refused(gql: GraphQLClient) -> None:
    for value in UNSEARCHABLE:
        for given in ({"agentId": value}, {"agentIds": [value, "agent-y"]}):
            body = await gql.post(LIST, {"filter": given})
            assert refused(body), body
