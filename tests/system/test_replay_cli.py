"""`parley replay` as a real process against a real server and worker: a 20-episode experiment
replayed with no model asked and identical transcripts and scores, in its own Parley and after
`parley export` / `parley import` into an empty one; a changed prompt stops a replay with its
code."""

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as redis

from bench.support.fake_llm import FakeLLM
from bench.support.processes import api_process, parley_env, run
from parley.storage import keys
from parley.storage.embedded import EmbeddedRedis
from parley.storage.models import AgentProfile, EnvironmentProfile, EpisodeLog, EpisodeStatus

EPISODES = 20


@pytest.fixture
async def source_redis(tmp_path: Path) -> AsyncIterator[redis.Redis]:
    """A Redis of its own: the Parley the experiment first runs in."""
    server = EmbeddedRedis(tmp_path / "source")
    client = redis.Redis.from_url(await server.start(), decode_responses=True)
    yield client
    await client.aclose()
    await server.stop()


@pytest.fixture
async def empty_redis(tmp_path: Path) -> AsyncIterator[redis.Redis]:
    """A second, empty Redis: the Parley the export is imported into."""
    server = EmbeddedRedis(tmp_path / "empty")
    client = redis.Redis.from_url(await server.start(), decode_responses=True)
    yield client
    await client.aclose()
    await server.stop()


def url_of(client: redis.Redis) -> str:
    kwargs = client.connection_pool.connection_kwargs
    return f"redis://:{kwargs['password']}@{kwargs['host']}:{kwargs['port']}/0"


async def world(client: redis.Redis) -> tuple[str, list[str]]:
    """Two agents and a scenario, written to `client`: the scenario's key and the agents' ids."""
    agents = [
        AgentProfile(first_name="Ida", last_name="Replay", age=33),
        AgentProfile(first_name="Per", last_name="Replay", age=41),
    ]
    scenario = EnvironmentProfile(
        scenario="Two neighbours share a garden.", agent_goals=["Plant roses", "Grow beans"]
    )
    for record in (*agents, scenario):
        key = type(record).make_primary_key(str(record.pk))
        await client.json().set(key, "$", record.model_dump(mode="json"))
    return str(scenario.pk), [str(a.pk) for a in agents]


def design(path: Path, scenario: str, agents: list[str], model: str) -> Path:
    path.write_text(
        f"""
name = "replayed"
tag = "replayed"

[design]
repeats = {EPISODES}
max_turns = 2
judge_model = "{model}"

[design.scenarios]
ids = ["{scenario}"]

[design.agents]
pairs = [["{agents[0]}", "{agents[1]}"]]

[design.models]
seats = [["{model}", "{model}"]]
""",
        encoding="utf-8",
    )
    return path


async def episodes_of(client: redis.Redis, experiment: str) -> dict[int, EpisodeLog]:
    slots: Any = await client.hgetall(keys.experiment_slots(experiment))
    found = {}
    for number, pk in slots.items():
        raw: Any = await client.json().get(EpisodeLog.make_primary_key(pk), "$")
        found[int(number)] = EpisodeLog.model_validate(raw[0])
    return found


def outcome(episode: EpisodeLog) -> tuple[Any, ...]:
    turns = [t.model_dump(exclude={"sequence", "at"}) for t in episode.turns]
    return (episode.status, turns, episode.rewards)


async def test_an_experiment_replays_identical_here_and_after_export_and_import(
    source_redis: redis.Redis, empty_redis: redis.Redis, own_fake_llm: FakeLLM, tmp_path: Path
) -> None:
    scenario, agents = await world(source_redis)
    path = design(tmp_path / "design.toml", scenario, agents, own_fake_llm.model_name())
    source_env = parley_env(url_of(source_redis), tmp_path / "a", seed="false")
    target_env = parley_env(url_of(empty_redis), tmp_path / "b", seed="false")
    with api_process(source_env, tmp_path / "api-a.log") as api:
        ran = await run("experiment", "run", str(path), "--url", api.url, env=source_env)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        found = re.search(r"experiment (\S+) \(replayed\)", ran.stdout)
        assert found is not None, ran.stdout
        experiment = found.group(1)
        originals = await episodes_of(source_redis, experiment)
        assert len(originals) == EPISODES
        assert all(e.status == EpisodeStatus.COMPLETED and e.rewards for e in originals.values())
        asked = len(own_fake_llm.requests)
        assert asked >= EPISODES * 3

        replayed = await run("replay", experiment, "--url", api.url, env=source_env)
        said = replayed.stdout + replayed.stderr
        assert replayed.returncode == 0, said
        assert f"matched: {EPISODES} episodes identical" in said
        assert len(own_fake_llm.requests) == asked  # no model asked
        made = re.search(r"replay (\S+) of experiment", said)
        assert made is not None, said
        replays = await episodes_of(source_redis, made.group(1))
        assert {n: outcome(e) for n, e in replays.items()} == {
            n: outcome(e) for n, e in originals.items()
        }
        assert all(e.replay_of == str(originals[n].pk) for n, e in replays.items())

        out = tmp_path / "export.jsonl"
        exported = await run("export", "-o", str(out), env=source_env)
        assert exported.returncode == 0, exported.stderr

        # A changed prompt: the scenario edited since the episode was played.
        key = EnvironmentProfile.make_primary_key(scenario)
        await source_redis.json().set(key, "$.scenario", "Two neighbours share a kitchen.")
        episode = str(originals[0].pk)
        stopped = await run("replay", episode, "--url", api.url, env=source_env)
        said = stopped.stdout + stopped.stderr
        assert stopped.returncode == 1, said
        assert "REPLAY_MISSING_CALL" in said and "seat 0's turn 0" in said, said
        assert len(own_fake_llm.requests) == asked

    imported = await run("import", str(out), env=target_env)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    with api_process(target_env, tmp_path / "api-b.log") as api:
        replayed = await run("replay", experiment, "--url", api.url, env=target_env)
        said = replayed.stdout + replayed.stderr
        assert replayed.returncode == 0, said
        assert f"matched: {EPISODES} episodes identical" in said
    assert len(own_fake_llm.requests) == asked
