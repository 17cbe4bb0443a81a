"""A scenario codename filter no search can express (DEL: INTERNAL before; `|` alone, NUL, a
lone surrogate) is refused as BAD_USER_INPUT."""

from tests.support.server import GraphQLClient

SCENARIOS = "query($f: ScenarioFilter) { scenarios(filter: $f) { totalCount } }"


async def test_an_unsearchable_codename_is_refused(gql: GraphQLClient) -> None:
    for value in ["\x7f", "|", "a\x00b", "\ud800"]:
        body = await gql.post(SCENARIOS, {"f": {"codename": value}})
        assert [e["extensions"]["code"] for e in body["errors"]] == ["BAD_USER_INPUT"], body
