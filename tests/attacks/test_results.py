"""Results filters no search can express: NUL (INTERNAL before, in episodeResults and
modelComparison), a lone surrogate (INTERNAL too), DEL and `|` alone. Each is refused as
BAD_USER_INPUT."""

import pytest

from tests.support.server import GraphQLClient

UNSEARCHABLE = ["a\x00b", "\ud800", "\x7f", "|"]
RESULTS = "query($f: EpisodeResultsFilter) { episodeResults(filter: $f) { groups { scored } } }"
COMPARISON = """
query($a: String!, $b: String!, $f: EpisodeResultsFilter) {
  modelComparison(modelA: $a, modelB: $b, filter: $f) { __typename }
}"""
FILTERS = ["tag", "model", "partnerModel", "judgeModel", "experimentId", "scenarioId", "agentId"]


def codes(body: dict[str, object]) -> list[object]:
    errors = body.get("errors")
    assert isinstance(errors, list), body
    return [e["extensions"]["code"] for e in errors]


@pytest.mark.parametrize("field", FILTERS)
async def test_an_unsearchable_results_filter_is_refused(gql: GraphQLClient, field: str) -> None:
    for value in UNSEARCHABLE:
        given = {field: value}
        assert codes(await gql.post(RESULTS, {"f": given})) == ["BAD_USER_INPUT"]
        if field != "model":  # the comparison's own two models take its place
            both = {"a": "m1", "b": "m2", "f": given}
            assert codes(await gql.post(COMPARISON, both)) == ["BAD_USER_INPUT"]


@pytest.mark.parametrize("model", ["a", "b"])
async def test_an_unsearchable_model_to_compare_is_refused(gql: GraphQLClient, model: str) -> None:
    for value in UNSEARCHABLE:
        body = await gql.post(COMPARISON, {"a": "m1", "b": "m2", model: value})
        assert codes(body) == ["BAD_USER_INPUT"]
