"""Episode filters by agent or scenario no search can express (DEL: INTERNAL before; `|` alone,
NUL, a lone surrogate) are refused as BAD_USER_INPUT."""

import pytest

from tests.support.server import GraphQLClient

EPISODES = "query($f: EpisodeFilter) { episodes(filter: $f) { totalCount } }"


@pytest.mark.parametrize("field", ["agentId", "scenarioId"])
async def test_an_unsearchable_episode_filter_is_refused(gql: GraphQLClient, field: str) -> None:
    for value in ["\x7f", "|", "a\x00b", "\ud800"]:
        body = await gql.post(EPISODES, {"f": {field: value}})
        assert [e["extensions"]["code"] for e in body["errors"]] == ["BAD_USER_INPUT"], body
