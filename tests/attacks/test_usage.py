"""usageTotals filters no search can express: NUL and a lone surrogate (INTERNAL before), DEL
and `|` alone. Each is refused as BAD_USER_INPUT."""

import pytest

from tests.support.server import GraphQLClient

UNSEARCHABLE = ["a\x00b", "\ud800", "\x7f", "|"]
TOTALS = "query($f: UsageFilter) { usageTotals(filter: $f) { episodes } }"


@pytest.mark.parametrize("field", ["tag", "experimentId"])
async def test_an_unsearchable_usage_filter_is_refused(gql: GraphQLClient, field: str) -> None:
    for value in UNSEARCHABLE:
        body = await gql.post(TOTALS, {"f": {field: value}})
        assert [e["extensions"]["code"] for e in body["errors"]] == ["BAD_USER_INPUT"], body
