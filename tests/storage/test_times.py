"""Times as Redis keeps them, against the real RedisJSON and a real script's cjson: some doubles
of 17 significant digits come back changed from a JSON record (what a time kept in two places
would differ by), while every time to 14 significant digits comes back exactly from both; a
re-judging's evaluation keeps its times so."""

import json
import random
import uuid
from typing import Any

import redis.asyncio as redis

from parley.storage.models import Evaluation
from parley.storage.times import stored_time

DRAW = random.Random(3)
TIMES = [1_764_690_000 + DRAW.random() * 1e6 for _ in range(500)]
"""Times of the next weeks, each with all of a double's digits."""


async def through_json(client: redis.Redis, value: float) -> float:
    key = f"test-times:{uuid.uuid4().hex}"
    await client.json().set(key, "$", {"at": value})
    found: Any = await client.json().get(key, "$.at")
    await client.delete(key)
    return float(found[0])


async def through_cjson(client: redis.Redis, value: float) -> float:
    script = "return cjson.encode({at = cjson.decode(ARGV[1])})"
    raw: Any = await client.eval(script, 0, json.dumps(value))
    return float(json.loads(raw)["at"])


async def test_redisjson_changes_some_doubles_of_17_digits(redis_client: redis.Redis) -> None:
    back = {t: await through_json(redis_client, t) for t in TIMES}
    changed = [t for t, came in back.items() if came != t]
    assert changed, "RedisJSON now keeps every double: storage/times.py's reason is gone"
    assert all(abs(back[t] - t) <= abs(t) * 1e-15 for t in changed)  # by a unit or so


async def test_a_stored_time_comes_back_exactly_from_json_and_from_a_script(
    redis_client: redis.Redis,
) -> None:
    for at in map(stored_time, TIMES):
        assert await through_json(redis_client, at) == at
        assert await through_cjson(redis_client, at) == at
        assert stored_time(at) == at


def test_an_evaluation_keeps_its_times_as_redis_does() -> None:
    made = Evaluation(id="e", judge_model="j", created_at=TIMES[0], finished_at=TIMES[1])
    assert made.created_at == stored_time(TIMES[0]) != TIMES[0]
    assert made.finished_at == stored_time(TIMES[1])
    assert Evaluation(id="e", judge_model="j").finished_at is None
