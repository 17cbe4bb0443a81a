"""An experiment's Cost section in a real headless Chromium against real `parley serve` and
`parley worker` processes: before anything is recorded it offers a calibration, then shows the
estimate with its ranges, and a budgeted run shows its budget, what it spent and, once stopped,
the slots it held. Drawn at a desktop's and a phone's width with nothing past the right edge
(PARLEY_SCREENSHOTS=<dir> keeps the screenshots)."""

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, expect

from bench.support.fake_llm import FakeLLM
from bench.support.simulation import post
from tests.graph import test_webapp
from tests.graph.test_webapp import Service, sample_service, snap, unique
from tests.graph.test_webapp_forks import fits
from tests.graph.test_webapp_pages import START_EXPERIMENT, WORLD
from tests.support.browser import DESKTOP, PHONE, AppPage

browser = test_webapp.browser
shots = test_webapp.shots
PRICED = "fake-priced"
CREATE = """
mutation($input: CreateExperimentInput!) {
  createExperiment(input: $input) { experiment { id slotCount } userErrors { field message } }
}"""
STATE = """
query($id: ID!) {
  experiment(id: $id) { progress { finished unfinished pending held stopped completed } }
  usageTotals(filter: {experimentId: $id}) { cost }
}"""


@pytest.fixture(scope="module")
async def service(
    redis_url: str,
    redis_client: Any,
    fake_llm_server: FakeLLM,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[Service]:
    """`sample_service` with the fake LLM as a priced model."""
    entry = {"name": PRICED, "base_url": fake_llm_server.base_url, "model": "fake"}
    prices = {"prompt_price": 100.0, "completion_price": 400.0}
    logs = tmp_path_factory.mktemp("webapp-costs")
    async with sample_service(redis_url, redis_client, logs, [{**entry, **prices}]) as running:
        yield running


async def state(url: str, pk: str) -> dict[str, Any]:
    return await post(url, STATE, {"id": pk})


async def until(url: str, pk: str, done: Any) -> dict[str, Any]:
    for _ in range(1200):
        found = await state(url, pk)
        if done(found["experiment"]["progress"]):
            return found
        await asyncio.sleep(0.1)
    raise AssertionError(f"experiment {pk} never got there: {found}")


async def test_the_cost_section_calibrates_estimates_and_shows_a_budget_stop(
    browser: Browser, service: Service, shots: Path, fake_llm_server: FakeLLM
) -> None:
    fake_llm_server.reset()
    tag = unique("costs")
    found = await post(service.url, WORLD, {})
    agents = [found["agents"]["nodes"][0]["id"], found["others"]["nodes"][0]["id"]]
    design = {
        "scenarios": {"ids": [found["scenarios"]["nodes"][0]["id"]]},
        "agents": {"pairs": [agents]},
        "models": {"compare": [PRICED], "partner": PRICED},
        "repeats": 4,
        "maxTurns": 2,
        "judgeModel": PRICED,
    }
    first = await post(service.url, CREATE, {"input": {"name": tag, "tag": tag, "design": design}})
    pk = first["createExperiment"]["experiment"]["id"]
    async with AppPage.open(browser, service.url, f"#/experiments/{pk}") as tab:
        page = tab.page
        box = page.locator(".estimate-box")
        await expect(box).to_contain_text("Nothing comparable is recorded for its 8 episodes")
        await expect(box).to_contain_text(f"Not covered: {PRICED} / {PRICED} / {PRICED}.")
        await page.get_by_role("button", name="Calibrate").click()
        await expect(box).to_contain_text("2 calibration episodes queued.")
        with service.worker("costs-calibration"):
            await until(service.url, pk, lambda p: p["unfinished"] == p["pending"] == 6)
        await page.reload()
        await expect(box).to_contain_text("Estimate for its 8 episodes, from 2 comparable")
        await expect(box.locator(".estimate-figures li")).to_have_count(3)
        await expect(box.locator(".estimate-figures li").nth(2)).to_contain_text("Cost $")
        await expect(box.get_by_role("button", name="Calibrate")).to_have_count(0)
        for name, viewport in (("desktop", DESKTOP), ("phone", PHONE)):
            await page.set_viewport_size(viewport)  # type: ignore[arg-type]
            await fits(tab)
            await snap(tab, shots, f"experiment-estimate-{name}")
        await page.set_viewport_size(DESKTOP)  # type: ignore[arg-type]

    # A budget of two and a half episodes: it stops, and the page says why and what it held.
    spent = (await state(service.url, pk))["usageTotals"]["cost"]
    cap = round(1.25 * spent, 6)
    capped = {"name": f"{tag}-capped", "tag": f"{tag}-capped", "design": {**design, "budget": cap}}
    made = await post(service.url, CREATE, {"input": capped})
    budgeted = made["createExperiment"]["experiment"]["id"]
    await post(service.url, START_EXPERIMENT, {"id": budgeted})
    with service.worker("costs-budget"):
        done = await until(service.url, budgeted, lambda p: p["finished"])
    progress = done["experiment"]["progress"]
    assert progress["stopped"] == "BUDGET" and progress["held"] == 8 - progress["completed"]
    async with AppPage.open(browser, service.url, f"#/experiments/{budgeted}") as tab:
        page = tab.page
        await expect(page.locator(".progress-summary")).to_contain_text(
            f"{progress['held']} never queued: stopped, as its budget is reached"
        )
        held = page.locator('.counts li[data-status="HELD"] .count')
        await expect(held).to_have_text(str(progress["held"]))
        await expect(page.locator(".estimate-box .budget")).to_contain_text(f"Budget ${cap:.4f}")
        episodes = page.locator("table.slots tbody tr td:last-child")
        await expect(episodes.filter(has_text="held")).to_have_count(progress["held"])
        for name, viewport in (("desktop", DESKTOP), ("phone", PHONE)):
            await page.set_viewport_size(viewport)  # type: ignore[arg-type]
            await fits(tab)
            await snap(tab, shots, f"experiment-budget-{name}")
