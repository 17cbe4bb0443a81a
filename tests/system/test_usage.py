"""Tokens and cost through real processes: `parley serve`, `parley worker`, the fake LLM.

The fake answers with OpenAI's `usage` (or without it, when told); every request it answered is
recorded with what it reported, which is what the stored counts must add up to.
"""

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as redis

from bench.support.fake_llm import FakeLLM, RecordedRequest
from bench.support.processes import PARLEY, api_process, parley_env, worker_process
from bench.support.simulation import make_world, post, start, start_input, wait_for
from parley.engine.usage import estimate_prompt, estimate_text
from parley.storage.models import EpisodeLog

PRICES = {"agent-m": (0.5, 2.0), "judge-m": (1.25, 10.0)}
"""US dollars per million prompt and completion tokens, by the endpoint's model id."""
USAGE = """
query($id: ID!) {
  episode(id: $id) {
    status attempt cost generationStats
    usage { model promptTokens completionTokens estimated cost }
  }
}"""
TOTALS = """
query($filter: UsageFilter) {
  usageTotals(filter: $filter) {
    episodes promptTokens completionTokens estimatedTokens cost pricedEpisodes
  }
}"""


@pytest.fixture
def models_file(tmp_path: Path, fake_llm: FakeLLM) -> Path:
    """`cheap` (agents) and `judge` with prices; `free` without."""
    entries: list[dict[str, Any]] = [
        {"name": "cheap", "model": "agent-m", "prompt_price": 0.5, "completion_price": 2},
        {"name": "judge", "model": "judge-m", "prompt_price": 1.25, "completion_price": 10},
        {"name": "free", "model": "free-m"},
    ]
    path = tmp_path / "models.json"
    models = [{**e, "base_url": fake_llm.base_url} for e in entries]
    path.write_text(json.dumps({"models": models}))
    return path


@pytest.fixture
def env(redis_url: str, redis_client: redis.Redis, tmp_path: Path, models_file: Path) -> Any:
    return parley_env(
        redis_url,
        tmp_path / "data",
        lease_seconds="2",
        seed="false",
        models_file=str(models_file),
    )


def reported(requests: list[RecordedRequest]) -> dict[str, tuple[int, int]]:
    """(prompt, completion) tokens the fake reported, by endpoint model id."""
    totals: dict[str, tuple[int, int]] = {}
    for r in requests:
        if r.usage is not None:
            prompt, completion = totals.get(r.body["model"], (0, 0))
            usage = r.usage
            totals[r.body["model"]] = (
                prompt + usage["prompt_tokens"],
                completion + usage["completion_tokens"],
            )
    return totals


def dollars(model_id: str, prompt: int, completion: int) -> float:
    prompt_price, completion_price = PRICES[model_id]
    return (prompt * prompt_price + completion * completion_price) / 1_000_000


async def usage_of(url: str, episode_id: str) -> dict[str, Any]:
    found: dict[str, Any] = (await post(url, USAGE, {"id": episode_id}))["episode"]
    return found


async def totals(url: str, **filter: str) -> dict[str, Any]:
    found: dict[str, Any] = (await post(url, TOTALS, {"filter": filter}))["usageTotals"]
    return found


def by_model(episode: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["model"]: row for row in episode["usage"]}


def completed(episode: dict[str, Any]) -> bool:
    return bool(episode["status"] == "COMPLETED")


async def test_counts_match_what_the_provider_reported_and_are_priced(
    env: dict[str, str], tmp_path: Path, fake_llm: FakeLLM
) -> None:
    scenario, agents = await make_world("usage-priced")
    tag = f"usage-{time.time_ns()}"
    runs: list[tuple[dict[str, Any], list[RecordedRequest]]] = []
    with (
        api_process(env, tmp_path / "api.log", "--no-worker") as api,
        worker_process(env, tmp_path / "worker.log"),
    ):
        for _ in range(2):  # one after the other, so each one's requests are its own
            fake_llm.reset()
            variables = start_input(scenario, agents, "cheap", judgeModel="judge", tag=tag)
            episode_id = await start(api.url, variables)
            await wait_for(api.url, episode_id, completed)
            runs.append((await usage_of(api.url, episode_id), fake_llm.requests))
        summed = await totals(api.url, tag=tag.upper())  # tags ignore letter case

    for episode, requests in runs:
        sent = reported(requests)
        assert set(sent) == {"agent-m", "judge-m"}
        rows = by_model(episode)
        assert set(rows) == {"cheap", "judge"}
        for name, model_id in (("cheap", "agent-m"), ("judge", "judge-m")):
            prompt, completion = sent[model_id]
            assert (rows[name]["promptTokens"], rows[name]["completionTokens"]) == sent[model_id]
            assert rows[name]["estimated"] is False
            assert rows[name]["cost"] == pytest.approx(dollars(model_id, prompt, completion))
        assert episode["cost"] == pytest.approx(rows["cheap"]["cost"] + rows["judge"]["cost"])
        stats = episode["generationStats"]  # unchanged: flat counters, provider's tokens
        assert stats["prompt_tokens"] == sum(p for p, _ in sent.values())
        assert "usage" not in stats

    everything = [row for episode, _ in runs for row in episode["usage"]]
    assert summed == {
        "episodes": 2,
        "promptTokens": sum(row["promptTokens"] for row in everything),
        "completionTokens": sum(row["completionTokens"] for row in everything),
        "estimatedTokens": 0,
        "cost": pytest.approx(sum(episode["cost"] for episode, _ in runs)),
        "pricedEpisodes": 2,
    }


async def test_without_usage_the_counts_are_estimated_and_without_prices_cost_is_null(
    env: dict[str, str], tmp_path: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.usage = False
    scenario, agents = await make_world("usage-estimated")
    tag = f"estimated-{time.time_ns()}"
    with (
        api_process(env, tmp_path / "api.log", "--no-worker") as api,
        worker_process(env, tmp_path / "worker.log"),
    ):
        variables = start_input(scenario, agents, "free", tag=tag)
        episode_id = await start(api.url, variables)
        await wait_for(api.url, episode_id, completed)
        episode = await usage_of(api.url, episode_id)
        summed = await totals(api.url, tag=tag)

    requests = fake_llm.requests
    assert requests and all(r.usage is None for r in requests)
    prompt = sum(estimate_prompt(r.body["messages"]) for r in requests)
    completion = sum(estimate_text(r.reply or "") for r in requests)
    assert episode["usage"] == [
        {
            "model": "free",
            "promptTokens": prompt,
            "completionTokens": completion,
            "estimated": True,
            "cost": None,
        }
    ]
    assert episode["cost"] is None
    assert summed == {
        "episodes": 1,
        "promptTokens": prompt,
        "completionTokens": completion,
        "estimatedTokens": prompt + completion,
        "cost": None,
        "pricedEpisodes": 0,
    }


async def test_a_resumed_attempt_keeps_the_tokens_the_killed_one_stored(
    env: dict[str, str], tmp_path: Path, fake_llm: FakeLLM
) -> None:
    """What the first worker stored with its turns is kept; the second adds exactly the calls
    it made. The call the first worker had in flight when it died is not counted (nothing of
    it was stored, and its turn is asked again)."""
    fake_llm.delay = 0.3
    scenario, agents = await make_world("usage-resume")
    with api_process(env, tmp_path / "api.log", "--no-worker") as api:
        variables = start_input(scenario, agents, "cheap", judgeModel="judge", maxTurns=4)
        episode_id = await start(api.url, variables)
        with worker_process(env, tmp_path / "w1.log") as doomed:
            await wait_for(api.url, episode_id, lambda e: len(e["turns"]) >= 2)
            doomed.kill()
        left = await EpisodeLog.get(episode_id)
        assert left.status == "RUNNING" and len(left.turns) >= 2
        kept = {row.model: row for row in left.usage}
        assert set(kept) == {"cheap"} and kept["cheap"].prompt_tokens > 0
        assert left.cost == kept["cheap"].cost and left.prompt_tokens == kept["cheap"].prompt_tokens
        restarted = time.time()
        with worker_process(env, tmp_path / "w2.log"):
            await wait_for(api.url, episode_id, completed)
        done = await usage_of(api.url, episode_id)

    assert done["attempt"] == 2
    second = reported([r for r in fake_llm.requests if r.received >= restarted])
    rows = by_model(done)
    cheap, judge = rows["cheap"], rows["judge"]
    assert (judge["promptTokens"], judge["completionTokens"]) == second["judge-m"]
    added = second.get("agent-m", (0, 0))
    assert cheap["promptTokens"] == kept["cheap"].prompt_tokens + added[0]
    assert cheap["completionTokens"] == kept["cheap"].completion_tokens + added[1]
    assert cheap["cost"] == pytest.approx(dollars("agent-m", *_pair(cheap)))
    assert done["cost"] == pytest.approx(cheap["cost"] + judge["cost"])


def _pair(row: dict[str, Any]) -> tuple[int, int]:
    return row["promptTokens"], row["completionTokens"]


@pytest.mark.parametrize(
    ("prices", "message"),
    [
        ({"prompt_price": -1, "completion_price": 1}, "prompt_price must be a number"),
        ({"prompt_price": 1, "completion_price": "1.5"}, "completion_price must be a number"),
        ({"prompt_price": 1}, "give both prompt_price and completion_price"),
    ],
)
@pytest.mark.parametrize("command", ["serve", "worker"])
async def test_bad_prices_stop_start_up_with_one_clear_line(
    redis_url: str,
    redis_client: redis.Redis,
    tmp_path: Path,
    unchanged: Any,
    command: str,
    prices: dict[str, Any],
    message: str,
) -> None:
    path = tmp_path / "models.json"
    entry = {"name": "lab", "base_url": "http://127.0.0.1:9/v1", "model": "m", **prices}
    path.write_text(json.dumps({"models": [entry]}))
    env = parley_env(redis_url, tmp_path / "data", seed="false", models_file=str(path))
    args = {"serve": ["serve", "--port", "1"], "worker": ["worker"]}
    async with unchanged():
        process = await asyncio.create_subprocess_exec(
            *PARLEY,
            *args[command],
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        _, stderr = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 1
    lines = stderr.decode().strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"parley: cannot read models file {path}: models[0] (lab)")
    assert message in lines[0]
