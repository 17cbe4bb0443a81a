"""Re-judging by a tag no search can express (NUL: INTERNAL before; DEL, a lone surrogate, `|`
alone, nothing): a user error on the tag, and nothing is queued."""

from typing import Any

from tests.support.server import GraphQLClient

REJUDGE = """
mutation($input: RejudgeEpisodesInput!) {
  rejudgeEpisodes(input: $input) { rejudging { id } userErrors { field message code } }
}"""


async def test_rejudging_an_unsearchable_tag_is_a_user_error(
    gql: GraphQLClient, unchanged: Any
) -> None:
    async with unchanged():
        for tag in ["a\x00b", "\x7f", "\ud800", "|", ""]:
            input = {"tag": tag, "judgeModel": "local/gemma-3-270m"}
            payload = (await gql.data(REJUDGE, {"input": input}))["rejudgeEpisodes"]
            assert payload["rejudging"] is None, payload
            assert [(e["field"], e["code"]) for e in payload["userErrors"]] == [
                (["input", "tag"], "INVALID")
            ], payload
