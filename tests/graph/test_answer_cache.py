"""Completed list items are reused only while their stored fields are unchanged, and only for
selections that read nothing but the record."""

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as redis
import strawberry

from bench.support.read_world import write_world
from parley.engine.llm import ModelRegistry
from parley.graph.answer_cache import AnswerCache
from parley.graph.context import Context
from parley.graph.encoding import Encoded
from parley.graph.schema import build_schema
from parley.lifecycle.follow import EventHub
from parley.lifecycle.services import Services
from parley.storage.episode_store import EpisodeStore
from parley.storage.events_log import EventsLog
from parley.storage.jobs import JobQueue
from parley.storage.models import EpisodeLog

WORLD = "cache"
TAG = f"{WORLD}-parley"
FULL = """
  id status statusHistory { status at sequence attempt reason resumedFromTurn }
  progress { turn maxTurns } agentIds agentModels judgeModel tag
  turns { turn agentIndex speaker actionType argument to sequence at }
  messages rewards { agentIndex overall dimensions { dimension score } }
  reasoning error generationStats createdAt finishedAt
"""
LIST = f'query {{ episodes(first: 50, filter: {{tag: "{TAG}"}}) {{ nodes {{ {FULL} }} }} }}'


@pytest.fixture(scope="module")
async def world(redis_client: redis.Redis) -> None:
    await write_world(redis_client, WORLD, episodes=8, agents=4, scenarios=2, relationships=2)


@pytest.fixture
async def context(redis_client: redis.Redis, tmp_path: Path) -> AsyncIterator[Context]:
    registry = ModelRegistry(None, tmp_path)
    jobs = JobQueue(redis_client, stream="test:cache:jobs", group="test:cache:workers")
    store = EpisodeStore(redis_client, jobs=jobs.stream)
    hub, log = EventHub(redis_client), EventsLog(redis_client)
    yield Context(services=Services(redis_client, store, jobs, hub, log, registry))
    await registry.aclose()


def answers_of(schema: strawberry.Schema) -> AnswerCache:
    cache: AnswerCache = schema.execution_context_class.answers  # type: ignore[union-attr]
    return cache


async def run(
    schema: strawberry.Schema, context: Context, query: str, **variables: Any
) -> dict[str, Any]:
    result = await schema.execute(query, variable_values=variables, context_value=context)
    assert result.errors is None, result.errors
    assert result.data is not None
    return result.data


async def test_a_reused_answer_is_the_answer(world: None, context: Context) -> None:
    schema, uncached = build_schema(), build_schema(answers=0)
    first = await run(schema, context, LIST)
    assert len(answers_of(schema)) == 4
    again = await run(schema, context, LIST)
    assert len(answers_of(schema)) == 4
    fresh = await run(uncached, context, LIST)
    assert len(answers_of(uncached)) == 0
    assert json.dumps(first) == json.dumps(again) == json.dumps(fresh)
    assert len(first["episodes"]["nodes"]) == 4 and first["episodes"]["nodes"][0]["turns"]


async def test_a_changed_record_is_completed_afresh(
    world: None, context: Context, redis_client: redis.Redis
) -> None:
    schema = build_schema()
    before = (await run(schema, context, LIST))["episodes"]["nodes"]
    key = EpisodeLog.make_primary_key(before[0]["id"])
    stored = await redis_client.json().get(key, "$.turns[0].argument")
    await redis_client.json().set(key, "$.turns[0].argument", "changed by another writer")
    try:
        after = (await run(schema, context, LIST))["episodes"]["nodes"]
        assert after[0]["turns"][0]["argument"] == "changed by another writer"
        assert after[1:] == before[1:]
        assert len(answers_of(schema)) == 5  # the old answer stays until pushed out, unused
    finally:
        await redis_client.json().set(key, "$.turns[0].argument", stored[0])  # type: ignore[index]


@pytest.mark.parametrize(
    "selection",
    [
        "id agents { id name }",
        "id scenario { id }",
        "id relationships { id }",
        "id rewards { overall agent { id } }",
        "id tag @include(if: $yes)",
        "id ... on Episode @skip(if: $no) { tag }",
    ],
)
async def test_answers_that_read_other_records_or_variables_are_not_kept(
    world: None, context: Context, selection: str
) -> None:
    schema = build_schema()
    used = [name for name in ("yes", "no") if f"${name}" in selection]
    declared = ", ".join(f"${name}: Boolean! = {str(name == 'yes').lower()}" for name in used)
    query = (
        f"query{f'({declared})' if declared else ''} "
        f'{{ episodes(filter: {{tag: "{TAG}"}}) {{ nodes {{ {selection} }} }} }}'
    )
    data = await run(schema, context, query)
    assert len(data["episodes"]["nodes"]) == 4
    assert len(answers_of(schema)) == 0


async def test_lookups_and_mutation_payloads_are_not_kept(world: None, context: Context) -> None:
    schema = build_schema()
    data = await run(schema, context, f'{{ episode(id: "{WORLD}E000000") {{ {FULL} }} }}')
    assert data["episode"]["id"] == f"{WORLD}E000000"
    assert len(answers_of(schema)) == 0


def test_the_cache_keeps_the_most_recently_used() -> None:
    cache = AnswerCache(2)
    cache.put(("s", b"1"), Encoded({"a": 1}))
    cache.put(("s", b"2"), Encoded({"a": 2}))
    assert cache.get(("s", b"1")) == {"a": 1}
    cache.put(("s", b"3"), Encoded({"a": 3}))
    assert cache.get(("s", b"2")) is None and cache.get(("s", b"1")) == {"a": 1}
    assert len(cache) == 2


@pytest.mark.parametrize(
    ("root", "selection", "kept"),
    [
        ("agents", "id name firstName moralValues", True),
        ("agents", "id relationships { type }", False),
        ("scenarios", "id codename agentGoals", True),
        ("relationships", "id relationship backgroundStory", True),
        ("relationships", "id agent { id }", False),
    ],
)
async def test_profiles_are_kept_when_they_read_only_themselves(
    world: None, context: Context, root: str, selection: str, kept: bool
) -> None:
    schema = build_schema()
    query = f'{{ {root}(filter: {{tag: "{TAG}"}}) {{ nodes {{ {selection} }} }} }}'
    first = await run(schema, context, query)
    assert first[root]["nodes"]
    assert len(answers_of(schema)) == (len(first[root]["nodes"]) if kept else 0)
    assert await run(schema, context, query) == first
