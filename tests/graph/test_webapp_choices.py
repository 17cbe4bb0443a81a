"""Choosing an agent or a scenario among many more than a page of them, in a real headless
Chromium against a real `parley serve`: the episodes filters, the start form and the
relationship form ask the server for the names holding what is typed, keep the current choice,
and work from the keyboard. The agent looked for sits past the first 100 agents in either
order, where no list of the first 100 could offer it. Screenshots at 1280 and 390 px wide go
with the web app's (PARLEY_SCREENSHOTS, or the directory printed)."""

import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, Page, expect
from ulid import ULID

from bench.support.simulation import post, start, start_input
from parley.graph.webapp import APP
from parley.resolvers.name_search import MAX_LENGTH
from parley.storage.models import AgentProfile, EnvironmentProfile, Record, RelationshipProfile
from tests.graph import test_webapp
from tests.graph.test_webapp import MODEL, Service, cancel, snap, unique
from tests.graph.test_webapp_pages import PAGE_FAULTS
from tests.support.browser import PHONE, AppPage, choose

browser = test_webapp.browser
service = test_webapp.service
shots = test_webapp.shots

CROWD = 110
"""Agents stored on each side of the one looked for, in the order of their ids."""
SHOWN = 50
"""Matches a choice box shows at once (choice.js MATCHES)."""
EPISODE = "query($id: ID!) { episode(id: $id) { agentIds scenario { id } } }"


@dataclass(frozen=True)
class World:
    mark: str
    agent: str
    """The agent looked for: past the first 100 in either order."""
    name: str
    crowd: list[str]
    scenario: str
    codename: str
    accented: str
    """An agent whose name holds letters outside ASCII."""

    def crowd_name(self, i: int) -> str:
        return f"Crowd{i:03d} Filler{self.mark}"


@pytest.fixture(scope="module")
async def world(service: Service, redis_client: Any) -> AsyncIterator[World]:
    """Ids sharing one fresh ULID's head, numbered: newer than every stored agent and in the
    order made. Removed afterwards, so no other test's first page changes."""
    mark = uuid.uuid4().hex[:6]
    head = str(ULID())[:-4]
    agents: list[Record] = []
    for i in range(2 * CROWD + 2):
        pk = f"{head}{i:04d}"
        if i == CROWD:
            agent = AgentProfile(
                pk=pk, first_name="Quillon", last_name=f"Oldfield-{mark}", occupation="Cartographer"
            )
        elif i == 2 * CROWD + 1:
            agent = AgentProfile(pk=pk, first_name="Zoë", last_name=f"Ünal{mark}")
        else:
            agent = AgentProfile(pk=pk, first_name=f"Crowd{i:03d}", last_name=f"Filler{mark}")
        agents.append(agent)
    codename = f"lighthouse_{mark}_watch"
    scenario = EnvironmentProfile(
        codename=codename,
        scenario="Two keepers share the last shift of a lighthouse.",
        agent_goals=["Keep the lamp lit", "Leave before the storm"],
    )
    for record in [*agents, scenario]:
        await record.save()
    yield World(
        mark=mark,
        agent=str(agents[CROWD].pk),
        name=f"Quillon Oldfield-{mark}",
        crowd=[str(a.pk) for a in agents],
        scenario=str(scenario.pk),
        codename=codename,
        accented=f"Zoë Ünal{mark}",
    )
    for record in [*agents, scenario]:
        await redis_client.delete(type(record).make_primary_key(str(record.pk)))


def matches(page: Page, box_id: str) -> Any:
    return page.locator(f"#{box_id}-list")


async def no_faults(tab: AppPage) -> None:
    """Nothing past the right edge, no "null" shown, nothing gone wrong on the page."""
    faults = await tab.page.evaluate(PAGE_FAULTS)
    assert faults["overflow"] <= 0 and faults["past"] == [], faults
    assert faults["words"] == [], faults
    assert await tab.clean() == []


async def test_an_agent_past_the_first_100_is_found_by_typing_in_the_episodes_filter(
    browser: Browser, service: Service, shots: Path, world: World
) -> None:
    tag = unique("choices")
    pair = start_input(world.scenario, [world.agent, world.crowd[0]], MODEL, tag=tag)
    ids = [
        await start(service.url, pair),
        await start(service.url, start_input(world.scenario, world.crowd[1:3], MODEL, tag=tag)),
    ]
    try:
        async with AppPage.open(browser, service.url, f"#/?tag={tag}") as tab:
            page = tab.page
            rows = page.locator("table.episodes tbody tr")
            await expect(rows).to_have_count(2)
            box = page.get_by_label("Agent", exact=True)
            listed = matches(page, "filter-agentId")

            await box.focus()
            await page.keyboard.type("quill")
            found = listed.get_by_role("option", name=world.name)
            await expect(found).to_have_attribute("aria-selected", "true")  # Enter picks it
            await expect(box).to_have_attribute("aria-expanded", "true")
            await expect(listed.get_by_role("option")).to_have_count(2)
            option_id = await found.get_attribute("id")
            await expect(box).to_have_attribute("aria-activedescendant", str(option_id))
            await snap(tab, shots, "choice-filter")
            await page.keyboard.press("Enter")
            await expect(page).to_have_url(re.compile(f"agentId={world.agent}"))
            await expect(rows).to_have_count(1)
            assert await rows.first.get_attribute("data-episode") == ids[0]
            box = page.get_by_label("Agent", exact=True)  # the page drawn again, the choice kept
            await expect(box).to_have_value(world.name)

            await box.focus()
            await page.keyboard.press("ArrowDown")  # opened on the choice: the newest agents
            options = listed.get_by_role("option")
            await expect(options).to_have_count(1 + SHOWN)  # "any" first
            await expect(listed.get_by_role("option", name=world.name)).to_have_count(0)
            await expect(listed.locator(".choice-more")).to_contain_text("type more of a name")
            await page.keyboard.press("Escape")
            await expect(listed).to_be_hidden()

            await box.blur()
            await box.focus()
            await page.keyboard.type("crowd00")  # the whole name is selected: typing replaces it
            await expect(options).to_have_count(1 + 10)  # any, and Crowd009 down to Crowd000
            await expect(options.nth(1)).to_have_attribute("aria-selected", "true")
            await page.keyboard.press("ArrowUp")
            await expect(options.first).to_have_attribute("aria-selected", "true")  # any
            await page.keyboard.press("ArrowUp")  # round to the last
            await expect(options.last).to_have_attribute("aria-selected", "true")
            await expect(options.first).to_have_attribute("aria-selected", "false")
            await page.keyboard.press("Escape")  # puts the choice back
            await expect(box).to_have_value(world.name)
            await expect(listed).to_be_hidden()
            assert f"agentId={world.agent}" in page.url

            await choose(page, "Scenario", world.codename)  # with the mouse
            await expect(page).to_have_url(re.compile(f"scenarioId={world.scenario}"))
            await expect(rows).to_have_count(1)
            await expect(page.get_by_label("Scenario", exact=True)).to_have_value(world.codename)
            box = page.get_by_label("Agent", exact=True)
            await box.fill("")
            await box.press("Tab")  # leaving it empty: any agent
            await expect(page).not_to_have_url(re.compile("agentId="))
            assert f"scenarioId={world.scenario}" in page.url  # still chosen
            await expect(rows).to_have_count(2)
            await no_faults(tab)
    finally:
        await cancel(service.url, *ids)


async def test_the_start_form_finds_agents_and_a_scenario_past_the_first_100_and_keeps_the_picked(
    browser: Browser, service: Service, shots: Path, world: World
) -> None:
    tag = unique("choices-start")
    started: list[str] = []
    try:
        async with AppPage.open(browser, service.url, "#/start") as tab:
            page = tab.page
            agents = page.locator("#agentIds-options")
            search = page.get_by_label("Search agents")
            await search.fill(f"oldfield-{world.mark}")
            found = page.get_by_label(f"{world.name}, Cartographer")
            await expect(found).to_be_visible()
            await expect(agents.get_by_role("checkbox")).to_have_count(1)
            await found.focus()
            await page.keyboard.press("Space")  # ticked from the keyboard
            await search.fill("")  # the first 100 by id, which it is not among: kept, first
            await expect(agents.get_by_role("checkbox")).to_have_count(1 + 100)
            await expect(agents.get_by_role("checkbox").first).to_have_accessible_name(
                f"{world.name}, Cartographer"
            )
            await expect(found).to_be_checked()
            await expect(page.locator("#agentIds-found")).to_contain_text("type more of a name")
            other = world.crowd_name(CROWD + 5)
            await search.fill(other.lower())  # both words, any case
            await page.get_by_label(other).check()
            await expect(found).to_be_checked()  # still listed, first, while another search shows
            await expect(agents.get_by_role("checkbox")).to_have_count(2)
            await expect(page.locator(".seats li")).to_have_text([world.name, other])
            await search.fill(world.accented.upper())  # letters outside ASCII, in capitals
            await expect(page.get_by_label(world.accented)).to_be_visible()

            await page.get_by_label("Search scenario").fill(f"{world.mark} WATCH")
            scenarios = page.locator("#scenarioId-options").get_by_role("radio")
            await expect(scenarios).to_have_count(1)
            await expect(page.locator("#scenarioId-found")).to_have_text("1 scenario found.")
            lighthouse = page.get_by_label(world.codename, exact=False)
            await lighthouse.check()
            await page.get_by_label("Search scenario").fill("used_van")  # another, then back
            await expect(scenarios).to_have_count(2)  # the one ticked is kept, first
            await page.get_by_label("used_van_sale", exact=False).check()
            await page.get_by_label("Search scenario").fill(f"{world.mark}_watch")
            await expect(scenarios).to_have_count(2)
            await expect(lighthouse).not_to_be_checked()  # one scenario ticked, never two
            await expect(page.locator("#scenarioId-options input:checked")).to_have_count(1)
            await lighthouse.check()
            await page.get_by_label("Agents' model").select_option(MODEL)
            await page.get_by_label("Judge's model").select_option(MODEL)
            await page.get_by_label("Tag", exact=True).fill(tag)
            await snap(tab, shots, "choice-start-form")
            await no_faults(tab)
            await page.get_by_role("button", name="Start simulation").click()
            await page.wait_for_url(re.compile(r"#/episodes/"))
            started.append(page.url.rsplit("/", 1)[-1])
        stored = (await post(service.url, EPISODE, {"id": started[0]}))["episode"]
        assert stored["agentIds"] == [world.agent, world.crowd[CROWD + 5]]
        assert stored["scenario"]["id"] == world.scenario
    finally:
        await cancel(service.url, *started)


async def test_the_relationship_form_keeps_the_agent_its_link_names_and_finds_the_other(
    browser: Browser, service: Service, world: World, redis_client: Any
) -> None:
    other = world.crowd_name(7)
    route = f"#/relationships/new?agentId={world.agent}"
    async with AppPage.open(browser, service.url, route) as tab:
        page = tab.page
        await expect(page.get_by_label("First agent")).to_have_value(world.name)
        box = page.get_by_label("Second agent")
        await box.fill("crowd00")
        options = matches(page, "field-otherAgentId").get_by_role("option")
        await expect(options).to_have_count(10)  # newest first: Crowd009 down to Crowd000
        await expect(options.first).to_have_attribute("aria-selected", "true")
        await box.press("ArrowDown")
        await box.press("ArrowDown")
        await expect(options.nth(2)).to_have_text(other)
        await expect(options.nth(2)).to_have_attribute("aria-selected", "true")
        await box.press("Enter")
        await expect(box).to_have_value(other)
        await page.get_by_role("button", name="Create").click()
        await expect(page.locator("main h1")).to_have_text(f"{world.name} and {other}")
        relationship = page.url.rsplit("/", 1)[-1]
        assert await tab.clean() == []
    await redis_client.delete(RelationshipProfile.make_primary_key(relationship))


@pytest.mark.parametrize(
    "typed", ['"*@-', "a|b", "{}", "@first_name:{*}", "\\", "ann -smith", "日本", "x" * 150]
)
async def test_whatever_is_typed_is_searched_as_text(
    browser: Browser, service: Service, world: World, typed: str
) -> None:
    """RediSearch's syntax typed into the box is searched for as itself: an answer, never an
    error; a box holds no more than the server searches."""
    async with AppPage.open(browser, service.url, "#/") as tab:
        page = tab.page
        box = page.get_by_label("Agent", exact=True)
        await box.fill(typed)
        status = page.locator("#filter-agentId-status")
        await expect(status).to_have_text(re.compile(r"No agent matches\.|agents? found|type more"))
        assert len(await box.input_value()) == min(len(typed), MAX_LENGTH)
        await box.fill(f"Oldfield-{world.mark}")
        await expect(
            matches(page, "filter-agentId").get_by_role("option", name=world.name)
        ).to_be_visible()
        assert await tab.clean() == [] and tab.failed == []


async def test_at_a_phones_width_the_choices_fit_the_screen(
    browser: Browser, service: Service, shots: Path, world: World
) -> None:
    async with AppPage.open(browser, service.url, "#/", PHONE) as tab:
        page = tab.page
        await page.get_by_label("Agent", exact=True).fill("filler" + world.mark)
        listed = matches(page, "filter-agentId")
        await expect(listed.get_by_role("option")).to_have_count(1 + SHOWN)
        await snap(tab, shots, "choice-filter-phone")
        await no_faults(tab)
        await tab.go("#/start")
        await page.get_by_label("Search agents").fill(world.name)
        await expect(page.get_by_label(f"{world.name}, Cartographer")).to_be_visible()
        await snap(tab, shots, "choice-start-form-phone")
        await no_faults(tab)


def test_the_app_searches_no_longer_text_than_the_server() -> None:
    declared = re.search(r"export const LONGEST = (\d+);", (APP / "choice.js").read_text())
    assert declared is not None and int(declared.group(1)) == MAX_LENGTH
