"""An experiment's estimate, calibration, budget and precision over real HTTP and websockets,
with a worker in the server and priced models at the fake provider."""

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.support.fake_llm import FakeLLM
from bench.support.polling import eventually
from tests.support.experiments import Worlds
from tests.support.server import GraphQLClient, init, receive, send, serve, socket

pytestmark = pytest.mark.usefixtures("redis_client")
PRICES = {"prompt_price": 100.0, "completion_price": 400.0}
CREATE = """
mutation($input: CreateExperimentInput!) {
  createExperiment(input: $input) {
    experiment { id slotCount budget }
    userErrors { field message code }
  }
}"""
ESTIMATE = """
query($id: ID!) {
  experiment(id: $id) {
    estimate { episodes covered comparable uncovered
               calls { expected low high } tokens { expected } cost { expected low high } }
    progress { pending unfinished held stopped finished completed }
  }
  usageTotals(filter: {experimentId: $id}) { cost }
}"""
RUN = "mutation($id: ID!) { %s(input: {id: $id}) { changed userErrors { field message code } } }"
WATCH = """
subscription($id: ID!) {
  experimentProgress(id: $id) { total pending completed unfinished finished held stopped }
}"""


@pytest.fixture
async def world() -> AsyncIterator[Worlds]:
    worlds = Worlds()
    yield worlds
    await worlds.drop()


@pytest.fixture
def models(tmp_path: Path, fake_llm: FakeLLM) -> Path:
    path = tmp_path / "models.json"
    entries: list[dict[str, Any]] = [
        {"name": "agent", "model": "agent", **PRICES},
        {"name": "judge", "model": "judge", **PRICES},
        {"name": "unpriced", "model": "unpriced"},
    ]
    path.write_text(json.dumps({"models": [{**e, "base_url": fake_llm.base_url} for e in entries]}))
    return path


def plan(scenarios: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "scenarios": {"ids": scenarios},
        "agents": {"sample": "UNIFORM", "seed": 5, "pairsPerScenario": 2},
        "models": {"compare": ["agent"], "partner": "agent"},
        "maxTurns": 2,
        "judgeModel": "judge",
        **extra,
    }


async def create(gql: GraphQLClient, name: str, design: dict[str, Any]) -> dict[str, Any]:
    variables = {"input": {"name": name, "tag": name, "design": design}}
    found: dict[str, Any] = (await gql.data(CREATE, variables))["createExperiment"]
    return found


async def run(gql: GraphQLClient, mutation: str, pk: str) -> dict[str, Any]:
    found: dict[str, Any] = (await gql.data(RUN % mutation, {"id": pk}))[mutation]
    return found


async def state(gql: GraphQLClient, pk: str) -> dict[str, Any]:
    return await gql.data(ESTIMATE, {"id": pk})


async def refused(gql: GraphQLClient, design: dict[str, Any]) -> list[tuple[str, str]]:
    errors = (await create(gql, "refused", design))["userErrors"]
    return [(".".join(e["field"]), e["code"]) for e in errors]


async def test_paced_designs_are_checked_field_by_field(
    world: Worlds, redis_url: str, tmp_path: Path, models: Path
) -> None:
    scenarios, _ = await world("costs-refused")
    async with (
        serve(redis_url, tmp_path, models_file=models) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as http,
    ):
        gql = GraphQLClient(http)
        unpriced = plan(scenarios, budget=1.0, models={"compare": ["unpriced"], "partner": "agent"})
        assert await refused(gql, unpriced) == [("input.design.budget", "INVALID")]
        assert await refused(gql, plan(scenarios, budget=0)) == [("input.design.budget", "INVALID")]
        assert await refused(gql, plan(scenarios, budget=-3.5))
        one_round = plan(scenarios, precision={"halfWidth": 0.5})
        assert await refused(gql, one_round) == [("input.design", "INVALID")]
        wrong = plan(scenarios, repeats=2, precision={"halfWidth": 0, "minScores": 1})
        assert {f for f, _ in await refused(gql, wrong)} == {
            "input.design.precision.halfWidth",
            "input.design.precision.minScores",
        }
        arms = [{"name": "later", "atTurn": 1, "inject": {"text": "A bell rings."}}]
        assert await refused(gql, plan(scenarios, budget=1.0, arms=arms)) == [
            ("input.design", "INVALID")
        ]
        accepted = await create(gql, "accepted", plan(scenarios, budget=2.5))
        assert accepted["userErrors"] == [] and accepted["experiment"]["budget"] == 2.5


async def test_calibrate_estimate_then_a_budget_that_stops_the_stream(
    world: Worlds, redis_url: str, tmp_path: Path, models: Path
) -> None:
    scenarios, _ = await world("costs-run")
    async with (
        serve(redis_url, tmp_path, models_file=models, worker=True) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as http,
    ):
        gql = GraphQLClient(http)
        first = (await create(gql, "costs-first", plan(scenarios)))["experiment"]["id"]
        before = (await state(gql, first))["experiment"]["estimate"]
        assert (before["covered"], before["episodes"], before["cost"]) == (0, 8, None)
        assert before["uncovered"] == [["judge", "agent", "agent"]]
        assert (await run(gql, "calibrateExperiment", first))["changed"] == 2
        found = await eventually(
            lambda: state(gql, first),
            lambda now: now["experiment"]["progress"]["unfinished"] == 6,  # none in flight
        )
        estimate = found["experiment"]["estimate"]
        assert (estimate["covered"], estimate["comparable"]) == (8, 2)
        per_episode = found["usageTotals"]["cost"] / 2
        assert estimate["cost"]["expected"] == pytest.approx(8 * per_episode)

        cap = round(3.5 * per_episode, 6)
        second = (await create(gql, "costs-capped", plan(scenarios, budget=cap)))["experiment"]
        async with socket(url) as ws:
            await init(ws)
            payload = {"query": WATCH, "variables": {"id": second["id"]}}
            await send(ws, {"type": "subscribe", "id": "1", "payload": payload})
            await receive(ws)
            assert 0 < (await run(gql, "startExperiment", second["id"]))["changed"] <= 3
            seen = []
            while (message := await asyncio.wait_for(receive(ws), 60))["type"] != "complete":
                seen.append(message["payload"]["data"]["experimentProgress"])
        final = seen[-1]
        assert final["finished"] and final["stopped"] == "BUDGET"
        assert final["held"] == 8 - final["completed"] and 2 <= final["completed"] <= 3
        spent = (await state(gql, second["id"]))["usageTotals"]["cost"]
        assert spent <= cap
