"""The events log a resuming stream reads what it missed from: ids as positions, reads after a
cursor page by page, and whether a cursor's successors may have been trimmed away.

Against a real Redis, in a database of its own so no other test's events are in the log."""

from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import pytest
import redis.asyncio as redis

from parley.storage import keys
from parley.storage.events import EpisodeEvent, EventKind
from parley.storage.events_log import ENTRY_FIELD, LAST_ID_PART, EventsLog, log_position

OWN_DATABASE = 7


@pytest.fixture
async def client(redis_url: str) -> AsyncIterator[redis.Redis]:
    url = urlsplit(redis_url)._replace(path=f"/{OWN_DATABASE}").geturl()
    own = redis.Redis.from_url(url, decode_responses=True)
    assert own.connection_pool.connection_kwargs["db"] == OWN_DATABASE
    await own.flushdb()
    yield own
    await own.flushdb()
    await own.aclose()


async def log(client: redis.Redis, sequence: int) -> str:
    event = EpisodeEvent(type=EventKind.STATUS, episode_id="e1", sequence=sequence, at=1.0)
    return str(await client.xadd(keys.EVENTS_LOG, {ENTRY_FIELD: event.model_dump_json()}))


def test_log_ids_are_positions_in_order() -> None:
    assert log_position("5") == (5, 0)
    assert log_position("5-1") < log_position("6-0") < log_position("6-2")


@pytest.mark.parametrize(
    "bad",
    ["", "5-", "-1", " 5", "5 ", "٣-1", f"{LAST_ID_PART + 1}", f"{LAST_ID_PART}-{LAST_ID_PART}"],
)
def test_anything_redis_would_refuse_is_a_value_error(bad: str) -> None:
    with pytest.raises(ValueError):
        log_position(bad)


async def test_an_empty_log_has_its_head_at_zero_and_nothing_expired(client: redis.Redis) -> None:
    events = EventsLog(client)
    assert await events.head() == "0-0"
    assert not await events.expired("0-0")
    assert await events.since("0-0") == []


async def test_since_reads_every_event_after_the_cursor_across_pages(client: redis.Redis) -> None:
    ids = [await log(client, n) for n in range(7)]
    events = EventsLog(client)
    assert await events.head() == ids[-1]
    after = await events.since(ids[1], page=2)
    assert [(e.sequence, e.log_id) for e in after] == list(zip(range(2, 7), ids[2:], strict=True))


async def test_a_cursor_older_than_the_oldest_entry_left_has_expired(client: redis.Redis) -> None:
    ids = [await log(client, n) for n in range(4)]
    events = EventsLog(client)
    assert not await events.expired(ids[0])
    await client.xtrim(keys.EVENTS_LOG, maxlen=2, approximate=False)
    assert await events.expired(ids[1])
    assert not await events.expired(ids[2])
