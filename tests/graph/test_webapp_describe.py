"""The web app's "describe a situation" page in headless Chromium, against real `parley serve`
and `parley worker` processes: a sentence becomes a draft, edited, saved, and a simulation
started from it; with the fake LLM, and (slow) with the embedded model."""

import json
import re
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Browser, Page, expect

from bench.support.fake_llm import FakeLLM, Rule, draft_world_answer
from parley.engine.models import LOCAL_MODEL
from parley.storage.models import AgentProfile, EnvironmentProfile, EpisodeLog
from tests.graph import test_webapp as webapp
from tests.graph.test_webapp import MODEL, Service, cancel, completed, snap
from tests.support.browser import AppPage
from tests.support.server import GraphQLClient

SENTENCE = "Two roommates argue about the rent; one of them is secretly moving out."
browser = webapp.browser
service = webapp.service
shots = webapp.shots
"""The web app tests' fixtures: one browser, and the API on the sample data with the fake LLM
as a named model."""
BETWEEN = """
query($a: ID!, $b: ID!) {
  relationshipBetween(agentId: $a, otherAgentId: $b) { relationship backgroundStory }
}"""


FIXES = {
    "mbti": "INTJ",
    "firstName": "Rowan",
    "lastName": "Hale",
    "scenario": "Two roommates argue about the rent.",
    "agentGoals": "Pay less rent without moving out.",
}
"""What a person types into a field the page says still fails (a small model's draft can)."""


async def fix_what_fails(page: Page) -> int:
    """Type plausible words into each field the draft page marks as failing; how many."""
    marked = await page.locator('.draft-form [aria-invalid="true"]').all()
    for control in marked:
        field = await control.evaluate("c => c.closest('[data-field]').dataset.field")
        fix = next((words for key, words in FIXES.items() if f".{key}" in field), None)
        await control.fill(fix or "Plain words for this field.")
    return len(marked)


async def draft_and_save(page: Page, model: str, wait_ms: int) -> list[str]:
    """Describe, draft, fix what the page says still fails, edit a name and save; the ids the
    page shows."""
    await page.get_by_label("The situation, in a sentence").fill(SENTENCE)
    await page.get_by_label("Model that drafts (and plays)").select_option(model)
    await page.get_by_role("button", name="Draft it").click()
    first_name = page.locator("#agents-1-firstName")
    await expect(first_name).to_be_visible(timeout=wait_ms)
    await expect(page.locator(".draft-agent")).to_have_count(2)
    await expect(page.locator(".draft-relationship")).to_have_count(1)
    if model != LOCAL_MODEL:  # the fake model's draft passes every check
        await expect(page.locator(".still-failing")).to_be_hidden()
    await fix_what_fails(page)
    await first_name.fill("Noor")
    await page.locator("#scenarios-0-codename").fill("rent_showdown")
    await page.get_by_role("button", name="Save").click()
    await expect(page.locator(".saved h2")).to_have_text("Saved", timeout=wait_ms)
    links = page.locator(".saved-ids a")
    await expect(links).to_have_count(4)
    return [text.strip() for text in await links.all_inner_texts()]


async def test_a_sentence_becomes_a_saved_world_and_a_simulation(
    browser: Browser, service: Service, shots: Path, fake_llm: FakeLLM
) -> None:
    async with AppPage.open(browser, service.url, "#/describe") as tab:
        page = tab.page
        scenario_id, first, second, relationship_id = await draft_and_save(page, MODEL, 30_000)
        await snap(tab, shots, "describe-saved")
        [request] = [r for r in fake_llm.requests if SENTENCE in r.text]
        assert request.kind == "judge"  # a schema request (the fake's name for those)

        saved = [await AgentProfile.get(first), await AgentProfile.get(second)]
        assert [a.first_name for a in saved] == ["Maya", "Noor"]
        assert saved[0].secret and saved[0].big_five and saved[0].schwartz_personal_values
        scenario = await EnvironmentProfile.get(scenario_id)
        assert scenario.codename == "rent_showdown" and len(scenario.agent_goals) == 2
        async with httpx.AsyncClient(base_url=service.url, timeout=30) as http:
            found = await GraphQLClient(http).data(BETWEEN, {"a": second, "b": first})
        assert found["relationshipBetween"]["relationship"] == "FRIEND"
        assert relationship_id

        with service.worker("describe-worker"):
            await page.get_by_role("button", name="Start a simulation").click()
            await page.wait_for_url(re.compile(r"#/episodes/"))
            episode_id = page.url.rsplit("/", 1)[-1]
            await completed(tab)
        episode = await EpisodeLog.get(episode_id)
        assert episode.environment == scenario_id and episode.agents == [first, second]
        await snap(tab, shots, "describe-episode")
        assert await tab.clean() == []


async def test_a_draft_that_breaks_the_limits_shows_the_field_and_saves_nothing(
    browser: Browser, service: Service, fake_llm: FakeLLM
) -> None:
    async with AppPage.open(browser, service.url, "#/describe") as tab:
        page = tab.page
        await page.get_by_label("The situation, in a sentence").fill(SENTENCE)
        await page.get_by_label("Model that drafts (and plays)").select_option(MODEL)
        await page.get_by_role("button", name="Draft it").click()
        age = page.locator("#agents-0-age")
        await expect(age).to_be_visible()
        await age.fill("200")
        before = await AgentProfile.find(AgentProfile.first_name == "Maya").count()
        await page.get_by_role("button", name="Save").click()
        error = page.locator('[data-field="agents.0.age"] .field-error')
        await expect(error).to_contain_text("150")
        await expect(age).to_have_attribute("aria-invalid", "true")
        assert await page.locator(".saved h2").count() == 0
        assert await AgentProfile.find(AgentProfile.first_name == "Maya").count() == before
        assert await tab.clean() == []


async def test_an_implausible_draft_shows_what_still_fails_beside_each_field_before_saving(
    browser: Browser, service: Service, fake_llm: FakeLLM
) -> None:
    """A draft like the embedded model's (both agents "James Covey", an MBTI of ".1,1", a date
    for the situation, numbers for a goal), still so after the re-ask: each failing field says
    why before anything is saved, Save stores nothing until they are fixed, then saves."""
    answer = draft_world_answer(2, 1, 2, True)
    for agent in answer["agents"]:
        agent.update(first_name="James", last_name="Covey", mbti=".1,1")
    answer["scenarios"][0].update(scenario="19/10/2017-18:00:00")
    answer["scenarios"][0]["agent_goals"][1] = "4, 6, 11, 13, 15"
    fake_llm.add_rule(Rule(contains=[SENTENCE], content=json.dumps(answer), times=2))
    async with AppPage.open(browser, service.url, "#/describe") as tab:
        page = tab.page
        await page.get_by_label("The situation, in a sentence").fill(SENTENCE)
        await page.get_by_label("Model that drafts (and plays)").select_option(MODEL)
        await page.get_by_role("button", name="Draft it").click()
        failing = {
            "scenarios.0.scenario": "describe the situation in a sentence or more",
            "scenarios.0.agentGoals.1": "say what this agent wants in words",
            "agents.0.mbti": "one of the sixteen MBTI types",
            "agents.1.mbti": "one of the sixteen MBTI types",
            "agents.1.firstName": "another agent of this draft is named 'James Covey' too",
        }
        for field, words in failing.items():
            beside = page.locator(f'[data-field="{field}"] .field-error')
            await expect(beside).to_contain_text(words)
            control = page.locator(f'[data-field="{field}"] [name]')
            await expect(control).to_have_attribute("aria-invalid", "true")
        summary = page.locator(".still-failing")
        await expect(summary).to_have_text(
            "5 fields fail the checks, marked above: fix them before saving."
        )
        assert await page.locator(".field-error").count() == 5

        before = await AgentProfile.find(AgentProfile.first_name == "James").count()
        await page.get_by_role("button", name="Save").click()
        await expect(page.locator('[data-field="agents.1.firstName"] .field-error')).to_be_visible()
        await expect(summary).to_be_visible()
        assert await page.locator(".saved h2").count() == 0
        assert await AgentProfile.find(AgentProfile.first_name == "James").count() == before

        await page.locator("#scenarios-0-scenario").fill("Two flatmates argue about the rent.")
        await page.locator("#scenarios-0-agentGoals-1").fill("Keep the move a secret for now.")
        await page.locator("#agents-0-mbti").fill("INTJ")
        await page.locator("#agents-1-mbti").fill("enfp")
        await page.locator("#agents-1-firstName").fill("Noor")
        await page.get_by_role("button", name="Save").click()
        await expect(page.locator(".saved h2")).to_have_text("Saved")
        await expect(summary).to_be_hidden()
        assert await page.locator(".field-error").count() == 0
        assert await tab.clean() == []


@pytest.mark.slow
@pytest.mark.timeout(1800)
async def test_the_embedded_model_drafts_a_world_that_saves_and_starts(
    browser: Browser, service: Service, shots: Path
) -> None:
    async with AppPage.open(browser, service.url, "#/describe") as tab:
        page = tab.page
        scenario_id, first, second, _ = await draft_and_save(page, LOCAL_MODEL, 600_000)
        await snap(tab, shots, "describe-local-saved")
        scenario = await EnvironmentProfile.get(scenario_id)
        assert len(scenario.agent_goals) == 2 and scenario.scenario.strip()
        assert (await AgentProfile.get(second)).first_name == "Noor"
        with service.worker("describe-local-worker"):
            await page.get_by_role("button", name="Start a simulation").click()
            await page.wait_for_url(re.compile(r"#/episodes/"))
            episode_id = page.url.rsplit("/", 1)[-1]
            running = re.compile("RUNNING|EVALUATING|COMPLETED")
            await expect(page.locator("main h1")).to_have_attribute(
                "data-status", running, timeout=600_000
            )
            await cancel(service.url, episode_id)
        episode = await EpisodeLog.get(episode_id)
        assert episode.agents == [first, second] and episode.models == [LOCAL_MODEL] * 3
        assert await tab.clean() == []
