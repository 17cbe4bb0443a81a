"""Agent filters no search can express: `|` alone (redis-om drops it from the query, leaving
it malformed: INTERNAL before, for the name, gender and occupation filters), NUL, DEL and a
lone surrogate; for the name, which is searched as a first and a last name when it has two
words, either of them. Each is refused as BAD_USER_INPUT."""

import pytest

from tests.support.server import GraphQLClient

UNSEARCHABLE = ["|", "||", "a\x00b", "\x7f", "\ud800"]
AGENTS = "query($filter: AgentFilter) { agents(filter: $filter) { totalCount } }"


@pytest.mark.parametrize("field", ["name", "gender", "occupation", "tag"])
async def test_an_unsearchable_agent_filter_is_refused(gql: GraphQLClient, field: str) -> None:
    for value in [*UNSEARCHABLE, *(["| x"] if field == "name" else [])]:  # a name's two parts
        body = await gql.post(AGENTS, {"filter": {field: value}})
        assert [e["extensions"]["code"] for e in body["errors"]] == ["BAD_USER_INPUT"], body
        assert body["errors"][0]["message"].startswith("A filter value or id cannot"), body
