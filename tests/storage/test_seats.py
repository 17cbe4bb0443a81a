"""A seat's writes: a claim, the keys its credential is found by, and its deadline."""

import uuid

import redis.asyncio as redis

from bench.support.episodes import queued_episode
from parley.storage import keys, seats
from parley.storage.episode_store import EpisodeStore
from parley.storage.models import EpisodeLog, HumanSeat


async def seated(client: redis.Redis, *human: HumanSeat) -> str:
    """A stored QUEUED episode with `human` seats (announced on a stream of its own)."""
    episode = queued_episode("seats")
    episode.human_seats = list(human)
    await EpisodeStore(client).create([episode], f"parley:test-seats:{uuid.uuid4().hex}")
    return str(episode.pk)


async def test_a_seat_is_claimed_once_and_its_key_names_it(redis_client: redis.Redis) -> None:
    pk = await seated(redis_client, HumanSeat(seat=1))
    first, second = uuid.uuid4().hex, uuid.uuid4().hex
    assert await seats.claim(redis_client, pk, 1, first) == 1
    assert await redis_client.get(keys.seat_token(first)) == seats.seat_entry(pk, 1)
    assert await seats.claim(redis_client, pk, 1, second) == 0
    assert await redis_client.get(keys.seat_token(second)) is None
    assert await seats.claim(redis_client, pk, 0, second) == -2
    assert await seats.claim(redis_client, uuid.uuid4().hex, 1, second) == -1
    stored = await EpisodeLog.get(pk)
    assert [(s.seat, s.token_hash) for s in stored.human_seats] == [(1, first)]


async def test_seats_stored_without_keys_are_keyed_once(redis_client: redis.Redis) -> None:
    digest = uuid.uuid4().hex
    pk = await seated(redis_client, HumanSeat(seat=0, token_hash=digest), HumanSeat(seat=1))
    await redis_client.delete(keys.seat_token(digest), keys.SEAT_TOKENS_INDEXED)
    assert await seats.index_tokens(redis_client, batch=2) >= 1
    assert await redis_client.get(keys.seat_token(digest)) == seats.seat_entry(pk, 0)
    await redis_client.delete(keys.seat_token(digest))
    assert await seats.index_tokens(redis_client) == 0  # once per database
    assert await redis_client.get(keys.seat_token(digest)) is None


async def test_a_forgotten_deadline_is_gone(redis_client: redis.Redis) -> None:
    pk, other = uuid.uuid4().hex, uuid.uuid4().hex
    await redis_client.zadd(keys.DEADLINES, {pk: 1.0, other: 2.0})
    await seats.forget_deadline(redis_client, pk)
    assert await redis_client.zscore(keys.DEADLINES, pk) is None
    assert await redis_client.zscore(keys.DEADLINES, other) == 2.0
    await seats.forget_deadline(redis_client, other)
