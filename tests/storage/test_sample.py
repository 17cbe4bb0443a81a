"""Sample data: loads, is idempotent, and `parley seed` works as a command."""

import ast
import asyncio
import os
from pathlib import Path
from typing import Any

from bench.support.processes import parley
from parley.storage import keys, sample
from parley.storage.models import AgentProfile, RelationshipProfile
from tests.support.server import GraphQLClient
from tests.support.spare_redis import spare_redis


def test_sample_data_is_well_formed() -> None:
    data = sample.sample_data()
    agents = {a["pk"] for a in data["agents"]}
    assert len(agents) >= 8 and len(data["scenarios"]) >= 5
    assert all(a["secret"] for a in data["agents"])
    assert all(len(s["agent_goals"]) == 2 for s in data["scenarios"])
    pairs = {frozenset((r["agent_1_id"], r["agent_2_id"])) for r in data["relationships"]}
    assert len(pairs) == len(data["relationships"])
    assert all(set(pair) <= agents and len(pair) == 2 for pair in pairs)
    assert len({r["relationship"] for r in data["relationships"]}) >= 4


async def test_seed_is_idempotent(redis_client: Any, gql: GraphQLClient) -> None:
    await sample.seed(redis_client)
    counts = (await AgentProfile.find().count(), await RelationshipProfile.find().count())
    assert await sample.seed(redis_client) == {"agents": 0, "scenarios": 0, "relationships": 0}
    assert (await AgentProfile.find().count(), await RelationshipProfile.find().count()) == counts
    assert not await sample.is_empty()

    rel = sample.sample_data()["relationships"][0]
    assert await redis_client.get(keys.relationship_pair(rel["agent_1_id"], rel["agent_2_id"]))
    conflict = await gql.data(
        "mutation($a: ID!, $b: ID!) { createRelationship(input: {agentId: $b, otherAgentId: $a, "
        "relationship: FRIEND}) { userErrors { code } } }",
        {"a": rel["agent_1_id"], "b": rel["agent_2_id"]},
    )
    assert conflict["createRelationship"]["userErrors"] == [{"code": "CONFLICT"}]


def seed_command(redis_url: str, data_dir: Path) -> dict[str, int]:
    """What `parley seed` says it added."""
    env = {**os.environ, "REDIS_URL": redis_url, "PARLEY_DATA_DIR": str(data_dir)}
    done = parley("seed", env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    added: dict[str, int] = ast.literal_eval(done.stdout)
    return added


async def test_seed_command_loads_the_whole_sample_once(tmp_path: Path) -> None:
    """On a database of its own, so what it adds does not hang on what other tests seeded."""
    data = sample.sample_data()
    whole = {name: len(data[name]) for name in ("agents", "scenarios", "relationships")}
    async with spare_redis(tmp_path / "redis") as (url, _):
        first = await asyncio.to_thread(seed_command, url, tmp_path / "data")
        again = await asyncio.to_thread(seed_command, url, tmp_path / "data")
    assert first == whole
    assert again == dict.fromkeys(whole, 0)
