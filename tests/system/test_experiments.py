"""Experiments through real processes: `parley experiment run` against `parley serve`, a worker
killed by pid midway, a re-run that adds only the failed episodes, Ctrl-C detach and `watch`."""

import asyncio
import csv
import json
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.support.fake_llm import FakeLLM, Rule
from bench.support.processes import PARLEY, ApiProcess, api_process, parley_env, run, worker_process
from bench.support.simulation import post
from parley.storage import keys
from parley.storage.models import EnvironmentProfile, EpisodeLog, EpisodeStatus
from tests.support.experiments import Worlds, sampled_design
from tests.support.server import serve

CREATE = """
mutation($input: CreateExperimentInput!) {
  createExperiment(input: $input) { experiment { id } userErrors { message } }
}"""
START = """
mutation($id: ID!) { startExperiment(input: {id: $id}) { changed userErrors { message } } }"""
CANCEL = """
mutation($id: ID!) { cancelExperiment(input: {id: $id}) { changed userErrors { message } } }"""
RESULTS = """
query($id: ID!) {
  episodeResults(filter: {experimentId: $id}, groupBy: [MODEL]) {
    groups { model scored failed dimensions { dimension mean confidenceInterval { margin } } }
  }
}"""
PROGRESS = """
query($id: ID!) {
  experiment(id: $id) { progress { total completed failed unfinished finished } }
}"""


@pytest.fixture
async def experiment_world() -> AsyncIterator[Worlds]:
    worlds = Worlds()
    yield worlds
    await worlds.drop()


@pytest.fixture
def env(redis_url: str, redis_client: Any, tmp_path: Path) -> dict[str, str]:
    """One attempt per episode: an episode whose worker is killed fails as "worker lost"."""
    return parley_env(
        redis_url, tmp_path / "data", lease_seconds="1", max_attempts="1", seed="false"
    )


def design_file(path: Path, name: str, scenarios: list[str], model: str) -> Path:
    ids = ", ".join(f'"{s}"' for s in scenarios)
    path.write_text(
        f"""
name = "{name}"
tag = "{name}"

[design]
max_turns = 3
turn_order = "round-robin"
judge_model = "{model}"

[design.scenarios]
ids = [{ids}]

[design.agents]
sample = "uniform"
tag = "{name}"
seed = 3
pairs_per_scenario = 2

[design.models]
compare = ["{model}"]
partner = "{model}"
""",
        encoding="utf-8",
    )
    return path


class Cli:
    """`parley experiment ...` as a process, its output in a file."""

    def __init__(self, args: list[str], log: Path) -> None:
        self.log = log
        self._file = log.open("wb")
        self.popen = subprocess.Popen(
            [*PARLEY, "experiment", *args],
            stdout=self._file,
            stderr=subprocess.STDOUT,
        )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def wait(self, timeout: float = 120) -> int:
        try:
            return self.popen.wait(timeout)
        finally:
            self._file.close()

    def experiment_id(self, timeout: float = 30) -> str:
        """The id the CLI printed once it had started the experiment."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.output().splitlines():
                if line.startswith("experiment ") and "queued now" in line:
                    return line.split()[1]
            if self.popen.poll() is not None:
                raise AssertionError(f"the CLI exited:\n{self.output()}")
            time.sleep(0.05)
        raise AssertionError(f"the CLI never started the experiment:\n{self.output()}")


async def progress(url: str, pk: str) -> dict[str, Any]:
    found: dict[str, Any] = (await post(url, PROGRESS, {"id": pk}))["experiment"]["progress"]
    return found


async def until(url: str, pk: str, ready: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    deadline = time.monotonic() + 90
    while True:
        current = await progress(url, pk)
        if ready(current):
            return current
        assert time.monotonic() < deadline, current
        await asyncio.sleep(0.05)


async def stored(pk: str) -> list[EpisodeLog]:
    found: list[EpisodeLog] = await EpisodeLog.find(EpisodeLog.experiment_id == pk).all()
    return found


async def test_killed_worker_then_rerun_adds_only_the_failed(
    experiment_world: Worlds,
    env: dict[str, str],
    tmp_path: Path,
    fake_llm: FakeLLM,
    redis_client: Any,
) -> None:
    fake_llm.delay = 0.1
    scenarios, _ = await experiment_world("sys-kill")
    path = design_file(tmp_path / "design.toml", "sys-kill", scenarios, fake_llm.model_name())
    with api_process(env, tmp_path / "api.log", "--no-worker") as api:
        url = ["--url", api.url]
        first = Cli(["run", str(path), *url], tmp_path / "run1.log")
        pk = first.experiment_id()
        with worker_process(env, tmp_path / "w1.log", concurrency=2) as doomed:
            await until(api.url, pk, lambda p: p["completed"] >= 2)
            doomed.kill()  # SIGKILL by pid: its two running episodes are lost
        with worker_process(env, tmp_path / "w2.log", concurrency=4):
            assert first.wait() == 1, first.output()  # ended, but not every episode completed
            ended = await progress(api.url, pk)
            assert ended["finished"] and ended["failed"] >= 1, ended
            assert ended["completed"] + ended["failed"] == 8
            before = {str(e.pk) for e in await stored(pk)}
            assert len(before) == 8

            second = Cli(["run", str(path), *url], tmp_path / "run2.log")
            assert second.experiment_id() == pk  # the same file finds the same experiment
            assert second.wait() == 0, second.output()
        assert f"{ended['failed']} queued now" in second.output()
        assert "completed 8/8, failed 0, cancelled 0" in second.output()
        episodes = await stored(pk)
        assert len(episodes) == 8 + ended["failed"]  # only the failed ones again
        assert {str(e.pk) for e in episodes} >= before
        done = [e for e in episodes if e.status == EpisodeStatus.COMPLETED]
        assert len(done) == 8 and all(e.tag == "sys-kill" for e in episodes)
        filling = await redis_client.hgetall(keys.experiment_slots(pk))
        assert sorted(filling.values()) == sorted(str(e.pk) for e in done)  # one per slot

        third = Cli(["run", str(path), *url], tmp_path / "run3.log")
        assert third.wait() == 0, third.output()
        assert "0 queued now" in third.output()
        assert len(await stored(pk)) == 8 + ended["failed"]

        table = Cli(["results", pk, *url], tmp_path / "results.log")
        assert table.wait() == 0, table.output()
        served = (await post(api.url, RESULTS, {"id": pk}))["episodeResults"]["groups"]
        [group] = served  # one model, in both seats: scores are of seats, the rest episodes
        assert group["scored"] == 16 and group["failed"] == ended["failed"]
        overall = group["dimensions"][0]
        assert overall["dimension"] == "overall"
        margin = overall["confidenceInterval"]["margin"]
        row = next(line for line in table.output().splitlines() if fake_llm.model_name() in line)
        assert f"{overall['mean']:.2f} ± {margin:.2f}" in row
        assert f": {ended['failed']} failed" in row  # counted apart, not averaged
        as_json = Cli(["results", pk, "--json", "--by", "model,seat", *url], tmp_path / "j.log")
        assert as_json.wait() == 0, as_json.output()
        assert sorted(g["seat"] for g in json.loads(as_json.output())) == [0, 1]
        sotopia = Cli(["results", pk, "--margin", "sotopia", *url], tmp_path / "sotopia.log")
        assert sotopia.wait() == 0 and "Sotopia's benchmark margin" in sotopia.output()
        wrong = Cli(["results", pk, "--by", "colour", *url], tmp_path / "wrong.log")
        assert wrong.wait() == 2 and "--by takes" in wrong.output()


async def test_ctrl_c_detaches_without_cancelling_and_watch_reattaches(
    experiment_world: Worlds, env: dict[str, str], tmp_path: Path, fake_llm: FakeLLM
) -> None:
    scenarios, _ = await experiment_world("sys-detach")
    path = design_file(tmp_path / "d.toml", "sys-detach", scenarios, fake_llm.model_name())
    with api_process(env, tmp_path / "api.log", "--no-worker") as api:
        run = Cli(["run", str(path), "--url", api.url], tmp_path / "run.log")
        pk = run.experiment_id()
        await asyncio.sleep(0.5)  # following the progress by now
        run.popen.send_signal(signal.SIGINT)
        assert run.wait(60) == 130, run.output()
        assert "detached" in run.output() and pk in run.output()
        assert all(e.status == EpisodeStatus.QUEUED for e in await stored(pk))
        assert (await progress(api.url, pk))["unfinished"] == 8

        with worker_process(env, tmp_path / "w.log"):
            watch = Cli(["watch", pk, "--url", api.url], tmp_path / "watch.log")
            assert watch.wait() == 0, watch.output()
        assert "completed 8/8" in watch.output()
        assert len(await stored(pk)) == 8


async def test_cli_errors_exit_with_status_2(
    env: dict[str, str], tmp_path: Path, fake_llm: FakeLLM
) -> None:
    bad = design_file(tmp_path / "bad.toml", "sys-bad", ["s"], fake_llm.model_name())
    bad.write_text(bad.read_text().replace("max_turns = 3", "repeats = 0"), encoding="utf-8")
    broken = tmp_path / "broken.toml"
    broken.write_text("name = \n", encoding="utf-8")
    with api_process(env, tmp_path / "api.log", "--no-worker") as api:
        url = ["--url", api.url]
        refused = Cli(["run", str(bad), *url], tmp_path / "bad.log")
        unparsable = Cli(["run", str(broken), *url], tmp_path / "broken.log")
        unknown = Cli(["watch", "no-such-experiment", *url], tmp_path / "unknown.log")
        assert refused.wait() == 2, refused.output()
        assert "bad.toml: design.repeats: must be at least 1, not 0" in refused.output()
        assert unparsable.wait() == 2 and "not valid TOML" in unparsable.output()
        assert unknown.wait() == 2
        assert "no experiment with id 'no-such-experiment'" in unknown.output()
    nobody = Cli(["watch", "x", "--url", api.url], tmp_path / "gone.log")
    assert nobody.wait() == 2
    assert "cannot reach" in nobody.output() or "lost" in nobody.output()


async def test_cli_sends_the_token_a_server_requires(
    experiment_world: Worlds, redis_url: str, redis_client: Any, tmp_path: Path, fake_llm: FakeLLM
) -> None:
    env = parley_env(redis_url, tmp_path / "data", tokens="s3cret", seed="false")
    scenarios, _ = await experiment_world("sys-token")
    path = design_file(tmp_path / "t.toml", "sys-token", scenarios, fake_llm.model_name())
    with api_process(env, tmp_path / "api.log") as api:  # with its own worker
        refused = Cli(["run", str(path), "--url", api.url], tmp_path / "no.log")
        assert refused.wait() == 2 and "401" in refused.output(), refused.output()
        allowed = Cli(["run", str(path), "--url", api.url, "--token", "s3cret"], tmp_path / "t.log")
        assert allowed.wait() == 0, allowed.output()
    assert "completed 8/8" in allowed.output()


async def test_a_start_killed_before_recording_its_episodes_is_resumed_without_duplicates(
    experiment_world: Worlds, redis_url: str, redis_client: Any, tmp_path: Path, fake_llm: FakeLLM
) -> None:
    scenarios, _ = await experiment_world("sys-crash")
    env = parley_env(redis_url, tmp_path / "data", seed="false", worker="false")
    design = sampled_design(scenarios, fake_llm.model_name(), tag="sys-crash")
    create = {"input": {"name": "sys-crash", "tag": "sys-crash", "design": design}}
    doomed = ApiProcess({**env, "PARLEY_FAILPOINT": "experiment:before-fill"}, tmp_path / "d.log")
    try:
        pk = (await post(doomed.url, CREATE, create))["createExperiment"]["experiment"]["id"]
        with pytest.raises(httpx.HTTPError):  # dies after writing the episodes, before the slots
            await post(doomed.url, START, {"id": pk})
        doomed.popen.wait(10)
        assert doomed.popen.returncode == -9
    finally:
        doomed.stop()
    written = {str(e.pk) for e in await stored(pk)}
    assert len(written) == 8
    one = await EpisodeLog.get(sorted(written)[0])  # and one of them has failed since
    one.status = EpisodeStatus.FAILED
    await one.save()
    with api_process(env, tmp_path / "api.log") as api:
        started = (await post(api.url, START, {"id": pk}))["startExperiment"]
        again = (await post(api.url, START, {"id": pk}))["startExperiment"]
        now = await progress(api.url, pk)
        await post(api.url, CANCEL, {"id": pk})
    assert started == {"changed": 8, "userErrors": []}
    assert again == {"changed": 0, "userErrors": []}
    after = {str(e.pk) for e in await stored(pk)}
    assert written < after and len(after) == 9  # the failed one replaced, nothing else added
    assert now["unfinished"] == 8 and now["failed"] == 0


async def test_an_experiment_that_all_failed_says_so_and_its_results_exit_1(
    experiment_world: Worlds, env: dict[str, str], tmp_path: Path, fake_llm: FakeLLM
) -> None:
    """Every command takes the /graphql address users paste from elsewhere (it was a 404);
    `results` exits 1 when nothing is scored (it exited 0), and counts episodes, not seats
    (a model against itself showed "16 failed" for 8 episodes)."""
    scenarios, _ = await experiment_world("sys-all-failed")
    path = design_file(tmp_path / "f.toml", "sys-all-failed", scenarios, fake_llm.model_name())
    with api_process(env, tmp_path / "api.log", "--no-worker") as api:
        graphql = ["--url", f"{api.url}/graphql"]
        run = Cli(["run", str(path), *graphql], tmp_path / "run.log")
        pk = run.experiment_id()
        for scenario in scenarios:  # each episode fails at once when a worker takes it
            await EnvironmentProfile.delete(scenario)
        with worker_process(env, tmp_path / "w.log"):
            assert run.wait() == 1, run.output()
        assert "completed 0/8, failed 8, cancelled 0" in run.output()
        ended = await progress(api.url, pk)
        assert ended["failed"] == 8 and ended["finished"]

        results = Cli(["results", pk, *graphql], tmp_path / "results.log")
        assert results.wait() == 1, results.output()
        row = next(line for line in results.output().splitlines() if fake_llm.model_name() in line)
        assert "8 episodes: 8 failed" in row and "16" not in row
        assert "seat scores" in results.output()
        watch = Cli(["watch", pk, "--url", f"{api.url}/graphql/"], tmp_path / "watch.log")
        assert watch.wait() == 1, watch.output()
        assert "completed 0/8, failed 8" in watch.output()


UNJUDGED = """
query($id: ID!) {
  experiment(id: $id) { progress { total completed unjudged failed finished allCompleted } }
}"""
REJUDGE = """
mutation($input: RejudgeEpisodesInput!) {
  rejudgeEpisodes(input: $input) { rejudging { id episodes } userErrors { message } }
}"""
REJUDGING = "query($id: ID!) { rejudging(id: $id) { progress { completed failed } } }"


async def test_an_experiment_whose_judge_times_out_keeps_every_conversation(
    experiment_world: Worlds, redis_url: str, redis_client: Any, tmp_path: Path, fake_llm: FakeLLM
) -> None:
    """The judge never answers in time: each episode ends COMPLETED without scores, saying
    why. The run says so and exits 1, its progress and results count them apart, the export
    carries the reason; re-judging the experiment with its own judge gives them their scores,
    which its results then average."""
    models = tmp_path / "models.json"
    entry = {"name": "slow-judge", "base_url": fake_llm.base_url, "model": "fake"}
    models.write_text(json.dumps({"models": [{**entry, "judge_timeout": 0.3}]}))
    env = parley_env(redis_url, tmp_path / "data", seed="false", models_file=str(models))
    fake_llm.add_rule(Rule(kind="judge", hang=True, times=None))
    scenarios, _ = await experiment_world("sys-unjudged")
    path = design_file(tmp_path / "d.toml", "sys-unjudged", scenarios, "slow-judge")
    with api_process(env, tmp_path / "api.log") as api:  # with its own worker
        url = ["--url", api.url]
        ran = Cli(["run", str(path), *url], tmp_path / "run.log")
        pk = ran.experiment_id()
        assert ran.wait() == 1, ran.output()
        assert "completed 8/8 (8 not judged: their judge failed" in ran.output()
        found = (await post(api.url, UNJUDGED, {"id": pk}))["experiment"]["progress"]
        assert found == {
            "total": 8,
            "completed": 8,
            "unjudged": 8,
            "failed": 0,
            "finished": True,
            "allCompleted": True,
        }
        episodes = await stored(pk)
        for episode in episodes:
            assert episode.status == EpisodeStatus.COMPLETED and episode.error is None
            assert episode.judge_error and "timed out after 0.3 s" in episode.judge_error
            assert len(episode.turns) == 3 and episode.rewards == [0.0, 0.0]
        table = Cli(["results", pk, "--json", *url], tmp_path / "results.log")
        table.wait()
        [group] = json.loads(table.output())
        assert (group["scored"], group["unscored"], group["failed"]) == (0, 8, 0)  # episodes
        exported = tmp_path / "episodes.csv"
        done = await run(
            "export", "--kind", "episodes", "--format", "csv", "--experiment", pk,
            "-o", str(exported), env=env,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        rows = list(csv.DictReader(exported.open(newline="", encoding="utf-8")))
        assert len(rows) == 8
        assert all("timed out after 0.3 s" in row["judge_error"] for row in rows)

        fake_llm.reset()  # the judge answers again
        rejudge_input = {"experimentId": pk, "judgeModel": "slow-judge"}
        queued = (await post(api.url, REJUDGE, {"input": rejudge_input}))["rejudgeEpisodes"]
        assert queued["userErrors"] == [] and queued["rejudging"]["episodes"] == 8
        rejudging = queued["rejudging"]["id"]
        deadline = time.monotonic() + 60
        while (await post(api.url, REJUDGING, {"id": rejudging}))["rejudging"]["progress"] != {
            "completed": 8,
            "failed": 0,
        }:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.1)
        found = (await post(api.url, UNJUDGED, {"id": pk}))["experiment"]["progress"]
        assert found["completed"] == 8 and found["unjudged"] == 0
        [group] = (await post(api.url, RESULTS, {"id": pk}))["episodeResults"]["groups"]
        assert group["scored"] == 16 and group["failed"] == 0
        assert all(e.judge_error is None and e.rewards[0] != 0.0 for e in await stored(pk))
        watch = Cli(["watch", pk, *url], tmp_path / "watch.log")
        assert watch.wait() == 0, watch.output()
        assert "completed 8/8, failed 0" in watch.output()


async def test_results_of_an_experiment_that_does_not_exist_say_so(
    env: dict[str, str], tmp_path: Path
) -> None:
    """A mistyped id printed an empty table and exited 1, as if the experiment existed and had
    no scores yet; `watch` says there is no such experiment and exits 2, and so must `results`
    (its help: "2 on an error")."""
    with api_process(env, tmp_path / "api.log", "--no-worker") as api:
        for extra in ([], ["--json"]):
            results = Cli(["results", "no-such-experiment", *extra, "--url", api.url],
                          tmp_path / "results.log")  # fmt: skip
            code = results.wait()
            assert code == 2, results.output()
            assert "no experiment with id 'no-such-experiment'" in results.output()
            assert "seat scores" not in results.output() and "[]" not in results.output()


DESIGN_TYPOS = {
    "max_turn = 2": "max_turn",
    'turn_order = "roundrobin"': "roundrobin",
    'max_turns = "two"': "two",
}
"""A line of a design file with a mistake a person makes, and what the answer must name."""


@pytest.mark.parametrize("line", list(DESIGN_TYPOS))
async def test_a_mistake_in_a_design_file_is_named_in_the_files_own_words(
    line: str, redis_url: str, redis_client: Any, tmp_path: Path
) -> None:
    """An unknown top-level key is named plainly, but a misspelt key, value or type inside
    [design] came back as GraphQL's validation text: "Variable '$input' has invalid value at
    .design: Expected value of type 'ExperimentDesignInput' not to include unknown field
    'maxTurn'. Did you mean 'maxTurns'? Found: {...}", in names the file does not use."""
    path = tmp_path / "design.toml"
    path.write_text(
        f"""
name = "typo"
tag = "typo"

[design]
{line}

[design.scenarios]
codename = "used_van_sale"

[design.agents]
sample = "uniform"

[design.models]
seats = [["custom/fake@http://127.0.0.1:1/v1", "custom/fake@http://127.0.0.1:1/v1"]]
""",
        encoding="utf-8",
    )
    env = parley_env(redis_url, tmp_path / "cli")
    async with serve(redis_url, tmp_path / "api") as url:
        done = await run("experiment", "run", str(path), "--url", url, env=env)
    said = done.stdout + done.stderr
    assert done.returncode == 2, said
    assert DESIGN_TYPOS[line] in said.lower(), said
    for internal in ("Variable '$input'", "ExperimentDesignInput", "enum", "Found: {"):
        assert internal not in said, said


ARM_RESULTS = """
query($id: ID!) {
  experiment(id: $id) {
    arms { name pairs notReached differences { dimension pairs meanDifference
                                               confidenceInterval { low high } } }
  }
  episodeResults(filter: {experimentId: $id, arm: "control"}) { groups { scored } }
}"""


def arms_example(path: Path, scenarios: list[str], tag: str, model: str) -> Path:
    """examples/experiments/arms.toml over the test's world and the fake model: its scenarios
    by id, its agents drawn uniformly among the world's, every model the fake one."""
    from tests.support import repo_root

    text = (repo_root() / "examples" / "experiments" / "arms.toml").read_text(encoding="utf-8")
    ids = ", ".join(f'"{s}"' for s in scenarios)
    for old, new in (
        ('name = "sample-arms"', f'name = "{tag}"'),
        ('tag = "sample-arms"', f'tag = "{tag}"'),
        ("local/gemma-3-270m", model),
        ('codename = "checkup_talk"', f"ids = [{ids}]"),
        ('sample = "relationship"', f'sample = "uniform"\ntag = "{tag}"'),
    ):
        assert old in text, old
        text = text.replace(old, new)
    path.write_text(text, encoding="utf-8")
    return path


async def test_the_arms_example_runs_to_a_paired_comparison(
    experiment_world: Worlds, env: dict[str, str], tmp_path: Path, fake_llm: FakeLLM
) -> None:
    tag = "sys-arms"
    scenarios, _ = await experiment_world(tag)
    # Agents who heard the alarm speak of leaving; episodes where they did are judged 9.
    leave = json.dumps({"action_type": "speak", "argument": "We should get out now.", "to": []})
    fake_llm.add_rule(
        Rule(kind="action", contains=["fire alarm"], content=leave, times=None),
        Rule(kind="judge", contains=["get out now"], score=9, times=None),
    )
    path = arms_example(tmp_path / "arms.toml", scenarios, tag, fake_llm.model_name())
    with api_process(env, tmp_path / "api.log") as api:
        url = ["--url", api.url]
        ran = Cli(["run", str(path), *url], tmp_path / "run.log")
        assert ran.wait() == 0, ran.output()
        pk = ran.experiment_id()
        # 2 scenarios x 1 pair x 1 seating x 2 repeats, and as many arm slots
        assert "8 episodes, 4 queued now" in ran.output()
        assert "completed 8/8" in ran.output()
        served = await post(api.url, ARM_RESULTS, {"id": pk})
        table = Cli(["results", pk, *url], tmp_path / "results.log")
        assert table.wait() == 0, table.output()
    (arm,) = served["experiment"]["arms"]
    assert arm["name"] == "alarm" and arm["pairs"] == 4 and arm["notReached"] == 0
    overall = arm["differences"][0]
    assert overall["dimension"] == "overall" and overall["pairs"] == 8
    [control] = served["episodeResults"]["groups"]
    assert control["scored"] == 8  # the control arm's 4 episodes, 2 seats each
    episodes = await stored(pk)
    assert sorted(e.arm for e in episodes) == ["alarm"] * 4 + ["control"] * 4
    out = table.output()
    assert "Control arm:" in out and "Arms: arm - control" in out
    row = next(line for line in out.splitlines() if "alarm" in line)
    interval = overall["confidenceInterval"]
    assert overall["meanDifference"] > 0 and interval["low"] > 0  # the alarm's effect
    shown = f"{overall['meanDifference']:+.2f} [{interval['low']:+.2f}, {interval['high']:+.2f}] *"
    assert shown in row  # marked: its interval leaves 0 out


ARM_SLOTS = """
query($id: ID!) {
  experiment(id: $id) {
    progress { total pending completed finished allCompleted }
    slots { nodes { number arm controlSlot episode { id status parentId } } }
  }
}"""


async def test_a_worker_killed_before_forking_an_arm_loses_nothing(
    experiment_world: Worlds, env: dict[str, str], tmp_path: Path, fake_llm: FakeLLM
) -> None:
    """The worker dies (SIGKILL) right after storing a control COMPLETED, before forking its
    arm: the control stays completed, its arm slot empty, and starting the experiment again
    (twice at once) forks it once."""
    scenarios, agents = await experiment_world("sys-arm-kill", agents=2)
    design = {
        "scenarios": {"ids": scenarios},
        "agents": {"pairs": [agents]},
        "models": {"seats": [[fake_llm.model_name()] * 2]},
        "maxTurns": 3,
        "judgeModel": fake_llm.model_name(),
        "arms": [{"name": "goal", "atTurn": 1, "goals": [{"seat": 0, "goal": "Leave at once."}]}],
    }
    request = {"input": {"name": "sys-arm-kill", "tag": "sys-arm-kill", "design": design}}
    with api_process(env, tmp_path / "api.log", "--no-worker") as api:
        created = (await post(api.url, CREATE, request))["createExperiment"]
        assert created["userErrors"] == [], created
        pk = created["experiment"]["id"]
        await post(api.url, START, {"id": pk})
        doomed_env = {**env, "PARLEY_FAILPOINT": "experiment:before-arms"}
        with worker_process(doomed_env, tmp_path / "doomed.log", concurrency=1) as doomed:
            assert doomed.popen.wait(60) == -signal.SIGKILL  # at its first control's end
        state = (await post(api.url, ARM_SLOTS, {"id": pk}))["experiment"]
        done = [s for s in state["slots"]["nodes"] if s["episode"]]
        assert [s["episode"]["status"] for s in done] == ["COMPLETED", "QUEUED"]
        assert all(s["arm"] == "" for s in done)  # no arm was forked
        with worker_process(env, tmp_path / "w.log", concurrency=2):
            # the other control completes and its worker forks its arm; the first's waits
            await until(api.url, pk, lambda p: p["completed"] == 3)
            await asyncio.sleep(1)  # past the lease: the killed worker's job is redelivered
            assert (await progress(api.url, pk))["unfinished"] == 1
            starts = await asyncio.gather(*(post(api.url, START, {"id": pk}) for _ in range(2)))
            assert sorted(s["startExperiment"]["changed"] for s in starts) == [0, 1]
            await until(api.url, pk, lambda p: p["finished"])
        state = (await post(api.url, ARM_SLOTS, {"id": pk}))["experiment"]
    assert state["progress"]["allCompleted"] and state["progress"]["total"] == 4
    slots = state["slots"]["nodes"]
    assert [(s["arm"], s["controlSlot"]) for s in slots] == [
        ("", None), ("", None), ("goal", 0), ("goal", 1)]  # fmt: skip
    for slot in slots[2:]:
        control = slots[slot["controlSlot"]]["episode"]["id"]
        assert slot["episode"]["parentId"] == control
    episodes = await stored(pk)
    assert len(episodes) == 4  # one fork per arm slot, none twice


def priced_models(path: Path, fake: FakeLLM) -> Path:
    prices = {"prompt_price": 100.0, "completion_price": 400.0}
    entries = [{"name": n, "model": n, "base_url": fake.base_url, **prices} for n in ("m", "j")]
    path.write_text(json.dumps({"models": entries}))
    return path


async def test_estimate_calibrates_then_a_budget_stops_the_run_with_status_3(
    experiment_world: Worlds, env: dict[str, str], tmp_path: Path, fake_llm: FakeLLM
) -> None:
    scenarios, _ = await experiment_world("sys-budget")
    models = priced_models(tmp_path / "models.json", fake_llm)
    priced = {**env, "PARLEY_MODELS_FILE": str(models)}
    path = design_file(tmp_path / "design.toml", "sys-budget", scenarios, "m")
    text = path.read_text().replace('judge_model = "m"', 'judge_model = "j"')
    path.write_text(text.replace("[design.scenarios]", "budget = 0.000001\n\n[design.scenarios]"))
    with (
        api_process(priced, tmp_path / "api.log", "--no-worker") as api,
        worker_process(priced, tmp_path / "w.log"),
    ):
        url = ["--url", api.url]
        estimate = Cli(["run", str(path), "--estimate", *url], tmp_path / "estimate.log")
        assert estimate.wait() == 0, estimate.output()
        said = estimate.output()
        assert "a calibration run plays 2 of them first" in said
        assert "estimate for 8 of 8 episodes, from 2 recorded comparable episodes" in said
        assert "cost         $" in said and "budget       $0.0000" in said
        # The budget is below one episode's cost: nothing beyond the calibration is queued.
        ran = Cli(["run", str(path), *url], tmp_path / "run.log")
        assert ran.wait() == 3, ran.output()
        assert "stopped: its budget is reached, 6 episodes never queued" in ran.output()
