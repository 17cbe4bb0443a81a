"""A 50-scenario draft job over real HTTP: started, followed with draftJob until it completes,
its result saved with saveDraft; against a real uvicorn with its worker and the fake model."""

import asyncio
from pathlib import Path
from typing import Any

import httpx

from bench.support.fake_llm import FakeLLM
from tests.support.server import GraphQLClient, serve

START = """
mutation($input: StartDraftJobInput!) {
  startDraftJob(input: $input) {
    draftJob { id status progress { done total } } userErrors { field message code }
  }
}"""
FOLLOW = """
query($id: ID!) {
  draftJob(id: $id) {
    status progress { done total } userErrors { field message }
    result { scenarios { codename scenario agentGoals relationship } }
  }
}"""
SAVE = """
mutation($input: SaveDraftInput!) {
  saveDraft(input: $input) { scenarioIds userErrors { field message } }
}"""


async def test_a_fifty_scenario_draft_job_completes_with_progress(
    redis_url: str, tmp_path: Path, fake_llm_server: FakeLLM
) -> None:
    fake_llm_server.reset()
    async with (
        serve(redis_url, tmp_path, worker=True) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as http,
    ):
        gql = GraphQLClient(http)
        variables = {
            "input": {
                "prompt": "Tenants negotiate with a landlord.",
                "model": fake_llm_server.model_name(),
                "scenarios": 50,
            }
        }
        started = (await gql.data(START, variables))["startDraftJob"]
        assert started["userErrors"] == []
        job = started["draftJob"]
        assert job["status"] == "QUEUED" and job["progress"] == {"done": 0, "total": 50}
        seen: list[int] = []
        state: dict[str, Any] = {}
        for _ in range(1200):
            state = (await gql.data(FOLLOW, {"id": job["id"]}))["draftJob"]
            seen.append(state["progress"]["done"])
            if state["status"] in ("COMPLETED", "FAILED"):
                break
            await asyncio.sleep(0.05)
        assert state["status"] == "COMPLETED", state["userErrors"]
        assert seen == sorted(seen) and seen[-1] == 50
        scenarios = state["result"]["scenarios"]
        assert len(scenarios) == 50 and all(len(s["agentGoals"]) == 2 for s in scenarios)
        saved = (await gql.data(SAVE, {"input": {"scenarios": scenarios}}))["saveDraft"]
        assert saved["userErrors"] == [] and len(set(saved["scenarioIds"])) == 50
        missing = await gql.data(FOLLOW, {"id": "no-such-job"})
        assert missing["draftJob"] is None
    assert len(fake_llm_server.requests) == 10
