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

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import httpx

from bench.support.fake_llm import FakeLLM, Rule
from bench.support.processes import api_process, parley_env
from tests.support.server import GraphQLClient
from tests.support.spare_redis import spare_redis

EPISODE = "query($id: ID!) { episode(id: $id) { status attempt error } }"
TERMINAL = {"COMPLETED", "FAILED", "CANCELLED"}


async def start(gql: GraphQLClient, model: str) -> str:
    agents = []
    for name in ("Ada", "Bo"):
        made = await gql.mutate(
            "createAgent",
            "CreateAgentInput",
            {"firstName": name, "lastName": "Split"},
            "agent { id }",
        )
        agents.append(made["agent"]["id"])
    scenario = await gql.mutate(
        "createScenario",
        "CreateScenarioInput",
        {"scenario": "Two meet.", "agentGoals": ["Greet", "Leave"]},
        "scenario { id }",
    )
    input = {
        "scenarioId": scenario["scenario"]["id"],
        "agentIds": agents,
        "agentModels": [model],
        "judgeModel": model,
        "maxTurns": 2,
        "tag": f"split-{uuid.uuid4().hex[:8]}",
    }
    started = await gql.mutate("startSimulation", "StartSimulationInput", input, "episode { id }")
    return str(started["episode"]["id"])


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
                episode_id = await start(gql, fake_llm.model_name())
                episode: dict[str, Any] = {}
                async with asyncio.timeout(60):
                    while episode.get("status") not in TERMINAL:
                        await asyncio.sleep(0.5)
                        episode = (await gql.data(EPISODE, {"id": episode_id}))["episode"]
    assert episode["attempt"] == 1, episode
    assert not (episode["error"] or "").startswith("worker lost"), episode
