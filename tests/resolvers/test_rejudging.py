"""A re-judging id with a lone surrogate (which has no UTF-8 form to send to Redis) in
episodeResults and modelComparison: INTERNAL before, now "no re-judging or rating study with id" as
BAD_USER_INPUT, as for any id that names neither a re-judging nor a rating study."""

from tests.support.server import GraphQLClient

RESULTS = "query($e: ID) { episodeResults(evaluation: $e) { groups { scored } } }"
COMPARISON = (
    'query($e: ID) { modelComparison(modelA: "a", modelB: "b", evaluation: $e) { __typename } }'
)


async def test_a_rejudging_id_without_a_utf8_form_is_not_found(gql: GraphQLClient) -> None:
    for query in (RESULTS, COMPARISON):
        body = await gql.post(query, {"e": "x\ud800"})
        assert [e["extensions"]["code"] for e in body["errors"]] == ["BAD_USER_INPUT"], body
        assert body["errors"][0]["message"].startswith("no re-judging or rating study with id"), (
            body
        )
