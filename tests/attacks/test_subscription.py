"""graph/subscription.py: a cursor given to `episodeUpdates(after:)` is an event's cursor (a
Redis stream id of the events log) or a BAD_USER_INPUT error.

Some malformed cursors pass Parley's check (Python's `int` takes surrounding spaces, other
scripts' digits and numbers past 64 bits) and are then refused by Redis in the stream's reader:
the subscription got no error, no replay and no live event either, a stream that stays silent
for as long as the client waits."""

import pytest

from tests.support.server import init, receive, send, socket

UPDATES = "subscription($after: String) { episodeUpdates(after: $after) { kind cursor } }"


@pytest.mark.parametrize("after", ["1 ", "1-", "\uff11", "18446744073709551616-0"])
async def test_a_malformed_events_log_cursor_is_refused(api_url: str, after: str) -> None:
    async with socket(api_url) as ws:
        await init(ws)
        request = {"query": UPDATES, "variables": {"after": after}}
        await send(ws, {"id": "1", "type": "subscribe", "payload": request})
        message = await receive(ws)
    assert message["type"] == "next", message
    codes = [e["extensions"]["code"] for e in message["payload"]["errors"]]
    assert codes == ["BAD_USER_INPUT"], message
