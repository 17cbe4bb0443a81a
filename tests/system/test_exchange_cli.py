"""`parley export` and `parley import` as real processes: a round trip into an empty Parley,
idempotence, and the same against a remote server with `--url`."""

import argparse
import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio as redis

from bench.support.processes import api_process, parley_env, run
from parley.resolvers.experiment_design import Design
from parley.storage import keys
from parley.storage.embedded import EmbeddedRedis
from parley.storage.evaluations import queue_rejudging
from parley.storage.experiments import ExperimentStore
from parley.storage.models import (
    AgentProfile,
    EnvironmentProfile,
    EpisodeLog,
    EpisodeStatus,
    Evaluation,
    EvaluationStatus,
    Experiment,
    ExperimentSlot,
    ModelUsage,
    RelationshipProfile,
    RelationshipType,
    StatusChange,
    StoredTurn,
)
from tests.support import sotopia_records as sotopia
from tests.support.jobs import private_queue
from tests.support.server import GraphQLClient, serve


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


async def export_lines(out: Path, env: dict[str, str], *args: str) -> list[dict[str, Any]]:
    """`parley export *args -o out`, which must succeed: the lines it wrote."""
    done = await run("export", *args, "-o", str(out), env=env)
    assert done.returncode == 0, done.stderr
    text = await asyncio.to_thread(out.read_text)
    return [json.loads(x) for x in text.splitlines()]


async def import_anew(path: Path, env: dict[str, str], created: str) -> None:
    """`parley import path` into a Parley that holds none of it: all of it is `created`."""
    done = await run("import", str(path), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[:3] == [
        f"created: {created}",
        "skipped (already stored): nothing",
        "invalid lines: 0",
    ]


async def test_an_export_imported_into_an_empty_parley_gives_the_same_records(
    source_redis: redis.Redis, empty_redis: str, tmp_path: Path
) -> None:
    keys = await parley_world(source_redis, "exp-roundtrip")
    source = parley_env(url_of(source_redis), tmp_path / "a")
    target = parley_env(empty_redis, tmp_path / "b")
    out = tmp_path / "experiment.jsonl"
    lines = await export_lines(out, source, "--experiment", "exp-roundtrip")
    assert sum("episode_id" in x for x in lines) == 4

    await import_anew(out, target, "2 agents, 4 episodes, 1 relationships, 1 scenarios")
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


async def experiment_world(client: redis.Redis, name: str) -> tuple[str, list[str]]:
    """An experiment as Parley keeps it, written to `client`: four slots, filled by two
    completed episodes, a failed one and one still running; its id and its episodes' ids."""
    a = AgentProfile(first_name="Ola", last_name=name)
    b = AgentProfile(first_name="Kim", last_name=name)
    scenario = EnvironmentProfile(
        scenario="Two cooks share one oven.", agent_goals=["Bake", "Roast"]
    )
    pair = [str(a.pk), str(b.pk)]
    design = Design(
        scenarios={"ids": [str(scenario.pk)]},
        agents={"pairs": [pair]},
        models={"seats": [["model-x", "model-x"]]},
        repeats=4,
        judge_model="judge-m",
    )
    slots = [
        ExperimentSlot(
            scenario_id=str(scenario.pk), agent_ids=pair, agent_models=["model-x"] * 2, repeat=r
        )
        for r in range(4)
    ]
    experiment = Experiment(
        name=name, tag=name, design=design.model_dump(mode="json"), slot_count=4,
        created_at=1_700_000_000.0, started_at=1_700_000_010.0,
    )  # fmt: skip
    pk = str(experiment.pk)
    common: dict[str, Any] = {
        "environment": str(scenario.pk), "agents": pair, "experiment_id": pk, "tag": name,
        "models": ["judge-m", "model-x", "model-x"], "max_turns": 4,
        "created_at": 1_700_000_020.0,
    }  # fmt: skip
    episodes = [
        EpisodeLog(
            **common,
            status=EpisodeStatus.COMPLETED,
            finished_at=1_700_000_080.0 + i,
            rewards=[scored(3.0 + i), scored(2.0)],
        )
        for i in range(2)
    ]
    episodes += [
        EpisodeLog(**common, status=EpisodeStatus.FAILED, error="x", finished_at=1_700_000_090.0),
        EpisodeLog(**common, status=EpisodeStatus.RUNNING),
    ]
    for record in (a, b, scenario, *episodes):
        key = type(record).make_primary_key(str(record.pk))
        await client.json().set(key, "$", record.model_dump(mode="json"))
    store = ExperimentStore(client)
    assert await store.create(experiment, slots) == (True, pk)
    assert await store.fill(pk, [(n, "", str(e.pk)) for n, e in enumerate(episodes)]) == [True] * 4
    return pk, [str(e.pk) for e in episodes]


EXPERIMENT = """
query($id: ID!) {
  experiment(id: $id) {
    name tag slotCount startedAt
    progress { total pending completed failed unfinished finished }
    slots { nodes { number episode { id status } } }
  }
  episodeResults(filter: {experimentId: $id}, groupBy: [MODEL]) {
    groups { model scored failed unfinished dimensions { dimension count mean } }
  }
}"""


async def test_experiments_travel_with_their_episodes_and_unfinished_ones_stay_behind(
    source_redis: redis.Redis, empty_redis: str, tmp_path: Path
) -> None:
    """A fresh Parley had the episodes but not their experiment, and the default export held
    an unfinished episode that the import then refused (exit 1)."""
    pk, episodes = await experiment_world(source_redis, "exp-travel")
    source = parley_env(url_of(source_redis), tmp_path / "a")
    target = parley_env(empty_redis, tmp_path / "b", seed="false")
    out = tmp_path / "all.jsonl"
    lines = await export_lines(out, source)
    assert sorted(x["episode_id"] for x in lines if "episode_id" in x) == sorted(episodes[:3])
    [slots] = [x for x in lines if "experiment_slots" in x]
    assert [s["episode_id"] for s in slots["slots"]] == episodes  # the running one is named
    assert lines[-1]["experiment_id"] == pk  # after its slots

    await import_anew(out, target, "2 agents, 3 episodes, 1 experiments, 1 scenarios")
    again = await run("import", str(out), env=target)
    assert again.returncode == 0, again.stdout + again.stderr
    assert (
        "skipped (already stored): 2 agents, 3 episodes, 1 experiments, 1 scenarios" in again.stdout
    )

    with api_process(target, tmp_path / "api.log", "--no-worker") as api:
        async with httpx.AsyncClient(base_url=api.url, timeout=30) as http:
            data = await GraphQLClient(http).data(EXPERIMENT, {"id": pk})
        results = await run("experiment", "results", pk, "--url", f"{api.url}/graphql", env=target)
    experiment = data["experiment"]
    assert (experiment["name"], experiment["tag"], experiment["slotCount"]) == (
        "exp-travel",
        "exp-travel",
        4,
    )
    # the running episode stayed behind: its slot is waiting for a start, as a new one would
    assert experiment["progress"] == {
        "total": 4, "pending": 1, "completed": 2, "failed": 1, "unfinished": 1, "finished": False,
    }  # fmt: skip
    filled = [
        (s["number"], s["episode"] and s["episode"]["status"]) for s in experiment["slots"]["nodes"]
    ]
    assert filled == [(0, "COMPLETED"), (1, "COMPLETED"), (2, "FAILED"), (3, None)]
    [group] = data["episodeResults"]["groups"]
    assert (group["model"], group["scored"], group["failed"]) == ("model-x", 4, 1)
    assert results.returncode == 0, results.stdout + results.stderr
    assert "1 episode: 1 failed" in results.stdout


REJUDGINGS = """
query($id: ID!) {
  experiment(id: $id) { rejudgings { id judgeModel episodes } }
  episodeResults(evaluation: "exp-rejudging", filter: {experimentId: $id}) { groups { scored } }
}"""


async def test_an_experiments_rejudgings_travel_with_it(
    source_redis: redis.Redis, empty_redis: str, tmp_path: Path
) -> None:
    """The experiment page offers the re-judgings made of the experiment's episodes
    (`experiment.rejudgings`): in a fresh Parley importing the export it offers them too, as
    their results are there."""
    pk, episodes = await experiment_world(source_redis, "exp-rejudged")
    rejudging = Evaluation(
        id="exp-rejudging", judge_model="judge-2", created_at=1_700_000_100.0
    )  # queued, with the two completed episodes' entries and records, listed under `pk`
    completed: list[tuple[str, dict[str, Any]]] = []
    for episode in episodes[:2]:
        fields = await source_redis.json().get(EpisodeLog.make_primary_key(episode))
        assert isinstance(fields, dict)
        completed.append((episode, fields))
    await queue_rejudging(source_redis, private_queue(source_redis), rejudging, completed, pk)
    rewards: list[Any] = [list(scored(5.0))] * 2
    for episode in episodes[:2]:  # as the judge leaves them
        key = EpisodeLog.make_primary_key(episode)
        await source_redis.json().set(key, "$.evaluations[0].status", "COMPLETED")
        await source_redis.json().set(key, "$.evaluations[0].rewards", rewards)
        record = keys.evaluation_record(rejudging.id, episode)
        await source_redis.json().set(record, "$.status", "COMPLETED")
        await source_redis.json().set(record, "$.rewards", rewards)
    source = parley_env(url_of(source_redis), tmp_path / "a")
    target = parley_env(empty_redis, tmp_path / "b", seed="false")
    out = tmp_path / "all.jsonl"
    await export_lines(out, source)
    await import_anew(out, target, "2 agents, 3 episodes, 1 experiments, 1 scenarios")

    listed = [{"id": "exp-rejudging", "judgeModel": "judge-2", "episodes": 2}]
    for parley, env in (("source", source), ("target", target)):
        with api_process(env, tmp_path / f"{parley}.log", "--no-worker") as api:
            async with httpx.AsyncClient(base_url=api.url, timeout=30) as http:
                data = await GraphQLClient(http).data(REJUDGINGS, {"id": pk})
        assert data["experiment"]["rejudgings"] == listed, parley
        assert data["episodeResults"]["groups"] == [{"scored": 4}], parley


async def test_csv_implies_episodes_and_url_takes_the_graphql_address(
    redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    """`--format csv` failed without `--kind episodes`; `--url` took only the server's root
    (users paste the /graphql address they use everywhere else, and got a 404)."""
    await parley_world(redis_client, "exp-csv")
    local = parley_env(redis_url, tmp_path / "a")
    csv = await run("export", "--format", "csv", "--experiment", "exp-csv", env=local)
    assert csv.returncode == 0, csv.stderr
    rows = csv.stdout.splitlines()
    assert rows[0].startswith("episode_id,") and len(rows) == 1 + 4
    async with serve(redis_url, tmp_path / "api") as url:
        for address in (f"{url}/graphql", f"{url}/graphql/", f"{url}/"):
            remote = await run(
                "export", "--url", address, "--format", "csv", "--experiment", "exp-csv", env=local
            )
            assert remote.returncode == 0, remote.stderr
            assert sorted(remote.stdout.splitlines()) == sorted(rows)
        file = tmp_path / "again.jsonl"
        file.write_text(
            (await run("export", "--experiment", "exp-csv", "--kind", "episodes", env=local)).stdout
        )
        imported = await run("import", "--url", f"{url}/graphql", str(file), env=local)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    assert imported.stdout.splitlines()[1] == "skipped (already stored): 4 episodes"


COMMANDS = [
    [],
    ["serve"],
    ["worker"],
    ["export-schema"],
    ["seed"],
    ["redis-url"],
    ["export"],
    ["import"],
    ["experiment"],
    ["experiment", "run"],
    ["experiment", "watch"],
    ["experiment", "results"],
]
INTERNAL = ("Starlette", "uvicorn", "idempotent", "import what they need", "in-process", "SDL)")


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "parley")
async def test_help_is_written_for_users(command: list[str], tmp_path: Path) -> None:
    """`parley --help` spoke of what each command imports (no GraphQL, Starlette or
    uvicorn); every help now says what a command does."""
    shown = await run(*command, "--help", env=parley_env("redis://127.0.0.1:1/0", tmp_path))
    assert shown.returncode == 0, shown.stderr
    for word in INTERNAL:
        assert word not in shown.stdout, (word, shown.stdout)
    if not command:
        assert "`parley serve` starts it" in shown.stdout
        assert "`parley COMMAND --help` describes a command." in shown.stdout


def test_every_command_and_option_has_help() -> None:
    from parley.graph.cli import parser

    def walk(command: argparse.ArgumentParser, name: str) -> list[str]:
        missing = []
        for action in command._actions:
            if isinstance(action, argparse._SubParsersAction):
                helps = {choice.dest: choice.help for choice in action._choices_actions}
                for sub, subparser in action.choices.items():
                    if not helps.get(sub):
                        missing.append(f"{name} {sub}")
                    missing += walk(subparser, f"{name} {sub}")
            elif not (action.help and action.help.strip()):
                missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
        return missing

    assert walk(parser(), "parley") == []


async def test_a_refusal_by_the_server_is_said_in_the_same_words_as_without_url(
    redis_url: str, tmp_path: Path
) -> None:
    """Without `--url` a bad `--kind` or `--status` is one plain line; with `--url` the command
    printed the server's JSON body (`{"errors":[{"message": ..., "extensions": ...}]}`)."""
    local = parley_env(redis_url, tmp_path / "a")
    cases = [["--kind", "bogus"], ["--status", "bogus"], ["--format", "csv", "--kind", "agents"]]
    async with serve(redis_url, tmp_path / "api") as url:
        for args in cases:
            here = await run("export", *args, env=local)
            there = await run("export", "--url", url, *args, env=local)
            assert here.returncode == there.returncode == 1, (here.stderr, there.stderr)
            said = here.stderr.strip().removeprefix("parley export: ")
            assert said in there.stderr, (here.stderr, there.stderr)
            assert '{"errors"' not in there.stderr and "extensions" not in there.stderr, (
                there.stderr
            )


async def test_an_address_without_http_is_taken_or_refused_in_plain_words(
    redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    """Users type `localhost:8000` as they would to curl. Every command answered with the
    address twice and nothing else ("parley export: 127.0.0.1:8000: 127.0.0.1:8000/export");
    each must either reach the server or say that the address needs http:// or https://."""
    await parley_world(redis_client, "exp-scheme")
    local = parley_env(redis_url, tmp_path / "a")
    file = tmp_path / "some.jsonl"
    file.write_text(
        (await run("export", "--experiment", "exp-scheme", "--kind", "episodes", env=local)).stdout
    )
    async with serve(redis_url, tmp_path / "api") as url:
        bare = url.removeprefix("http://")
        commands = [
            ["export", "--url", bare, "--kind", "agents"],
            ["import", "--url", bare, str(file)],
            ["experiment", "results", "exp-scheme", "--url", f"{bare}/graphql"],
        ]
        for command in commands:
            done = await run(*command, env=local)
            if done.returncode == 0:
                continue
            assert "http://" in done.stderr, (command, done.stderr)
            assert "Traceback" not in done.stderr


async def test_a_missing_token_is_said_with_what_to_do(redis_url: str, tmp_path: Path) -> None:
    """Against a server with tokens, every command without one printed the server's JSON body
    (`answered 401: {"errors": [{"message": "a valid bearer token is required ..."}]}`), and
    none said how a command is given a token."""
    local = {k: v for k, v in parley_env(redis_url, tmp_path / "a").items() if k != "PARLEY_TOKEN"}
    file = tmp_path / "empty.jsonl"
    file.write_text("")
    async with serve(redis_url, tmp_path / "api", tokens="cli-token") as url:
        commands = [
            ["export", "--url", url],
            ["import", "--url", url, str(file)],
            ["experiment", "results", "some-experiment", "--url", url],
        ]
        for command in commands:
            done = await run(*command, env=local)
            assert done.returncode != 0, (command, done.stdout)
            assert "--token" in done.stderr or "PARLEY_TOKEN" in done.stderr, (command, done.stderr)
            assert '{"errors"' not in done.stderr, (command, done.stderr)
