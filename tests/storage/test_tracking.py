"""Documents held while Redis says they are unchanged: a write by any client is read at once,
a held page costs only its keys, and a lost connection forgets everything and comes back."""

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as redis

from bench.support.polling import until
from bench.support.read_world import write_world
from parley.resolvers.episodes import EPISODES
from parley.resolvers.search import search
from parley.storage.connection import open_client
from parley.storage.models import EpisodeLog
from parley.storage.tracking import Held, TrackedDocuments

WORLD = "trck"
TAG = f"{WORLD}-parley"


@pytest.fixture(scope="module")
async def world(redis_client: redis.Redis) -> None:
    await write_world(redis_client, WORLD, episodes=12, agents=4, scenarios=2, relationships=2)


@pytest.fixture
async def documents(redis_client: redis.Redis) -> AsyncIterator[TrackedDocuments]:
    tracked = TrackedDocuments(redis_client, [EpisodeLog.make_key("")])
    async with tracked.running():
        await until(lambda: tracked.active)
        yield tracked


async def reasons(documents: TrackedDocuments | None, fields: set[str] | None = None) -> list[Any]:
    query = EpisodeLog.find(EpisodeLog.tag == TAG)
    found = await search(query, EPISODES, EPISODES.default, None, 50, fields, documents)
    return [(hit.record.pk, hit.record.reasoning) for hit in found.hits]


async def test_a_held_page_is_read_from_its_keys_alone(
    world: None, documents: TrackedDocuments
) -> None:
    first = await reasons(documents)
    assert documents.hits == 0 and len(first) == 6
    again = await reasons(documents)
    assert documents.hits == 6
    assert again == first == await reasons(None)


async def edits_are_read_at_once(
    documents: TrackedDocuments, writer: redis.Redis, rounds: int
) -> None:
    """Each round another client changes the first episode, and the next reads, whole and
    projected, see the change (the second of them from what is held again)."""
    pk = (await reasons(documents))[0][0]
    key = EpisodeLog.make_primary_key(pk)
    for round in range(rounds):
        text = f"changed by hand, round {round}"
        await writer.execute_command("JSON.SET", key, "$.reasoning", json.dumps(text))  # type: ignore[no-untyped-call]
        assert dict(await reasons(documents))[pk] == text
        assert dict(await reasons(documents))[pk] == text
        assert dict(await reasons(documents, {"reasoning"}))[pk] == text
    assert documents.hits >= 6 * rounds


async def test_a_write_by_another_client_is_read_at_once(
    world: None, documents: TrackedDocuments, other_writer: redis.Redis
) -> None:
    await edits_are_read_at_once(documents, other_writer, 30)


async def test_only_records_read_through_tracking_are_pushed_and_once_per_read(
    world: None, documents: TrackedDocuments, other_writer: redis.Redis
) -> None:
    unread = EpisodeLog.make_primary_key(f"{WORLD}E000001")  # tagged -sotopia: not in the page
    for round in range(20):
        await other_writer.execute_command(
            "JSON.SET", unread, "$.reasoning", json.dumps(str(round))
        )  # type: ignore[no-untyped-call]
    await reasons(documents)
    assert documents.invalidated == 0
    pk = (await reasons(documents))[0][0]
    key = EpisodeLog.make_primary_key(pk)
    for round in range(3):
        await other_writer.execute_command("JSON.SET", key, "$.reasoning", json.dumps(str(round)))  # type: ignore[no-untyped-call]
    await documents.ask("PING")
    assert documents.invalidated == 1  # untracked once pushed, until it is read again
    assert dict(await reasons(documents))[pk] == "2"


class SlowToApply(TrackedDocuments):
    """Applies each invalidation late, as a busy process would: only the fence keeps a read
    from answering with what was held before."""

    async def on_invalidation(self, keys: list[str] | None) -> None:
        await asyncio.sleep(0.05)
        await super().on_invalidation(keys)


async def test_a_read_waits_for_invalidations_sent_before_it(
    world: None, redis_client: redis.Redis, other_writer: redis.Redis
) -> None:
    documents = SlowToApply(redis_client, [EpisodeLog.make_key("")])
    async with documents.running():
        await until(lambda: documents.active)
        await edits_are_read_at_once(documents, other_writer, 5)


async def test_a_lost_connection_forgets_what_it_held_and_comes_back(
    world: None, documents: TrackedDocuments, redis_client: redis.Redis, other_writer: redis.Redis
) -> None:
    pk = (await reasons(documents))[0][0]
    await reasons(documents)
    assert documents.hits == 6
    tracking = [c for c in await redis_client.client_list() if c["id"] == str(documents.client_id)]
    assert tracking and "t" in tracking[0]["flags"], tracking
    await redis_client.execute_command("CLIENT", "KILL", "ID", documents.client_id)  # type: ignore[no-untyped-call]
    key = EpisodeLog.make_primary_key(pk)
    await other_writer.execute_command("JSON.SET", key, "$.reasoning", '"while tracking was down"')  # type: ignore[no-untyped-call]
    assert dict(await reasons(documents))[pk] == "while tracking was down"
    await until(lambda: documents.active and documents.reconnects == 1)
    hits = documents.hits
    await reasons(documents)
    await reasons(documents)
    assert documents.hits == hits + 6


async def test_a_document_fetched_across_an_invalidation_is_not_kept(
    documents: TrackedDocuments,
) -> None:
    key, paths, held = "a-key", ("$",), Held({"$": "{}"}, b"v")
    ticket = documents.ticket()
    documents.invalidate([key])
    documents.keep(ticket, key, paths, held)
    documents.release(ticket)
    assert documents.held(key, paths) is None
    later = documents.ticket()
    documents.keep(later, key, paths, held)
    documents.release(later)
    assert documents.held(key, paths) == held
    documents.invalidate(None)
    assert documents.held(key, paths) is None


async def test_a_refused_command_is_its_error_and_the_connection_goes_on(
    documents: TrackedDocuments,
) -> None:
    with pytest.raises(redis.ResponseError):
        await documents.ask("FT.SEARCH", "no-such-index", "*")
    assert await documents.ask("PING") == "PONG"
    assert documents.active and documents.reconnects == 0


async def test_without_resp3_nothing_is_held(redis_url: str) -> None:
    client = open_client(redis_url)
    client.connection_pool.connection_kwargs["protocol"] = 2
    tracked = TrackedDocuments(client, [EpisodeLog.make_key("")])
    async with tracked.running():
        await asyncio.sleep(0.3)
        assert not tracked.active
        assert await tracked.ask("PING") is None
    await client.aclose()
