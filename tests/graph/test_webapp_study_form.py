"""The form that makes a rating study, in a real headless Chromium against a real uvicorn with
API tokens: filled in as a person would, it makes the study and shows each rater's link once,
with a button that copies it; a bad input shows its error beside its field and makes nothing."""

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, expect

from tests.graph import test_webapp
from tests.graph.test_studies import CREATE_LIST
from tests.graph.test_webapp import snap, unique
from tests.support.browser import PHONE, AppPage
from tests.support.server import graphql, serve
from tests.support.studies import STUDY, finished_episodes

pytestmark = pytest.mark.usefixtures("redis_client")  # binds the records the tests save
browser = test_webapp.browser
shots = test_webapp.shots
API_TOKEN = "maker"
OVERFLOW = "document.documentElement.scrollWidth - document.documentElement.clientWidth"
STUDIES = "query { ratingStudies(first: 100) { totalCount nodes { id name } } }"
RATERS = "query($id: ID!) { ratingStudy(id: $id) { ratersPerEpisode rubric { name } } }"
WARMTH = {"name": "warmth", "description": "How warm.", "rangeLow": 1, "rangeHigh": 5}


@dataclass(frozen=True)
class Server:
    url: str
    tag: str
    episodes: list[str]
    rubric: str
    """The name of a stored dimension list of one dimension, warmth."""


@pytest.fixture
async def server(redis_url: str, tmp_path: Path) -> AsyncIterator[Server]:
    """A locked server with three completed episodes of one tag, and a dimension list."""
    async with serve(redis_url, tmp_path, tokens=API_TOKEN) as url:
        tag, rubric = unique("made"), unique("Warmth")
        listed = {"input": {"name": rubric, "dimensions": [WARMTH]}}
        made = (await graphql(url, CREATE_LIST, listed, API_TOKEN))["createEvaluationDimensionList"]
        assert made["userErrors"] == [], made
        yield Server(url, tag, await finished_episodes(tag, 3), rubric)


async def open_form(page: Page) -> None:
    """Sign in with the researcher's token and open the form (it is folded once a study exists)."""
    await page.get_by_label("Token", exact=True).fill(API_TOKEN)
    await page.get_by_role("button", name="Continue").click()
    await expect(page.locator("main h1")).to_have_text("Rating studies")
    form = page.get_by_role("form", name="Make a study")
    if not await form.is_visible():
        await page.locator("details.new-study > summary").click()
    await expect(form).to_be_visible()


async def study_count(url: str) -> int:
    count: int = (await graphql(url, STUDIES, {}, API_TOKEN))["ratingStudies"]["totalCount"]
    return count


async def test_the_form_makes_a_study_and_shows_each_raters_link_once(
    browser: Browser, server: Server, shots: Path
) -> None:
    async with AppPage.open(browser, server.url, "#/studies") as tab:
        page = tab.page
        await tab.page.context.grant_permissions(["clipboard-read", "clipboard-write"])
        await open_form(page)
        await page.get_by_label("Name", exact=True).fill("Made on the page")
        await page.get_by_label("Every episode with a tag").check()
        await page.get_by_label("Tag", exact=True).fill(server.tag)
        await page.get_by_label("Raters", exact=True).fill("3")
        await page.get_by_label("Rater 1's name").fill("Ada")
        await page.get_by_label("Rater 2's name").fill("Bo")
        await page.get_by_label("Raters per episode").fill("2")
        await page.evaluate("document.activeElement.blur()")  # no focus ring in the picture
        await snap(tab, shots, "study-form")
        await page.get_by_label("Rubric").select_option(label=f"{server.rubric} (warmth)")
        await page.get_by_role("button", name="Make the study").click()

        made = page.locator(".study-made")
        await expect(made.get_by_role("heading")).to_have_text("Made: Made on the page")
        links = made.locator("code.rater-link")
        await expect(links).to_have_count(3)
        addresses = await links.all_inner_texts()
        study = addresses[0].split("#/rate/", 1)[1].split("/", 1)[0]
        for rater, address in enumerate(addresses):
            assert address.startswith(f"{server.url}/#/rate/{study}/{rater}?token=")
        await snap(tab, shots, "study-made")
        await made.get_by_role("button", name="Copy Bo's link").click()
        await expect(made.locator('li[data-rater="1"] [role=status]')).to_have_text("Copied.")
        assert await page.evaluate("navigator.clipboard.readText()") == addresses[1]
        await expect(page.locator(f'table.studies tr[data-study="{study}"]')).to_contain_text(
            "Made on the page"
        )  # listed at once
        assert await tab.clean() == []
        await page.reload()  # the links are shown that once
        await expect(page.locator(f'table.studies tr[data-study="{study}"]')).to_be_visible()
        await expect(page.locator("code.rater-link")).to_have_count(0)

    found = (await graphql(server.url, STUDY, {"id": study}, API_TOKEN))["ratingStudy"]
    assert [r["name"] for r in found["raters"]] == ["Ada", "Bo", "Rater 3"]
    assert sorted(e["episodeId"] for e in found["episodes"]) == sorted(server.episodes)
    assert all(len(e["raters"]) == 2 for e in found["episodes"])
    shape = (await graphql(server.url, RATERS, {"id": study}, API_TOKEN))["ratingStudy"]
    assert shape == {"ratersPerEpisode": 2, "rubric": [{"name": "warmth"}]}  # the stored list
    bo = addresses[1].removeprefix(server.url + "/")
    async with AppPage.open(browser, server.url, bo) as bos:  # the link opens Bo's page
        await expect(bos.page.locator("main h1")).to_have_text("Rating: Made on the page")
        await expect(bos.page.locator(".summary")).to_contain_text("You rate as Bo.")
        await expect(bos.page.locator(".rated-count")).to_have_text("0 of 2 rated")


async def test_a_bad_input_shows_its_error_beside_its_field_and_makes_nothing(
    browser: Browser, server: Server, shots: Path
) -> None:
    before = await study_count(server.url)
    async with AppPage.open(browser, server.url, "#/studies", PHONE) as tab:
        page = tab.page
        await open_form(page)
        form = page.get_by_role("form", name="Make a study")
        make = page.get_by_role("button", name="Make the study")
        await page.get_by_label("Name", exact=True).fill("Too few raters")
        await make.click()  # no episodes named: the page says so before asking
        episodes = form.locator('[data-field="episodes"] .field-error')
        await expect(episodes).to_have_text("Say which episodes: a tag, an experiment or ids.")

        await page.get_by_label("Tag", exact=True).fill(server.tag)
        await page.get_by_label("Raters", exact=True).fill("2")
        await page.get_by_label("Raters per episode").fill("3")
        await make.click()  # the server's userError, beside its field
        per_episode = form.locator('[data-field="ratersPerEpisode"] .field-error')
        await expect(per_episode).to_have_text(
            "each episode cannot have 3 raters when the study has 2"
        )
        await expect(page.get_by_label("Raters per episode")).to_have_attribute(
            "aria-invalid", "true"
        )
        await expect(episodes).to_have_count(0)
        assert await page.evaluate(OVERFLOW) <= 0
        await snap(tab, shots, "study-form-phone")

        await page.get_by_label("Raters per episode").fill("1")
        await page.get_by_label("These episodes (ids)").check()
        await page.get_by_label("Episode ids").fill(f"{server.episodes[0]}\nno-such-episode")
        await make.click()
        await expect(episodes).to_have_text("no episode with id 'no-such-episode'")
        await expect(per_episode).to_have_count(0)
        await expect(page.locator("code.rater-link")).to_have_count(0)
        assert await tab.clean() == []
    assert await study_count(server.url) == before
