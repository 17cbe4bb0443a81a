"""lifecycle/worker.py: what a model answers is input like any other, and an answer Redis will
not store ends the episode with its reason, on its first attempt.

A model's line holding a lone surrogate (the JSON escape `\\ud800` in the reply, as a model that
splits a surrogate pair can write) reaches the turn's Lua script, where RedisJSON refuses it
("unexpected end of hex escape"). The worker takes that ResponseError for a Redis outage: it
leaves the episode for redelivery, the next attempt asks the model again and meets the same
answer, and after PARLEY_MAX_ATTEMPTS leases the episode ends FAILED as "worker lost 3 times",
a reason that points at the workers, not at the model. A real `parley serve` with its worker, on
a Redis of its own, against the fake model.
"""

import json
import uuid
from functools import partial
from pathlib import Path

import httpx

from bench.support.fake_llm import FakeLLM, Rule
from bench.support.polling import eventually
from bench.support.processes import api_process, parley_env
from tests.support.server import GraphQLClient
from tests.support.spare_redis import spare_redis
from tests.support.world import start_episode

EPISODE = "query($id: ID!) { episode(id: $id) { status attempt error } }"
TERMINAL = {"COMPLETED", "FAILED", "CANCELLED"}


async def test_a_model_line_redis_cannot_store_ends_the_episode_with_its_reason(
    tmp_path: Path, fake_llm: FakeLLM
) -> None:
    line = {"action_type": "speak", "argument": "a split pair \ud800 here", "to": []}
    fake_llm.add_rule(Rule(kind="action", times=None, content=json.dumps(line)))
    async with spare_redis(tmp_path / "redis") as (url, _):
        env = parley_env(url, tmp_path / "data", lease_seconds="2", max_attempts="3")
        with api_process(env, tmp_path / "api.log") as api:
            async with httpx.AsyncClient(base_url=api.url, timeout=30) as http:
                gql = GraphQLClient(http)
                tag = f"split-{uuid.uuid4().hex[:8]}"
                episode_id = await start_episode(gql, fake_llm.model_name(), "Split", tag=tag)
                read = partial(gql.data, EPISODE, {"id": episode_id})
                found = await eventually(read, lambda d: d["episode"]["status"] in TERMINAL)
    episode = found["episode"]
    assert episode["attempt"] == 1, episode
    assert not (episode["error"] or "").startswith("worker lost"), episode
