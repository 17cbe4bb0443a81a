"""`parley serve --open-dump`: a Sotopia Redis dump (made here by SAVE of a throwaway embedded
Redis holding Sotopia-shaped records) served from a copy, indexed, browsable and kept."""

import hashlib
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
import redis.asyncio as redis

from bench.support.processes import ApiProcess, embedded_env, parley
from parley.storage.dump import DumpError, working_copy
from parley.storage.embedded import EmbeddedRedis
from tests.support import sotopia_records as sotopia

SOTOPIA_EPISODE_INDEX = (
    "ON JSON PREFIX 1 :sotopia.database.logs.EpisodeLog: SCHEMA $.pk AS pk TAG SEPARATOR | "
    "$.environment AS environment TAG SEPARATOR | $.agents[*] AS agents TAG SEPARATOR | "
    "$.tag AS tag TAG SEPARATOR |"
)
BROWSE = """
query($episode: ID!, $a: ID!, $b: ID!) {
  episodes(filter: {status: COMPLETED}) { totalCount nodes { id } }
  episode(id: $episode) {
    status createdAt agents { name } turns { turn speaker actionType argument to }
  }
  agents(filter: {occupation: "Ferry captain"}) { nodes { id name } }
  scenarios(filter: {codename: "last_ferry"}) { nodes { id agentGoals } }
  relationshipBetween(agentId: $b, otherAgentId: $a) { relationship }
}"""
CREATE = """
mutation { createAgent(input: {firstName: "Added", lastName: "Later"}) { agent { id } } }"""


@pytest.fixture(scope="module")
async def sotopia_dump(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """dump.rdb of a Redis holding Sotopia's records and one of Sotopia's own indexes."""
    home = tmp_path_factory.mktemp("sotopia-redis")
    server = EmbeddedRedis(home)
    client = redis.Redis.from_url(await server.start(), decode_responses=True)
    try:
        for key, doc in sotopia.RECORDS:
            await client.json().set(key, "$", doc)
        index = ":sotopia.database.logs.EpisodeLog:index"
        await client.execute_command("FT.CREATE", index, *SOTOPIA_EPISODE_INDEX.split())  # type: ignore[no-untyped-call]
        await client.save()
    finally:
        await client.aclose()
        await server.stop()
    published = tmp_path_factory.mktemp("published") / "dump.rdb"
    published.write_bytes((home / "redis" / "dump.rdb").read_bytes())
    return published


def graphql(url: str, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    response = httpx.post(
        f"{url}/graphql", json={"query": query, "variables": variables}, timeout=30
    )
    body: dict[str, Any] = response.json()
    assert "errors" not in body, body
    data: dict[str, Any] = body["data"]
    return data


def fingerprint(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


def test_a_sotopia_dump_opens_browsable_and_keeps_what_is_added(
    sotopia_dump: Path, tmp_path: Path
) -> None:
    before = fingerprint(sotopia_dump)
    env = embedded_env(tmp_path)
    ids = {"episode": sotopia.EPISODE["pk"], "a": sotopia.NORA["pk"], "b": sotopia.EMIL["pk"]}
    api = ApiProcess(env, tmp_path / "api.log", "--open-dump", str(sotopia_dump), "--no-worker")
    redis_server = psutil.Process(api.pid).children()
    assert [p.name() for p in redis_server] == ["redis-server"]
    try:
        data = graphql(api.url, BROWSE, ids)
        added = graphql(api.url, CREATE)["createAgent"]["agent"]["id"]
    finally:
        assert api.stop() == 0, api.output()
    assert not any(p.is_running() for p in redis_server)
    assert [n["id"] for n in data["episodes"]["nodes"]] == [sotopia.EPISODE["pk"]]
    episode = data["episode"]
    assert episode["status"] == "COMPLETED"
    assert episode["createdAt"].startswith("2023-")  # from the episode's ULID
    assert [a["name"] for a in episode["agents"]] == ["Nora Lindqvist", "Emil Brandt"]
    turns = [
        (t["turn"], t["speaker"], t["actionType"], t["argument"], t["to"]) for t in episode["turns"]
    ]
    assert turns == sotopia.EXPECTED_TURNS
    assert data["agents"]["nodes"] == [{"id": sotopia.NORA["pk"], "name": "Nora Lindqvist"}]
    assert data["scenarios"]["nodes"][0]["id"] == sotopia.SCENARIO["pk"]
    assert data["relationshipBetween"] == {"relationship": "ACQUAINTANCE"}
    assert fingerprint(sotopia_dump) == before

    again = ApiProcess(env, tmp_path / "again.log", "--open-dump", str(sotopia_dump), "--no-worker")
    try:
        found = graphql(again.url, "query($id: ID!) { agent(id: $id) { name } }", {"id": added})
        episodes = graphql(again.url, "{ episodes { totalCount } }")
    finally:
        again.stop()
    assert found["agent"] == {"name": "Added Later"}
    assert episodes["episodes"]["totalCount"] == 1
    assert fingerprint(sotopia_dump) == before
    copies = list((tmp_path / "dumps").iterdir())
    assert len(copies) == 1 and copies[0].name.startswith("dump-")


def test_a_file_that_is_not_a_dump_is_refused(tmp_path: Path) -> None:
    text = tmp_path / "notes.rdb"
    text.write_text("hello")
    with pytest.raises(DumpError, match="is not a Redis dump"):
        working_copy(text, tmp_path)
    with pytest.raises(DumpError, match="is not a file"):
        working_copy(tmp_path / "missing.rdb", tmp_path)
    result = parley("serve", "--open-dump", str(text), env=embedded_env(tmp_path), timeout=60)
    assert result.returncode != 0 and "is not a Redis dump" in result.stderr
    assert not (tmp_path / "dumps").exists()
