"""An experiment of 10,000 episodes: how long creating, starting, re-starting (nothing left to
queue), reading the progress and cancelling take.

Run: python -m bench.bench_experiments [--repeats N] [--reads N]
Starts an embedded Redis and one `parley serve --no-worker` process; nothing runs the episodes.
The design is 10 scenarios x 10 explicit pairs x 2 seatings x `repeats` (50: 10,000 slots).
"""

import time
from typing import Any

import httpx

from bench.common import bench_redis, run_main, summary_ms
from bench.support.processes import api_process, parley_env
from parley.storage.models import AgentProfile, EnvironmentProfile

CREATE = """
mutation($input: CreateExperimentInput!) {
  createExperiment(input: $input) { experiment { id slotCount } userErrors { message } }
}"""
START = """mutation($id: ID!) {
  startExperiment(input: {id: $id}) { changed userErrors { message } } }"""
CANCEL = """mutation($id: ID!) {
  cancelExperiment(input: {id: $id}) { changed userErrors { message } } }"""
PROGRESS = """query($id: ID!) { experiment(id: $id) { progress { total unfinished
  episodesPerMinute secondsLeft counts { status count } } } }"""
MODEL = "custom/bench@http://127.0.0.1:9/v1"


async def world() -> tuple[list[str], list[str]]:
    agents = [AgentProfile(first_name=f"B{i}", last_name="Bench", tag="bench") for i in range(11)]
    for agent in agents:
        await agent.save()
    scenarios = [
        EnvironmentProfile(scenario=f"Scene {i}", agent_goals=["a", "b"], tag="bench")
        for i in range(10)
    ]
    for scenario in scenarios:
        await scenario.save()
    return [str(s.pk) for s in scenarios], [str(a.pk) for a in agents]


async def call(http: httpx.AsyncClient, query: str, variables: dict[str, Any]) -> tuple[float, Any]:
    began = time.perf_counter()
    response = await http.post("/graphql", json={"query": query, "variables": variables})
    elapsed = time.perf_counter() - began
    body = response.json()
    assert response.status_code == 200 and "errors" not in body, response.text[:500]
    return elapsed, body["data"]


async def run(repeats: int = 50, reads: int = 50) -> None:
    async with bench_redis() as (url, tmp, _):
        scenarios, agents = await world()
        pairs = [[agents[i], agents[i + 1]] for i in range(10)]
        design = {
            "scenarios": {"ids": scenarios},
            "agents": {"pairs": pairs},
            "models": {"compare": [MODEL], "partner": MODEL},
            "repeats": repeats,
            "judgeModel": MODEL,
        }
        env = parley_env(url, tmp / "data", seed="false")
        with api_process(env, tmp / "api.log", "--no-worker") as api:
            async with httpx.AsyncClient(base_url=api.url, timeout=600) as http:
                variables = {"input": {"name": "bench", "tag": "bench", "design": design}}
                took, data = await call(http, CREATE, variables)
                experiment = data["createExperiment"]["experiment"]
                pk, slots = experiment["id"], experiment["slotCount"]
                print(f"createExperiment ({slots} slots): {took * 1000:.0f} ms")
                took, data = await call(http, START, {"id": pk})
                assert data["startExperiment"]["changed"] == slots, data
                print(f"startExperiment, queueing {slots}: {took * 1000:.0f} ms")
                took, data = await call(http, START, {"id": pk})
                assert data["startExperiment"]["changed"] == 0, data
                print(f"startExperiment again, nothing to queue: {took * 1000:.0f} ms")
                times = [(await call(http, PROGRESS, {"id": pk}))[0] for _ in range(reads)]
                print(f"experiment(id) {{ progress }}: {summary_ms(times)}")
                took, data = await call(http, CANCEL, {"id": pk})
                assert data["cancelExperiment"]["changed"] == slots, data
                print(f"cancelExperiment, cancelling {slots}: {took * 1000:.0f} ms")


if __name__ == "__main__":
    run_main(run, __doc__)
