"""The ledger's storage in a real Redis: calls appended while a reader pages, retention sweeps
that delete every expired ledger and keep one written since, and a Redis or a call that cannot
be written costing the caller nothing."""

import asyncio
import dataclasses
import json
import time
import uuid

import redis.asyncio as redis

from parley.engine.ledger import CallPurpose, CallScope, ModelCall, content_hash
from parley.engine.usage import TokenCount
from parley.resolvers.model_calls import model_calls
from parley.storage import keys, ledger
from parley.storage.ledger import DAY, Ledger


def call(episode_id: str, n: int, purpose: CallPurpose = CallPurpose.TURN) -> ModelCall:
    messages = [{"role": "system", "content": "shared"}, {"role": "user", "content": f"ask {n}"}]
    return ModelCall(
        scope=CallScope(episode_id, 1, purpose, seat=n % 2, turn=n),
        model="m",
        request={"model": "m", "messages": messages, "temperature": 0.7},
        answer=f"answer {n}",
        tokens=TokenCount(prompt_tokens=3, completion_tokens=2),
        latency_ms=1.5,
        attempts=1,
    )


async def test_pages_hold_still_while_calls_are_appended(redis_client: redis.Redis) -> None:
    keeper = Ledger(redis_client, 30.0)
    pk = f"ledger-page-{uuid.uuid4().hex}"
    for n in range(5):
        await keeper.record(call(pk, n, CallPurpose.JUDGE if n == 2 else CallPurpose.TURN))
    first = await model_calls(redis_client, pk, first=2)
    assert [c.call.turn for c in first.items] == [0, 1] and first.has_next and first.total == 5
    await keeper.record(call(pk, 5))  # appended while a reader pages
    second = await model_calls(redis_client, pk, first=2, after=first.cursor(1))
    assert [c.call.turn for c in second.items] == [2, 3] and second.total == 6
    rest = await model_calls(redis_client, pk, first=10, after=second.cursor(1))
    assert [c.call.turn for c in rest.items] == [4, 5] and not rest.has_next
    turns = await model_calls(redis_client, pk, first=2, purpose=CallPurpose.TURN)
    assert [c.call.turn for c in turns.items] == [0, 1] and turns.total == 5
    await keeper.record(call(pk, 6))
    more = await model_calls(
        redis_client, pk, first=2, after=turns.cursor(1), purpose=CallPurpose.TURN
    )
    assert [c.call.turn for c in more.items] == [3, 4] and more.total == 6
    one = await model_calls(redis_client, pk, turn=3)
    assert [c.messages for c in one.items] == [call(pk, 3).request["messages"]]
    await Ledger(redis_client, 30.0).sweep()
    assert await redis_client.exists(keys.model_calls(pk))  # within the retention window
    await keeper.sweep(now=time.time() + 31 * DAY)
    assert not await redis_client.exists(keys.model_calls(pk))
    assert (await model_calls(redis_client, pk)).total == 0


async def test_a_ledger_that_cannot_write_fails_no_call() -> None:
    dead = redis.Redis(port=1, socket_connect_timeout=0.2)  # nothing listens on port 1
    keeper = Ledger(dead, 30.0)
    await keeper.record(call("x", 0))
    assert keeper.failures == 1
    await dead.aclose()


async def test_the_sweep_keeps_a_ledger_that_got_a_call_since_it_was_chosen(
    redis_client: redis.Redis,
) -> None:
    pk = f"ledger-sweep-{uuid.uuid4().hex}"
    await Ledger(redis_client, 30.0).record(call(pk, 0))
    recorded_at = await redis_client.zscore(keys.CALL_LEDGERS, pk)
    assert recorded_at is not None
    assert await ledger.delete(redis_client, pk, before=recorded_at) == -1  # not before it
    assert await redis_client.exists(keys.model_calls(pk))
    assert await ledger.delete(redis_client, pk, before=recorded_at + 1) >= 1
    assert not await redis_client.exists(keys.model_calls(pk), keys.model_call_bodies(pk))


async def test_a_call_the_ledger_cannot_encode_is_counted_not_raised(
    redis_client: redis.Redis,
) -> None:
    odd = dataclasses.replace(call("x", 0), request={"model": "m", "messages": [], "x": {1, 2}})
    keeper = Ledger(redis_client, 30.0)
    await keeper.record(odd)
    assert keeper.failures == 1


async def test_one_sweep_deletes_every_ledger_past_the_window_beyond_a_batch(
    redis_client: redis.Redis,
) -> None:
    keeper = Ledger(redis_client, 30.0)
    pks = [f"ledger-many-{uuid.uuid4().hex}" for _ in range(ledger.SWEEP_BATCH + 3)]
    for pk in pks:
        await keeper.record(call(pk, 0))
    deleted = await keeper.sweep(now=time.time() + 31 * DAY)
    assert deleted >= len(pks)
    assert not await redis_client.exists(*(keys.model_calls(pk) for pk in pks))


def test_an_entry_names_its_request_and_bodies_by_the_hash_of_their_canonical_json() -> None:
    schema = {"type": "json_schema", "json_schema": {"name": "a", "schema": {"b": [1, "é"]}}}
    messages = [{"role": "user", "content": 'Zoë said "hi"\n'}, {"content": "x", "role": "a"}]
    for extra in ({}, {"response_format": schema}, {"stop": ["\n"], "max_tokens": 3}):
        sent = {"model": "m", "temperature": 0.7, "messages": messages, **extra}
        made = dataclasses.replace(call("hashes", 1), request=sent)
        entry, bodies = ledger.stored_call(made, 0.0)
        assert entry.request == content_hash(sent)
        assert entry.messages == [content_hash(m) for m in messages]
        assert all(content_hash(json.loads(text)) == h for h, text in bodies.items())
        assert entry.schema_hash == (content_hash(schema) if extra.get("response_format") else None)


async def test_calls_recorded_at_once_are_each_in_their_ledger(redis_client: redis.Redis) -> None:
    """Recorded at once, the calls go to Redis together: each is in its episode's ledger, in
    the order its episode made them, when its record returns."""
    keeper = Ledger(redis_client, 30.0)
    pks = [f"ledger-together-{uuid.uuid4().hex}" for _ in range(20)]

    async def episode(pk: str) -> None:
        for n in range(3):
            await keeper.record(call(pk, n))
            assert (await model_calls(redis_client, pk)).total == n + 1

    await asyncio.gather(*(episode(pk) for pk in pks))
    assert keeper.failures == 0
    for pk in pks:
        assert [c.call.turn for c in (await model_calls(redis_client, pk)).items] == [0, 1, 2]
        await ledger.delete(redis_client, pk)  # the bodies they share with other tests' calls


async def test_a_body_sent_once_for_an_episode_is_read_back_with_every_later_call(
    redis_client: redis.Redis,
) -> None:
    """A ledger sends each body once per episode; the episode's later calls, and those another
    process's ledger records, still read back every message they sent."""
    pk = f"ledger-once-{uuid.uuid4().hex}"
    first, other = Ledger(redis_client, 30.0), Ledger(redis_client, 30.0)
    for n in range(3):
        await first.record(call(pk, n))
    await other.record(call(pk, 3))
    await first.record(call(pk, 4))
    page = await model_calls(redis_client, pk, first=10)
    assert [c.messages for c in page.items] == [call(pk, n).request["messages"] for n in range(5)]
    assert await redis_client.scard(keys.model_call_bodies(pk)) == 6  # "shared" and 5 asks
    await ledger.delete(redis_client, pk)
