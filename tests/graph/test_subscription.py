"""graph/subscription.py: a cursor given to `episodeUpdates(after:)` is an event's cursor (a
Redis stream id of the events log) or a BAD_USER_INPUT error.

Some malformed cursors pass Parley's check (Python's `int` takes surrounding spaces, other
scripts' digits and numbers past 64 bits) and are then refused by Redis in the stream's reader:
the subscription got no error, no replay and no live event either, a stream that stays silent
for as long as the client waits. The sequence cursors of `episodeStatus` and `episodeEvents` are
held to digits 0-9 the same way, and a replay Redis refuses ends its stream with an error."""

import uuid
from collections.abc import Iterator

import pytest
import redis.asyncio as redis

from bench.support.processes import ApiProcess, embedded_env
from bench.support.simulation import START, start_input
from parley.storage import keys
from parley.storage.sample import sample_data
from tests.support.server import graphql, init, receive, send, socket

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


@pytest.mark.parametrize("after", ["18446744073709551615-18446744073709551615", "1-2-3", "-1"])
async def test_a_cursor_after_which_nothing_can_be_read_is_refused(
    api_url: str, after: str
) -> None:
    """The last stream id there can be is one Redis refuses to read after ("invalid start ID
    for the interval"), as it refuses the others."""
    async with socket(api_url) as ws:
        await init(ws)
        request = {"query": UPDATES, "variables": {"after": after}}
        await send(ws, {"id": "1", "type": "subscribe", "payload": request})
        message = await receive(ws)
    codes = [e["extensions"]["code"] for e in message["payload"]["errors"]]
    assert codes == ["BAD_USER_INPUT"], message


@pytest.fixture(scope="module")
def untrimmed_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`parley serve` on a database of its own with the sample data: an events log nothing has
    trimmed, which the session's is not (a test keeping events for a millisecond trims it, and
    then "0-0" is rightly an expired cursor)."""
    data = tmp_path_factory.mktemp("untrimmed")
    api = ApiProcess(embedded_env(data), data / "api.log", "--no-worker", seed=True)
    try:
        yield api.url
    finally:
        api.stop()


@pytest.mark.parametrize("after", ["0", "0-0"])
async def test_the_cursors_parley_gives_resume_a_stream(untrimmed_api: str, after: str) -> None:
    """ "0-0" is the cursor of an empty events log, and "<ms>" Redis reads as "<ms>-0"."""
    tag = f"attack-cursor-{uuid.uuid4().hex[:8]}"
    world = sample_data()
    scenario = world["scenarios"][0]["pk"]
    agents = [agent["pk"] for agent in world["agents"][:2]]
    variables = {"input": start_input(scenario, agents, "local/gemma-3-270m", tag=tag)}
    started = (await graphql(untrimmed_api, START, variables))["startSimulation"]
    assert started["userErrors"] == [] and started["episode"]["status"] == "QUEUED", started
    query = "subscription($t: String, $a: String) { episodeUpdates(tag: $t, after: $a) { kind } }"
    async with socket(untrimmed_api) as ws:
        await init(ws)
        request = {"query": query, "variables": {"t": tag, "a": after}}
        await send(ws, {"id": "1", "type": "subscribe", "payload": request})
        message = await receive(ws)
    assert message["payload"] == {"data": {"episodeUpdates": {"kind": "STATUS"}}}, message


@pytest.mark.parametrize("after", ["\u00b2", "\uff11", "1 ", "+1"])
async def test_a_malformed_sequence_cursor_is_refused(api_url: str, after: str) -> None:
    """episodeStatus(after:) took any string `str.isdigit` accepts: a superscript two passes
    that and then fails `int()`, which was INTERNAL, and a fullwidth one was read as 1."""
    query = 'subscription($after: String) { episodeStatus(id: "e1", after: $after) { kind } }'
    async with socket(api_url) as ws:
        await init(ws)
        request = {"query": query, "variables": {"after": after}}
        await send(ws, {"id": "1", "type": "subscribe", "payload": request})
        message = await receive(ws)
    [error] = message["payload"]["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT", message
    assert error["message"].startswith("malformed cursor"), message


async def test_a_replay_redis_refuses_ends_the_stream_with_an_error(
    api_url: str, redis_client: redis.Redis
) -> None:
    """A stream resuming from a cursor reads the events log; a read Redis refuses (here the
    log's key holds a string, as another writer could leave it) was retried for a minute as if
    Redis were down, the client hearing nothing meanwhile. It ends the stream with an error."""
    kept = f"{keys.EVENTS_LOG}:kept-{uuid.uuid4().hex[:8]}"
    had_log = await redis_client.exists(keys.EVENTS_LOG)
    if had_log:
        await redis_client.rename(keys.EVENTS_LOG, kept)
    await redis_client.set(keys.EVENTS_LOG, "not a stream")
    try:
        async with socket(api_url) as ws:
            await init(ws)
            request = {"query": UPDATES, "variables": {"after": "0-0"}}
            await send(ws, {"id": "1", "type": "subscribe", "payload": request})
            message = await receive(ws)
    finally:
        await redis_client.delete(keys.EVENTS_LOG)
        if had_log:
            await redis_client.rename(kept, keys.EVENTS_LOG)
    assert message["type"] == "next" and message["payload"]["errors"], message
