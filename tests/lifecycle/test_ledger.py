"""The ledger of model calls, written by a worker running episodes against the fake model server
and a real Redis: every call with its purpose, seat and turn, exactly as sent; bodies stored once
and freed with the last episode that sends them; a ledger exported and imported whole. The
storage alone is tested beside it, in tests/storage/test_ledger.py."""

import dataclasses
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as redis

from bench.support.fake_llm import FakeLLM, Rule
from bench.support.processes import parley_env, run
from bench.support.simulation import make_world
from parley.engine.ledger import CallPurpose, content_hash
from parley.engine.llm import ChatRequest
from parley.engine.stats import GenerationStats
from parley.lifecycle import start
from parley.lifecycle.services import Services
from parley.resolvers.model_calls import entries, model_calls
from parley.storage import keys
from parley.storage.embedded import EmbeddedRedis
from parley.storage.ledger import Ledger, StoredCall, read_bodies
from parley.storage.models import EpisodeLog, EpisodeStatus
from parley.storage.records import get_or_none
from tests.lifecycle.conftest import burst


@pytest.fixture
async def recorded(services: Services, redis_client: redis.Redis) -> AsyncIterator[Services]:
    """The services with their model calls recorded."""
    yield dataclasses.replace(services, ledger=Ledger(redis_client, 30.0))
    services.models.record_calls(None)


async def run_episode(services: Services, fake: FakeLLM, tag: str, **more: Any) -> str:
    scenario, agents = await make_world(tag)
    model = fake.model_name()
    fields = {"scenario_id": scenario, "agent_ids": agents, "max_turns": 2, "tag": tag}
    values = {**fields, "agent_models": [model], "judge_model": model, **more}
    episode, errors = await start.start(services, values)
    assert not errors and episode is not None, errors
    await burst(services)
    stored = await get_or_none(EpisodeLog, str(episode.pk))
    assert stored is not None and stored.status == EpisodeStatus.COMPLETED, stored
    return str(episode.pk)


async def stored_calls(client: redis.Redis, episode_id: str) -> list[StoredCall]:
    return [StoredCall.model_validate_json(text) for _, text in await entries(client, episode_id)]


async def test_every_call_of_an_episode_is_recorded_as_sent(
    recorded: Services, fake_llm: FakeLLM, redis_client: redis.Redis
) -> None:
    tag = f"ledger-{uuid.uuid4().hex[:8]}"
    pk = await run_episode(recorded, fake_llm, tag)
    calls = await stored_calls(redis_client, pk)
    sent = [r for r in fake_llm.requests if tag in r.text]
    assert len(calls) == len(sent) > 0
    assert [c.purpose for c in calls if c.purpose != CallPurpose.JUDGE] == [CallPurpose.TURN] * 2
    turns = [(c.seat, c.turn) for c in calls if c.purpose == CallPurpose.TURN]
    assert turns == [(0, 0), (1, 1)]
    judged = [c for c in calls if c.purpose == CallPurpose.JUDGE]
    assert judged and all(c.judge == f"{fake_llm.model_name()}#0" for c in judged)
    assert [c.seat for c in judged] in ([0, 1], [1, 0])  # one call per agent, naming its seat
    assert all(c.attempt == 1 and c.error_code is None and c.attempts == 1 for c in calls)
    bodies = await read_bodies(redis_client, [h for c in calls for h in c.hashes()])
    by_hash = {c.request: c for c in calls}
    for request in sent:  # each body the fake received is a recorded request, byte for byte
        call = by_hash[content_hash(request.body)]
        assert call.body(bodies) == request.body
        assert call.answer == request.reply
        assert call.prompt_tokens == (request.usage or {})["prompt_tokens"]


async def test_a_reask_is_recorded_with_its_seat_and_turn(
    recorded: Services, fake_llm: FakeLLM, redis_client: redis.Redis
) -> None:
    tag = f"ledger-{uuid.uuid4().hex[:8]}"
    fake_llm.add_rule(Rule(kind="action", contains=[tag], content="not json at all"))
    pk = await run_episode(recorded, fake_llm, tag)
    calls = await stored_calls(redis_client, pk)
    assert [(c.purpose, c.seat, c.turn) for c in calls[:3]] == [
        (CallPurpose.TURN, 0, 0),
        (CallPurpose.REASK, 0, 0),
        (CallPurpose.TURN, 1, 1),
    ]
    assert calls[0].answer == "not json at all"


async def test_bodies_are_stored_once_and_go_with_the_last_episode_that_sends_them(
    recorded: Services, fake_llm: FakeLLM, redis_client: redis.Redis
) -> None:
    tag = f"ledger-{uuid.uuid4().hex[:8]}"
    first = await run_episode(recorded, fake_llm, tag)
    scenario, agents = await make_world(tag)  # the same world again: the same prompts
    episode, errors = await start.start(
        recorded,
        {
            "scenario_id": scenario,
            "agent_ids": agents,
            "max_turns": 2,
            "tag": tag,
            "agent_models": [fake_llm.model_name()],
            "judge_model": fake_llm.model_name(),
        },
    )
    assert not errors and episode is not None
    await burst(recorded)
    second = str(episode.pk)
    calls = {pk: await stored_calls(redis_client, pk) for pk in (first, second)}
    hashes = {pk: {h for c in found for h in c.hashes()} for pk, found in calls.items()}
    references = sum(len(c.hashes()) for found in calls.values() for c in found)
    stored = hashes[first] | hashes[second]
    assert len(stored) < references  # repeated prefixes are one body each
    shared = hashes[first] & hashes[second]
    refs = {d: int(await redis_client.hget(keys.CALL_BODY_REFS, d) or 0) for d in stored}
    assert all(refs[d] >= 2 for d in shared)  # counted once per episode that sends it
    ours = {d for d in shared if refs[d] == 2}  # the world's own prompts: no one else's
    assert ours, "the same world's prompts are shared"
    store = recorded.store
    record = await get_or_none(EpisodeLog, first)
    assert record is not None
    await store.delete(record)
    assert not await redis_client.exists(keys.model_calls(first), keys.model_call_bodies(first))
    for digest in hashes[first]:
        left = await redis_client.hget(keys.CALL_BODY_REFS, digest)
        if refs[digest] == 1:
            assert left is None and not await redis_client.exists(keys.call_body(digest))
        else:
            assert left == str(refs[digest] - 1) and await redis_client.exists(
                keys.call_body(digest)
            )
    assert (await model_calls(redis_client, second)).total == len(calls[second])
    record = await get_or_none(EpisodeLog, second)
    assert record is not None
    await store.delete(record)
    for digest in ours:
        assert not await redis_client.exists(keys.call_body(digest))
    assert await redis_client.zscore(keys.CALL_LEDGERS, second) is None


async def test_a_call_outside_an_episode_is_not_recorded(
    recorded: Services, fake_llm: FakeLLM, redis_client: redis.Redis
) -> None:
    before = await redis_client.zcard(keys.CALL_LEDGERS)
    request = ChatRequest(messages=[{"role": "user", "content": "hello"}])
    await recorded.models.complete(fake_llm.model_name(), request, GenerationStats())
    assert await redis_client.zcard(keys.CALL_LEDGERS) == before


@pytest.fixture
async def empty_redis(tmp_path: Path) -> AsyncIterator[redis.Redis]:
    """A second, empty Redis: the Parley an export is imported into."""
    server = EmbeddedRedis(tmp_path / "empty")
    client = redis.Redis.from_url(await server.start(), decode_responses=True)
    yield client
    await client.aclose()
    await server.stop()


async def test_an_exported_ledger_imported_into_an_empty_parley_is_the_same(
    recorded: Services,
    fake_llm: FakeLLM,
    redis_client: redis.Redis,
    redis_url: str,
    empty_redis: redis.Redis,
    tmp_path: Path,
) -> None:
    tag = f"ledger-{uuid.uuid4().hex[:8]}"
    first = await run_episode(recorded, fake_llm, tag)
    second = await run_episode(recorded, fake_llm, tag)
    out = tmp_path / "calls.jsonl"
    source = parley_env(redis_url, tmp_path / "a")
    done = await run(
        "export", "--tag", tag, "--kind", "episodes,model_calls", "-o", str(out), env=source
    )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    call_lines = [x for x in lines if "model_call_of" in x]
    every = {pk: await entries(redis_client, pk) for pk in (first, second)}
    assert len(call_lines) == sum(len(e) for e in every.values())
    given = [h for x in call_lines for h in x["bodies"]]
    assert len(given) == len(set(given))  # each body once in the whole export

    kwargs = empty_redis.connection_pool.connection_kwargs
    url = f"redis://:{kwargs['password']}@{kwargs['host']}:{kwargs['port']}/0"
    target = parley_env(url, tmp_path / "b")
    imported = await run("import", str(out), env=target)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    assert imported.stdout.splitlines()[0] == f"created: 2 episodes, {len(call_lines)} model_calls"
    for pk, found in every.items():
        assert await entries(empty_redis, pk) == found  # same ids, same calls
        page = await model_calls(empty_redis, pk, first=100)
        original = await model_calls(redis_client, pk, first=100)
        assert [c.messages for c in page.items] == [c.messages for c in original.items]
        assert [c.response_format for c in page.items] == [
            c.response_format for c in original.items
        ]
        assert page.cursor(0) == original.cursor(0)
    for digest in set(given):  # counted once per episode that refers to it, as written
        users = sum(
            digest
            in {
                h
                for x in call_lines
                if x["model_call_of"] == pk
                for h in (*x["messages"], *([x["schema_hash"]] if x["schema_hash"] else []))
            }
            for pk in every
        )
        assert await empty_redis.hget(keys.CALL_BODY_REFS, digest) == str(users)
    again = await run("import", str(out), env=target)
    assert again.stdout.splitlines()[:2] == [
        "created: nothing",
        f"skipped (already stored): 2 episodes, {len(call_lines)} model_calls",
    ]
