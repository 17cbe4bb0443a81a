"""An episode followed through the logs of the API and a worker: JSON lines, each line about the
episode carrying its id, and the worker's lines its attempt and worker too."""

import json
from pathlib import Path
from typing import Any

import httpx
import redis.asyncio as redis

from bench.support.fake_llm import FakeLLM
from bench.support.processes import api_process, parley_env, worker_process
from bench.support.simulation import START, make_world, start_input, wait_for


def lines(log: Path) -> list[dict[str, Any]]:
    parsed = []
    for line in log.read_text().splitlines():
        if line.startswith("{"):
            parsed.append(json.loads(line))
    return parsed


async def test_grep_an_episode_id_and_see_its_whole_life(
    redis_url: str, redis_client: redis.Redis, tmp_path: Path, fake_llm: FakeLLM
) -> None:
    scenario, agents = await make_world("logs")
    env = parley_env(redis_url, tmp_path / "data", seed="false", log_format="json")
    variables = {"input": start_input(scenario, agents, fake_llm.model_name())}
    with (
        api_process(env, tmp_path / "api.log", "--no-worker") as api,
        worker_process(env, tmp_path / "worker.log"),
    ):
        async with httpx.AsyncClient(base_url=api.url, timeout=30) as http:
            response = await http.post(
                "/graphql",
                json={"query": START, "variables": variables},
                headers={"x-request-id": "client-req-7"},
            )
        assert response.headers["x-request-id"] == "client-req-7"
        episode_id = response.json()["data"]["startSimulation"]["episode"]["id"]
        await wait_for(api.url, episode_id, lambda e: e["status"] == "COMPLETED", 30)
    api_lines = [e for e in lines(tmp_path / "api.log") if e.get("episode") == episode_id]
    worker_lines = [e for e in lines(tmp_path / "worker.log") if e.get("episode") == episode_id]
    assert [e["message"] for e in api_lines] == ["queued"]
    assert api_lines[0]["request"] == "client-req-7" and api_lines[0]["level"] == "INFO"
    assert [e["message"] for e in worker_lines] == ["attempt started", "episode completed"]
    assert all(e["attempt"] == "1" and e["worker"] for e in worker_lines)
    mentions = [
        line
        for log in ("api.log", "worker.log")
        for line in (tmp_path / log).read_text().splitlines()
        if episode_id in line
    ]
    assert len(mentions) == len(api_lines) + len(worker_lines)  # no line names it unstructured
