"""Answers from ledgers: a replay's order among identical requests, and the cache's index of
answered requests in a real Redis, kept and freed with the ledgers."""

import dataclasses
import uuid

import redis.asyncio as redis

from parley.engine.ledger import CallPurpose, CallScope, ModelCall, Served
from parley.engine.usage import TokenCount
from parley.storage import keys, ledger
from parley.storage.answers import CacheSource, ReplaySource
from parley.storage.ledger import StoredCall, stored_call


def call(request: str, answer: str, seat: int, turn: int, attempt: int = 1) -> StoredCall:
    return StoredCall(
        attempt=attempt,
        purpose=CallPurpose.TURN,
        seat=seat,
        turn=turn,
        model="m",
        params={},
        messages=[],
        request=request,
        answer=answer,
        latency_ms=0,
        attempts=1,
        at=0,
    )


async def test_identical_requests_replay_in_ledger_order_by_place() -> None:
    calls = [
        call("same", "first", 0, 0),
        call("same", "second", 0, 1),
        call("same", "third", 1, 2),
        call("other", "lost", 1, 3, attempt=1),
        call("other", "kept", 1, 3, attempt=2),  # a later attempt made it again
    ]
    source = ReplaySource("src", calls)
    scope = CallScope("new", 1)

    async def answer(request: str, seat: int, turn: int) -> str | None:
        found = await source.find(dataclasses.replace(scope, seat=seat, turn=turn), request)
        return None if found is None else found.answer

    assert await answer("same", 1, 2) == "third"  # its own place first
    assert await answer("same", 0, 0) == "first"
    assert await answer("same", 5, 5) == "second"  # then ledger order
    assert await answer("same", 0, 1) is None  # each recorded answer is given once
    assert await answer("other", 1, 3) == "kept"


def model_call(episode: str, answer: str | None, **more: object) -> ModelCall:
    return ModelCall(
        scope=CallScope(episode, 1, seat=0, turn=0),
        model="m",
        request={"model": "m", "messages": [{"role": "user", "content": episode}]},
        answer=answer,
        tokens=TokenCount(),
        latency_ms=1.0,
        attempts=1,
        **more,  # type: ignore[arg-type]
    )


async def test_the_cache_gives_a_models_answer_until_its_ledger_is_deleted(
    redis_client: redis.Redis,
) -> None:
    first, second = (f"cache-{uuid.uuid4().hex[:8]}" for _ in range(2))
    cache = CacheSource(redis_client)
    scope = CallScope("asking", 1)
    answered, bodies = stored_call(model_call(first, "hello"), 1.0)
    await ledger.append(redis_client, first, answered, bodies)
    found = await cache.find(scope, answered.request)
    assert found is not None and (found.episode_id, found.answer) == (first, "hello")
    # what a replay or the cache served, and a failure, are not given again
    served, bodies = stored_call(
        model_call(second, "hello", served=Served.CACHE, served_from=first), 2.0
    )
    await ledger.append(redis_client, second, served, bodies)
    failed = dataclasses.replace(model_call(second, None), error_code="timeout")
    await ledger.append(redis_client, second, *stored_call(failed, 3.0))
    found = await cache.find(scope, answered.request)
    assert found is not None and found.episode_id == first
    assert await cache.find(scope, "0" * 64) is None
    await ledger.delete(redis_client, second)
    assert await cache.find(scope, answered.request) is not None
    await ledger.delete(redis_client, first)
    assert await cache.find(scope, answered.request) is None
    assert await redis_client.hget(keys.CALL_ANSWERS, answered.request) is None
