"""An experiment with an intervention arm in a real headless Chromium against real `parley serve`
and `parley worker` processes: the experiment page's Arms section shows the arm's change, turn,
pairs and its paired differences from the control as the API gives them, its model table is the
control arm's, and the arm links to one control/arm pair compared turn by turn. Drawn at a
desktop's and a phone's width with nothing past the right edge (PARLEY_SCREENSHOTS=<dir> keeps
the screenshots)."""

import asyncio
import json
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, expect

from bench.support.fake_llm import FakeLLM, Rule
from bench.support.simulation import post
from tests.graph import test_webapp
from tests.graph.test_webapp import MODEL, Service, snap, unique
from tests.graph.test_webapp_forks import fits
from tests.graph.test_webapp_pages import PROGRESS, START_EXPERIMENT, WORLD
from tests.support.browser import DESKTOP, PHONE, AppPage

browser = test_webapp.browser
service = test_webapp.service
shots = test_webapp.shots

CREATE = """
mutation($input: CreateExperimentInput!) {
  createExperiment(input: $input) { experiment { id slotCount } userErrors { field message } }
}"""
ARMS = """
query($id: ID!) {
  experiment(id: $id) {
    arms { name pairs firstPair { control arm }
           differences { dimension meanDifference confidenceInterval { low high } } }
  }
  episodeResults(filter: {experimentId: $id, arm: "control"}) { groups { model scored } }
}"""
STORM = "A storm is coming."


async def until_all_completed(url: str, pk: str) -> None:
    """Until the controls and the arm's forks of them have all completed."""
    for _ in range(1200):
        progress = (await post(url, PROGRESS, {"id": pk}))["experiment"]["progress"]
        if progress["finished"] and progress["completed"] == progress["total"]:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"experiment {pk} never finished: {progress}")


async def test_the_arms_section_compares_an_arm_with_the_control(
    browser: Browser, service: Service, shots: Path, fake_llm: FakeLLM
) -> None:
    tag = unique("arms")
    found = await post(service.url, WORLD, {})
    agents = [found["agents"]["nodes"][0]["id"], found["others"]["nodes"][0]["id"]]
    design: dict[str, Any] = {
        "scenarios": {"ids": [found["scenarios"]["nodes"][0]["id"]]},
        "agents": {"pairs": [agents]},
        "models": {"seats": [[MODEL, MODEL]]},
        "repeats": 2,
        "maxTurns": 4,
        "judgeModel": MODEL,
        "arms": [{"name": "storm", "atTurn": 2, "inject": {"text": STORM}}],
    }
    created = await post(
        service.url, CREATE, {"input": {"name": tag, "tag": tag, "design": design}}
    )
    payload = created["createExperiment"]
    assert payload["userErrors"] == [], payload
    pk = payload["experiment"]["id"]
    assert payload["experiment"]["slotCount"] == 4
    # Agents who heard the storm speak of shelter; episodes where they did are judged 9.
    shelter = json.dumps({"action_type": "speak", "argument": "Let us find shelter.", "to": []})
    fake_llm.add_rule(
        Rule(kind="action", contains=[STORM], content=shelter, times=None),
        Rule(kind="judge", contains=["find shelter"], score=9, times=None),
    )
    await post(service.url, START_EXPERIMENT, {"id": pk})
    with service.worker("arms-worker"):
        await until_all_completed(service.url, pk)
    served = await post(service.url, ARMS, {"id": pk})
    (arm,) = served["experiment"]["arms"]
    assert arm["pairs"] == 2
    overall = arm["differences"][0]
    assert overall["dimension"] == "overall"
    async with AppPage.open(browser, service.url, f"#/experiments/{pk}") as tab:
        page = tab.page
        section = page.locator("section.arms-box")
        await expect(section.locator("h2")).to_have_text("Arms")
        table = section.locator("table.arms")
        await expect(table.locator('thead th[data-arm="storm"]')).to_have_text("storm")
        await expect(table.locator('tr[data-field="change"] td')).to_have_text(f"message “{STORM}”")
        await expect(table.locator('tr[data-field="atTurn"] td')).to_have_text("2")
        await expect(table.locator('tr[data-field="pairs"] td')).to_have_text("2")
        await expect(table.locator('tr[data-field="apart"] td')).to_have_text("none")
        first_row = table.locator("tbody tr[data-dimension]").first
        await expect(first_row).to_have_attribute("data-dimension", "overall")
        cell = first_row.locator("td.difference")
        assert float(await cell.get_attribute("data-mean") or "nan") == overall["meanDifference"]
        assert overall["meanDifference"] > 0  # the storm's episodes were judged higher
        await expect(table.locator('tr[data-dimension="overall_score"]')).to_have_count(0)
        # The model table is the control arm's: the 2 control episodes, 2 seats of MODEL each.
        [control] = served["episodeResults"]["groups"]
        assert control == {"model": MODEL, "scored": 4}
        await expect(page.locator(".arms-note")).to_contain_text("control arm")
        await expect(
            page.locator('table.results:not(.arms) tr[data-count="scored"] td')
        ).to_have_text("4")
        slots = page.locator("table.slots tbody tr")
        await expect(slots).to_have_count(4)
        await expect(slots.nth(2)).to_contain_text("storm (of #0)")
        for name, viewport in (("desktop", DESKTOP), ("phone", PHONE)):
            await page.set_viewport_size(viewport)  # type: ignore[arg-type]
            await expect(table).to_be_visible()
            await fits(tab)
            await snap(tab, shots, f"experiment-arms-{name}")
        await page.set_viewport_size(DESKTOP)  # type: ignore[arg-type]
        link = table.locator("a.compare-pair")
        pair = arm["firstPair"]
        await expect(link).to_have_attribute(
            "href", f"#/compare?a={pair['control']}&b={pair['arm']}"
        )
        await link.click()
        await expect(page.locator("main h1")).to_have_text("Compare branches")
        await expect(page.locator("section.shared-turns")).to_have_attribute("data-turns", "2")
        await fits(tab)
