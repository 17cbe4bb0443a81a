"""Experiment filters made only of `|` ("||": INTERNAL before; "|" was refused already), or
holding NUL, DEL or a lone surrogate, are refused as BAD_USER_INPUT."""

import pytest

from tests.support.server import GraphQLClient

EXPERIMENTS = "query($f: ExperimentFilter) { experiments(filter: $f) { totalCount } }"


@pytest.mark.parametrize("field", ["name", "tag"])
async def test_an_unsearchable_experiment_filter_is_refused(gql: GraphQLClient, field: str) -> None:
    for value in ["||", "|", "a\x00b", "\x7f", "\ud800"]:
        body = await gql.post(EXPERIMENTS, {"f": {field: value}})
        assert [e["extensions"]["code"] for e in body["errors"]] == ["BAD_USER_INPUT"], body
