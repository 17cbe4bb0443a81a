"""`parley export` and `parley import` as real processes: a round trip into an empty Parley,
idempotence, and the same against a remote server with `--url`."""

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as redis

from storage.embedded import EmbeddedRedis
from storage.models import (
    AgentProfile,
    EnvironmentProfile,
    EpisodeLog,
    EpisodeStatus,
    Evaluation,
    EvaluationStatus,
    ModelUsage,
    RelationshipProfile,
    RelationshipType,
    StatusChange,
    StoredTurn,
)
from tests.support import sotopia_records as sotopia
from tests.support.processes import parley_env
from tests.support.server import serve


def parley(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "graph.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A `parley` command, off the event loop (an in-process server may have to answer it)."""
    return await asyncio.to_thread(parley, *args, env=env)


@pytest.fixture
async def empty_redis(tmp_path: Path) -> AsyncIterator[str]:
    """A second, empty Redis: the Parley an export is imported into."""
    server = EmbeddedRedis(tmp_path / "empty")
    yield await server.start()
    await server.stop()


@pytest.fixture
async def source_redis(tmp_path: Path) -> AsyncIterator[redis.Redis]:
    """A Redis of its own holding only what a test writes (the session's holds every test's)."""
    server = EmbeddedRedis(tmp_path / "source")
    client = redis.Redis.from_url(await server.start(), decode_responses=True)
    yield client
    await client.aclose()
    await server.stop()


def url_of(client: redis.Redis) -> str:
    kwargs = client.connection_pool.connection_kwargs
    return f"redis://:{kwargs['password']}@{kwargs['host']}:{kwargs['port']}/0"


def scored(overall: float) -> tuple[float, dict[str, float]]:
    return (overall, {"goal": overall * 2, "believability": 7.0, "overall_score": overall})


async def parley_world(client: redis.Redis, experiment: str) -> list[str]:
    """Records as Parley writes them (run state, turns, usage, later evaluations), written to
    `client`; their keys."""
    a = AgentProfile(first_name="Ida", last_name=experiment, age=33, tag=experiment)
    b = AgentProfile(first_name="Per", last_name=experiment, moral_values=["Care"])
    scenario = EnvironmentProfile(
        scenario="Two neighbours share a garden.", agent_goals=["Plant roses", "Grow beans"]
    )
    pair = RelationshipProfile(
        agent_1_id=str(a.pk), agent_2_id=str(b.pk), relationship=RelationshipType.FRIEND
    )
    turn = StoredTurn(
        turn=0, agent_index=0, agent_name=f"Ida {experiment}", action_type="speak",
        argument="Roses here?", sequence=3, at=1_700_000_001.5,
    )  # fmt: skip
    common: dict[str, Any] = {
        "environment": str(scenario.pk),
        "agents": [str(a.pk), str(b.pk)],
        "experiment_id": experiment,
        "tag": "garden",
        "max_turns": 4,
        "created_at": 1_700_000_000.0,
    }
    episodes = [
        EpisodeLog(
            **common,
            models=["judge-m", "model-x", "model-y"],
            messages=[[("Environment", f"Ida {experiment}", "ctx")]],
            turns=[turn],
            rewards=[scored(3.0), scored(1.5)],
            status_history=[StatusChange(status=EpisodeStatus.COMPLETED, at=1.0, sequence=5)],
            usage=[ModelUsage(model="model-x", prompt_tokens=120, completion_tokens=30)],
            evaluations=[
                Evaluation(
                    id="ev1",
                    judge_model="judge-2",
                    status=EvaluationStatus.COMPLETED,
                    rewards=[scored(2.0), 0.0],
                )
            ],
        ),
        EpisodeLog(
            **common, models=["judge-m", "model-y", "model-x"], rewards=[scored(4.0), scored(2.5)]
        ),
        EpisodeLog(**common, status=EpisodeStatus.FAILED, error="model-x timed out"),
        EpisodeLog(**common, status=EpisodeStatus.CANCELLED),
    ]
    records = [a, b, scenario, pair, *episodes]
    keys = [type(r).make_primary_key(str(r.pk)) for r in records]
    for key, record in zip(keys, records, strict=True):
        await client.json().set(key, "$", record.model_dump(mode="json"))
    return keys


async def documents(client: redis.Redis, keys: list[str]) -> dict[str, Any]:
    return {key: await client.json().get(key) for key in keys}


async def test_an_export_imported_into_an_empty_parley_gives_the_same_records(
    source_redis: redis.Redis, empty_redis: str, tmp_path: Path
) -> None:
    keys = await parley_world(source_redis, "exp-roundtrip")
    source = parley_env(url_of(source_redis), tmp_path / "a")
    target = parley_env(empty_redis, tmp_path / "b")
    out = tmp_path / "experiment.jsonl"
    exported = await run("export", "--experiment", "exp-roundtrip", "-o", str(out), env=source)
    assert exported.returncode == 0, exported.stderr
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert sum("episode_id" in x for x in lines) == 4

    first = await run("import", str(out), env=target)
    assert first.returncode == 0, first.stdout + first.stderr
    assert first.stdout.splitlines()[:3] == [
        "created: 2 agents, 4 episodes, 1 relationships, 1 scenarios",
        "skipped (already stored): nothing",
        "invalid lines: 0",
    ]
    second = await run("import", str(out), env=target)
    assert second.returncode == 0
    assert second.stdout.splitlines()[:2] == [
        "created: nothing",
        "skipped (already stored): 2 agents, 4 episodes, 1 relationships, 1 scenarios",
    ]

    imported = redis.Redis.from_url(empty_redis, decode_responses=True)
    try:
        assert await documents(imported, keys) == await documents(source_redis, keys)
        again = tmp_path / "again.jsonl"
        exported = await run(
            "export", "--experiment", "exp-roundtrip", "-o", str(again), env=target
        )
        assert exported.returncode == 0, exported.stderr
    finally:
        await imported.aclose()
    episodes = [line for line in again.read_text().splitlines() if "episode_id" in line]
    assert sorted(episodes) == sorted(x for x in out.read_text().splitlines() if "episode_id" in x)


async def test_a_failed_export_leaves_no_file(redis_url: str, tmp_path: Path) -> None:
    out = tmp_path / "kept.jsonl"
    out.write_text("what was there before\n")
    env = parley_env("redis://127.0.0.1:1/0", tmp_path)
    result = await run("export", "-o", str(out), env=env)
    assert result.returncode != 0 and "cannot reach Redis" in result.stderr
    bad = await run(
        "export",
        "--kind",
        "all",
        "--format",
        "csv",
        "-o",
        str(out),
        env=parley_env(redis_url, tmp_path),
    )
    assert bad.returncode != 0 and "CSV holds episodes only" in bad.stderr
    unreachable = await run("export", "--url", "http://127.0.0.1:1", "-o", str(out), env=env)
    assert unreachable.returncode != 0 and "parley export: http://127.0.0.1:1" in unreachable.stderr
    assert "Traceback" not in unreachable.stderr
    assert out.read_text() == "what was there before\n"
    assert not (tmp_path / "kept.jsonl.partial").exists()
    missing = await run(
        "import", str(tmp_path / "missing.jsonl"), env=parley_env(redis_url, tmp_path)
    )
    assert missing.returncode != 0 and "No such file" in missing.stderr
    assert "Traceback" not in missing.stderr


async def test_remote_export_and_import_with_url_and_token(
    redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    """In-process servers use the session's Redis: an app binds the record models to its own."""
    await parley_world(redis_client, "exp-remote")
    local = parley_env(redis_url, tmp_path / "a")
    async with serve(redis_url, tmp_path / "api", tokens="cli-token") as url:
        no_token = await run("export", "--url", url, env=local)
        assert no_token.returncode != 0 and "401" in no_token.stderr
        remote = await run(
            "export", "--url", url, "--token", "cli-token", "--experiment", "exp-remote",
            "--kind", "episodes", env=local,
        )  # fmt: skip
        assert remote.returncode == 0, remote.stderr
    here = await run("export", "--experiment", "exp-remote", "--kind", "episodes", env=local)
    assert sorted(remote.stdout.splitlines()) == sorted(here.stdout.splitlines())
    assert len(remote.stdout.splitlines()) == 4

    file = tmp_path / "sotopia.jsonl"
    lines = sotopia.with_ids("C1")
    file.write_text("\n".join([*lines, '{"broken": ']) + "\n")
    target = {**parley_env(redis_url, tmp_path / "b"), "PARLEY_TOKEN": "t2"}
    async with serve(redis_url, tmp_path / "api2", tokens="t2", max_body_bytes=4000) as url:
        result = await run("import", "--url", url, str(file), env=target)
    # The server takes 4,000 bytes a request: the profiles go in parts, the episode line is
    # larger than that and is refused, as is the broken line; the exit status says so.
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout.splitlines()[0] == ("created: 2 agents, 1 relationships, 1 scenarios"), (
        result.stdout
    )
    assert f"line {len(lines)}: the line is larger than the server accepts" in result.stdout
    assert f"line {len(lines) + 1}: not valid JSON" in result.stdout
