"""A researcher's whole loop through real processes: a design file comparing two models on the
sample scenarios with sampled agent pairs, `parley experiment run` with its worker killed midway
and the experiment finished after a restart without duplicates, the table of means checked
against a computation of its own, a re-judging with a custom dimension list, and an export
imported into an empty Parley that gives the same results."""

import json
import math
import statistics
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as redis
from scipy import stats

from bench.support.fake_llm import FakeLLM
from bench.support.polling import eventually
from bench.support.processes import api_process, parley_env, run, worker_process
from bench.support.simulation import CREATE_DIMENSION_LIST, post
from parley.storage.embedded import EmbeddedRedis
from tests.system.test_experiments import Cli, progress

RESULTS = """
query($id: ID!, $evaluation: ID) {
  episodeResults(filter: {experimentId: $id}, groupBy: [MODEL], evaluation: $evaluation) {
    groups {
      model scored failed cancelled unfinished unscored
      dimensions { dimension count mean sd confidenceInterval { low high margin } }
    }
  }
}"""
SLOTS = """
query($id: ID!) { experiment(id: $id) { slots(first: 100) { nodes { episode { id } } } } }"""
REJUDGE = """
mutation($input: RejudgeEpisodesInput!) {
  rejudgeEpisodes(input: $input) { rejudging { id episodes } userErrors { message } }
}"""
REJUDGING = (
    "query($id: ID!) { rejudging(id: $id) { progress { queued running completed failed } } }"
)


@pytest.fixture
async def servers(tmp_path: Path) -> AsyncIterator[tuple[str, str]]:
    """Two Redis servers of their own: the researcher's, and an empty one to import into."""
    source, empty = EmbeddedRedis(tmp_path / "source"), EmbeddedRedis(tmp_path / "empty")
    urls = (await source.start(), await empty.start())
    yield urls
    await source.stop()
    await empty.stop()


def design(path: Path, models: list[str]) -> Path:
    path.write_text(
        f"""
name = "loop"
tag = "loop"

[design]
max_turns = 2
judge_model = "{models[0]}"

[design.scenarios]
tag = "parley-sample"

[design.agents]
sample = "uniform"
seed = 11
pairs_per_scenario = 1

[design.models]
compare = {json.dumps(models)}
partner = "{models[0]}"
""",
        encoding="utf-8",
    )
    return path


async def stored_episodes(url: str, experiment_id: str) -> list[dict[str, Any]]:
    client = redis.Redis.from_url(url, decode_responses=True)
    try:
        keys = [k async for k in client.scan_iter(":sotopia.database.logs.EpisodeLog:*")]
        documents: list[Any] = [await client.json().get(k) for k in keys]
    finally:
        await client.aclose()
    return [d for d in documents if d and d.get("experiment_id") == experiment_id]


def reference(episodes: list[dict[str, Any]], model: str) -> tuple[int, float, float]:
    """(count, mean, 95% margin) of the overall scores of `model`'s seats, computed here."""
    scores = [
        float(e["rewards"][seat][0])
        for e in episodes
        if e["status"] == "COMPLETED"
        for seat in (0, 1)
        if e["models"][1 + seat] == model
    ]
    sd = statistics.stdev(scores)
    margin = float(stats.t.ppf(0.975, len(scores) - 1)) * sd / math.sqrt(len(scores))
    return len(scores), statistics.fmean(scores), margin


async def test_design_run_kill_resume_results_rejudge_export_import(
    servers: tuple[str, str], tmp_path: Path, fake_llm: FakeLLM
) -> None:
    source_url, empty_url = servers
    fake_llm.delay = 0.05
    models = [fake_llm.model_name("model-a"), fake_llm.model_name("model-b")]
    env = parley_env(source_url, tmp_path / "data", lease_seconds="1", max_attempts="1")
    path = design(tmp_path / "design.toml", models)
    seeded = await run("seed", env=env)
    assert seeded.returncode == 0, seeded.stderr

    with api_process(env, tmp_path / "api.log", "--no-worker") as api:
        url = ["--url", api.url]
        first = Cli(["run", str(path), *url], tmp_path / "run1.log")
        pk = first.experiment_id()
        total = (await progress(api.url, pk))["total"]
        assert total == 6 * 1 * 2 * 2  # scenarios x pairs x compared models x seat orders
        # The doomed worker's model never answers, so the episodes it holds when it is killed
        # have made no progress: a loss the cap (max_attempts=1) counts, and they fail. (A lost
        # attempt that stored a turn is resumed instead.)
        fake_llm.delay = 600
        try:
            with worker_process(env, tmp_path / "w1.log", concurrency=3) as doomed:
                await eventually(
                    partial(stored_episodes, source_url, pk),
                    lambda episodes: sum(e["status"] == "RUNNING" for e in episodes) >= 3,
                    timeout=90,
                )
                doomed.kill()
        finally:
            fake_llm.delay = 0.05
        with worker_process(env, tmp_path / "w2.log", concurrency=6):
            assert first.wait() == 1, first.output()  # ended with the lost episodes failed
            second = Cli(["run", str(path), *url], tmp_path / "run2.log")
            assert second.wait() == 0, second.output()
        assert f"completed {total}/{total}, failed 0" in second.output()
        episodes = await stored_episodes(source_url, pk)
        completed = {e["pk"] for e in episodes if e["status"] == "COMPLETED"}
        slots = (await post(api.url, SLOTS, {"id": pk}))["experiment"]["slots"]["nodes"]
        filling = {slot["episode"]["id"] for slot in slots}
        assert len(slots) == total and filling == completed  # each slot one episode, none twice
        failed = [e for e in episodes if e["status"] == "FAILED"]
        assert failed, "the killed worker's episodes failed"

        table = Cli(["results", pk, *url], tmp_path / "results.log")
        assert table.wait() == 0, table.output()
        served = (await post(api.url, RESULTS, {"id": pk}))["episodeResults"]["groups"]
        assert sorted(g["model"] for g in served) == sorted(models)
        for group in served:
            count, mean, margin = reference(episodes, group["model"])
            overall = group["dimensions"][0]
            assert overall["dimension"] == "overall" and overall["count"] == count
            assert overall["mean"] == pytest.approx(mean)
            assert overall["confidenceInterval"]["margin"] == pytest.approx(margin)
            # failed episodes with the model in a seat, each once (in both seats or one)
            assert group["failed"] == sum(group["model"] in e["models"][1:3] for e in failed)
            row = next(line for line in table.output().splitlines() if group["model"] in line)
            assert f"{mean:.2f} ± {margin:.2f}" in row

        listed = await post(
            api.url,
            CREATE_DIMENSION_LIST,
            {
                "input": {
                    "name": "loop-warmth",
                    "dimensions": [{"name": "warmth", "rangeLow": 0, "rangeHigh": 10}],
                }
            },
        )
        list_id = listed["createEvaluationDimensionList"]["evaluationDimensionList"]["id"]
        rejudge_input = {
            "experimentId": pk,
            "judgeModel": models[1],
            "evaluationDimensionListId": list_id,
        }
        queued = (await post(api.url, REJUDGE, {"input": rejudge_input}))["rejudgeEpisodes"]
        assert queued["userErrors"] == [] and queued["rejudging"]["episodes"] == total
        rejudging = queued["rejudging"]["id"]
        with worker_process(env, tmp_path / "w3.log", concurrency=6):
            read = await eventually(
                partial(post, api.url, REJUDGING, {"id": rejudging}),
                lambda data: data["rejudging"]["progress"]["completed"] == total,
            )
        judged = read["rejudging"]["progress"]
        assert judged == {"queued": 0, "running": 0, "completed": total, "failed": 0}
        variables = {"id": pk, "evaluation": rejudging}
        rejudged = (await post(api.url, RESULTS, variables))["episodeResults"]["groups"]
        assert {d["dimension"] for g in rejudged for d in g["dimensions"]} == {"overall", "warmth"}
        assert served == (await post(api.url, RESULTS, {"id": pk}))["episodeResults"]["groups"]

        exported = tmp_path / "loop.jsonl"
        done = await run("export", "--experiment", pk, "-o", str(exported), *url, env=env)
        assert done.returncode == 0, done.stderr

    empty_env = parley_env(empty_url, tmp_path / "empty-data", seed="false")
    imported = await run("import", str(exported), env=empty_env)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    with api_process(empty_env, tmp_path / "api2.log", "--no-worker") as copy:
        again = (await post(copy.url, RESULTS, {"id": pk}))["episodeResults"]["groups"]
        assert again == served
        again_rejudged = (await post(copy.url, RESULTS, variables))["episodeResults"]["groups"]
        assert again_rejudged == rejudged
