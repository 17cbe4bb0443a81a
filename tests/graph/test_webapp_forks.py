"""An episode's forks in a real headless Chromium against real `parley serve` and `parley worker`
processes: the episode page forks a finished episode with another model and a message, shows the
family as a tree (the root, each fork with its turn and change, this episode marked), and
compares two branches turn by turn: the shared turns once, then each later turn side by side.
Both pages are drawn at a desktop's and a phone's width with nothing past the right edge; they
are saved as screenshots (PARLEY_SCREENSHOTS=<dir> keeps them)."""

from pathlib import Path
from typing import Any

from playwright.async_api import Browser, expect

from bench.support.fake_llm import FakeLLM
from bench.support.simulation import post, start, start_input, wait_for
from tests.graph import test_webapp
from tests.graph.test_webapp import MODEL, OTHER_MODEL, Service, snap, unique
from tests.graph.test_webapp_pages import PAGE_FAULTS, WORLD
from tests.support.browser import DESKTOP, PHONE, AppPage

browser = test_webapp.browser
service = test_webapp.service
shots = test_webapp.shots

FORK = """
mutation($input: ForkEpisodeInput!) {
  forkEpisode(input: $input) { episode { id } userErrors { message } }
}"""
TURNS = "query($id: ID!) { episode(id: $id) { turns { turn speaker argument } } }"


async def fits(tab: AppPage) -> None:
    """Nothing runs past the right edge, and nothing reads null or undefined."""
    found: dict[str, Any] = await tab.page.evaluate(PAGE_FAULTS)
    assert {k: v for k, v in found.items() if v} == {}
    assert await tab.clean() == []


async def test_a_fork_made_on_the_page_shows_its_family_and_compares_with_its_parent(
    browser: Browser, service: Service, fake_llm_server: FakeLLM, shots: Path
) -> None:
    fake_llm_server.reset()
    tag = unique("forks")
    found = await post(service.url, WORLD, {})
    agents = [found["agents"]["nodes"][0]["id"], found["others"]["nodes"][0]["id"]]
    scenario = found["scenarios"]["nodes"][0]["id"]
    with service.worker("forks-worker"):
        root = await start(service.url, start_input(scenario, agents, MODEL, maxTurns=4, tag=tag))
        await wait_for(service.url, root, lambda e: e["status"] == "COMPLETED")
        async with AppPage.open(browser, service.url, f"#/episodes/{root}") as tab:
            page = tab.page
            family = page.locator("section.family")
            await expect(family.get_by_text("No forks yet.")).to_be_visible()
            form = family.locator("form.fork-form")
            await form.get_by_label("Keep its first turns").fill("2")
            await form.get_by_label("Model for Marisol Quintero (seat 2)").fill(OTHER_MODEL)
            await form.get_by_label("Environment message at that turn").fill("A storm is coming.")
            await form.get_by_role("button", name="Fork").click()
            await expect(page).not_to_have_url(f"{service.url}/#/episodes/{root}")
            fork = page.url.rsplit("/", 1)[-1]
            await wait_for(service.url, fork, lambda e: e["status"] == "COMPLETED")
            sibling_input = {"episodeId": root, "atTurn": 1}
            sibling = (await post(service.url, FORK, {"input": sibling_input}))["forkEpisode"]
            await wait_for(
                service.url, sibling["episode"]["id"], lambda e: e["status"] == "COMPLETED"
            )
            await page.reload()
            await expect(page.locator("main .summary .parent-link")).to_have_attribute(
                "href", f"#/episodes/{root}"
            )
            tree = page.locator("section.family .family-tree")
            await expect(tree.locator("li")).to_have_count(3)
            here = tree.locator(f'li[data-episode="{fork}"]')
            await expect(here.locator('[aria-current="page"]')).to_have_text(
                "Fork at turn 2 (this episode)"
            )
            await expect(here.locator(".family-change")).to_have_text(
                f"seat 2 → {OTHER_MODEL}; message “A storm is coming.”"
            )
            # Forks sit under their parent: both forks are the root's children.
            await expect(tree.locator(f'li[data-episode="{root}"] > ul > li')).to_have_count(2)
            await expect(tree.locator(f'li[data-episode="{root}"] > div a')).to_have_text(
                "Root episode"
            )
            for name, viewport in (("desktop", DESKTOP), ("phone", PHONE)):
                await page.set_viewport_size(viewport)  # type: ignore[arg-type]
                await expect(tree).to_be_visible()
                await fits(tab)
                await snap(tab, shots, f"forks-family-{name}")

            await page.set_viewport_size(DESKTOP)  # type: ignore[arg-type]
            await page.get_by_role("button", name="Compare turn by turn").click()
            await expect(page.locator("main h1")).to_have_text("Compare branches")
            shared = page.locator("section.shared-turns")
            await expect(shared).to_have_attribute("data-turns", "2")
            root_turns = (await post(service.url, TURNS, {"id": root}))["episode"]["turns"]
            await expect(shared.locator("li.turn .line")).to_have_text(
                [t["argument"] for t in root_turns[:2]], use_inner_text=True
            )
            first_apart = page.locator('.branch-row[data-turn="2"]')
            await expect(first_apart.locator('[data-branch="b"] li.environment')).to_contain_text(
                "A storm is coming."
            )
            await expect(first_apart.locator('[data-branch="a"] li.environment')).to_have_count(0)
            await expect(page.locator(".branch-row[data-turn]")).to_have_count(2)  # turns 2, 3
            await expect(page.locator('.branch-card[data-branch="b"]')).to_contain_text(
                f"fork at turn 2: seat 2 → {OTHER_MODEL}"
            )
            for name, viewport in (("desktop", DESKTOP), ("phone", PHONE)):
                await page.set_viewport_size(viewport)  # type: ignore[arg-type]
                await fits(tab)
                await snap(tab, shots, f"forks-compare-{name}")
            # A fork refused by the server says why beside its field.
            await tab.go(f"#/episodes/{root}")
            form = page.locator("section.family form.fork-form")
            await form.get_by_label("Keep its first turns").fill("9")
            await form.get_by_role("button", name="Fork").click()
            await expect(form.locator(".field-error")).to_contain_text("fork it at turn 0 to 4")
