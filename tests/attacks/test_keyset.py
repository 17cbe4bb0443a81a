"""resolvers/keyset.py: a cursor is the client's to send back, so any cursor, however forged, is
either a position on its list or a BAD_USER_INPUT error. Two forged cursors reached Redis or the
float conversion and came back as INTERNAL: a lone surrogate in the id (written as the JSON
escape `\\ud800`, so the cursor itself is plain base64), and an integer sort key too large for a
double. Both are in the cursor's own JSON, after the checks of its shape."""

import base64

import pytest

from tests.support.server import GraphQLClient

HUGE = "1" + "0" * 400
"""An integer JSON reads exactly and no double holds."""


def forged(name: str, values: str) -> str:
    """The cursor of list `name` holding the JSON `values`, as Parley writes one."""
    return base64.urlsafe_b64encode(f"parley:{name}:{values}".encode()).decode()


FORGED = [
    pytest.param("agents", forged("agents", '["\\ud800"]'), id="agents-surrogate"),
    pytest.param("scenarios", forged("scenarios", '["a\\udfff"]'), id="scenarios-surrogate"),
    pytest.param(
        "relationships", forged("relationships", '["\\ud800"]'), id="relationships-surrogate"
    ),
    pytest.param("episodes", forged("episodes", '[1.0,"\\ud800"]'), id="episodes-surrogate"),
    pytest.param(
        "experiments", forged("experiments", '[1.0,"\\ud800"]'), id="experiments-surrogate"
    ),
    pytest.param("episodes", forged("episodes", f'[{HUGE},"x"]'), id="episodes-huge"),
    pytest.param("experiments", forged("experiments", f'[{HUGE},"x"]'), id="experiments-huge"),
]


@pytest.mark.parametrize("order", ["ASCENDING", "DESCENDING"])
@pytest.mark.parametrize(("root", "cursor"), FORGED)
async def test_a_forged_cursor_is_bad_user_input_never_internal(
    gql: GraphQLClient, root: str, cursor: str, order: str
) -> None:
    query = (
        f"query($after: String, $order: SortOrder) {{ {root}(first: 2, after: $after, "
        "order: $order) { nodes { id } } }"
    )
    body = await gql.post(query, {"after": cursor, "order": order})
    assert [e["extensions"]["code"] for e in body.get("errors", [])] == ["BAD_USER_INPUT"], body
