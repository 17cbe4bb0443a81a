"""A 50-scenario draft job on the fake LLM: how long it takes, how its progress arrives, and
how long saving the result takes.

Run: python -m bench.bench_drafts [--scenarios 50] [--delay 1.0] [--runs 3]
Starts an embedded Redis, the fake LLM (its own process, answering each request after
`--delay` seconds), an API without a worker and one `parley worker`. Each run starts a job
with startDraftJob, follows it with draftJob every 50 ms over HTTP until it completes, then
saves its scenarios with saveDraft. Prints each run and the medians.
"""

import asyncio
import json
import statistics
import time
from pathlib import Path

from bench.common import bench_redis, run_main
from bench.support.fake_llm import fake_llm_process
from bench.support.processes import api_process, parley_env, worker_process
from bench.support.simulation import post
from parley.storage.embedded import free_port

START = """
mutation($input: StartDraftJobInput!) {
  startDraftJob(input: $input) { draftJob { id } userErrors { message } }
}"""
FOLLOW = """
query($id: ID!) {
  draftJob(id: $id) {
    status progress { done total }
    result { scenarios { codename scenario agentGoals relationship } }
  }
}"""
SAVE = """
mutation($input: SaveDraftInput!) {
  saveDraft(input: $input) { scenarioIds userErrors { message } }
}"""


async def one_job(api: str, scenarios: int) -> tuple[float, list[tuple[float, int]], float]:
    """Seconds to COMPLETED, the (seconds, done) of each progress change, seconds to save."""
    began = time.perf_counter()
    variables = {"input": {"prompt": "Tenants and a landlord.", "model": "fake",
                           "scenarios": scenarios}}  # fmt: skip
    started = (await post(api, START, variables))["startDraftJob"]
    assert not started["userErrors"], started
    job_id = started["draftJob"]["id"]
    changes: list[tuple[float, int]] = []
    while True:
        job = (await post(api, FOLLOW, {"id": job_id}))["draftJob"]
        done = job["progress"]["done"]
        if not changes or changes[-1][1] != done:
            changes.append((time.perf_counter() - began, done))
        if job["status"] in ("COMPLETED", "FAILED"):
            break
        await asyncio.sleep(0.05)
    assert job["status"] == "COMPLETED", job
    finished = time.perf_counter() - began
    saving = time.perf_counter()
    saved = await post(api, SAVE, {"input": {"scenarios": job["result"]["scenarios"]}})
    assert not saved["saveDraft"]["userErrors"], saved
    assert len(saved["saveDraft"]["scenarioIds"]) == scenarios
    return finished, changes, time.perf_counter() - saving


async def main(scenarios: int = 50, delay: float = 1.0, runs: int = 3) -> None:
    async with bench_redis() as (redis_url, tmp, _):
        with fake_llm_process(free_port(), delay) as (base, _pid):
            models = tmp / "models.json"
            entry = {"name": "fake", "base_url": base, "model": "fake", "max_concurrency": 64}
            models.write_text(json.dumps({"models": [entry]}))
            env = parley_env(redis_url, tmp / "data", seed="false", models_file=str(models))
            with (
                api_process(env, Path(tmp) / "api.log", "--no-worker") as api,
                worker_process(env, Path(tmp) / "worker.log", concurrency=None),
            ):
                await asyncio.sleep(1)
                single, _, _ = await one_job(api.url, 5)
                results = [await one_job(api.url, scenarios) for _ in range(runs)]
    print(f"fake LLM delay {delay * 1000:.0f} ms a request; parts of 5 scenarios; one worker")
    print(f"one part (5 scenarios) alone: {single:.2f} s")
    for n, (finished, changes, save) in enumerate(results, start=1):
        steps = ", ".join(f"{done}@{at:.2f}s" for at, done in changes)
        print(f"run {n}: {scenarios} scenarios COMPLETED in {finished:.2f} s; saveDraft "
              f"{save * 1000:.0f} ms; progress {steps}")  # fmt: skip
    print(
        f"median of {runs}: {statistics.median(r[0] for r in results):.2f} s to COMPLETED, "
        f"saveDraft {statistics.median(r[2] for r in results) * 1000:.0f} ms"
    )


if __name__ == "__main__":
    run_main(main, __doc__)
