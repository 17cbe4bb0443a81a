"""The rating studio in a real headless Chromium against a real uvicorn with API tokens: three
raters rate their episodes through their links alone (one by keyboard only, one on a phone),
reload mid-way and go on where they stopped, find what they typed again on another device, and
see nothing of the models or the judge; the researcher follows the study live, sees a rater
flagged on a gold episode, gives a rater a new link (the old one then opens nothing) and closes
the study."""

import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as redis
from playwright.async_api import Browser, Page, expect

from parley.storage import keys
from tests.graph import test_webapp
from tests.graph.test_webapp import snap, unique
from tests.support.browser import DESKTOP, PHONE, AppPage
from tests.support.server import graphql, serve
from tests.support.studies import (
    CREATE_STUDY,
    JUDGE_REASONING,
    MODEL,
    SECRET,
    STUDY,
    finished_episodes,
)

pytestmark = pytest.mark.usefixtures("redis_client")  # binds the records the tests save
browser = test_webapp.browser
shots = test_webapp.shots
API_TOKEN = "studio"
DIMENSIONS = 7
OVERFLOW = "document.documentElement.scrollWidth - document.documentElement.clientWidth"


@dataclass(frozen=True)
class Studio:
    url: str
    study: str
    tokens: list[str]
    gold: str


@pytest.fixture
async def studio(redis_url: str, tmp_path: Path) -> AsyncIterator[Studio]:
    """A locked server, and a study of four episodes and a gold one, three raters, two to an
    episode: the raters have 4, 4 and 3 episodes (the gold one each)."""
    async with serve(redis_url, tmp_path, tokens=API_TOKEN) as url:
        episodes = await finished_episodes(unique("studio"), 4)
        (gold,) = await finished_episodes(unique("studio-gold"), 1)
        variables = {
            "input": {
                "name": "Lunch talks",
                "episodes": {"ids": episodes},
                "raters": 3,
                "raterNames": ["Ada", "Bo", "Cy"],
                "ratersPerEpisode": 2,
                "gold": [
                    {
                        "episodeId": gold,
                        "expected": [{"agent": 0, "dimension": "goal", "score": 9}],
                        "tolerance": 1,
                    }
                ],
            }
        }
        payload = (await graphql(url, CREATE_STUDY, variables, API_TOKEN))["createRatingStudy"]
        assert payload["userErrors"] == [], payload
        yield Studio(
            url, payload["study"]["id"], [link["token"] for link in payload["raterLinks"]], gold
        )


def link(studio: Studio, rater: int, token: str | None = None) -> str:
    return f"#/rate/{studio.study}/{rater}?token={token or studio.tokens[rater]}"


async def position(page: Page) -> str:
    """Which of the rater's episodes the page shows (its number from 0), once it has drawn."""
    heading = page.locator("main h1[data-position]")
    await expect(heading).to_be_visible()
    shown = await heading.get_attribute("data-position")
    assert shown is not None
    return shown


async def fill_scores(
    page: Page, pick: int, by_keyboard: bool = False, first: int = 0, count: int = 2 * DIMENSIONS
) -> None:
    """Give scores `first`..`first + count` of the form: `pick` above each range's low end."""
    inputs = page.locator(".rating-form input[type=number]")
    if by_keyboard:
        await inputs.nth(first).focus()
    for i in range(first, first + count):
        box = inputs.nth(i)
        low, high = (
            int(await box.get_attribute("min") or 0),
            int(await box.get_attribute("max") or 0),
        )
        value = str(min(low + pick, high))
        if by_keyboard:
            await page.keyboard.press("Control+A")
            await page.keyboard.type(value)
            await page.keyboard.press("Tab")  # on to the next score, then the reasoning
        else:
            await box.fill(value)


async def rate_one(page: Page, pick: int, reasoning: str, by_keyboard: bool = False) -> str:
    """Rate the episode shown, save it, and wait for the next; the position that was rated."""
    rated = await position(page)
    await fill_scores(page, pick, by_keyboard)
    reasoning_box = page.get_by_label("Your reasoning")
    if by_keyboard:
        await expect(reasoning_box).to_be_focused()
        await page.keyboard.type(reasoning)
        await page.keyboard.press("Tab")
        await expect(page.get_by_role("button", name=re.compile("^Save"))).to_be_focused()
        await page.keyboard.press("Enter")
    else:
        await reasoning_box.fill(reasoning)
        await page.get_by_role("button", name=re.compile("^Save")).click()
    await expect(page.locator("main h1")).not_to_have_attribute("data-position", rated)
    return rated


async def annotations(redis_client: redis.Redis, url: str, study: str) -> list[dict[str, Any]]:
    found = (await graphql(url, STUDY, {"id": study}, API_TOKEN))["ratingStudy"]
    stored = []
    for rating in found["ratings"]:
        document: Any = await redis_client.json().get(keys.annotation(rating["annotationId"]))
        stored.append(document)
    return stored


async def test_three_raters_rate_through_their_links_and_go_on_where_they_stopped(
    browser: Browser, studio: Studio, shots: Path, redis_client: redis.Redis
) -> None:
    async with AppPage.open(browser, studio.url, link(studio, 0)) as ada:
        page = ada.page
        await expect(page.locator("main h1")).to_have_text("Rating: Lunch talks")
        assert "token=" not in page.url  # the token left the address at once
        await expect(page.locator(".rated-count")).to_have_text("0 of 4 rated")
        await expect(page.locator(".rated-agent .secret")).to_have_count(
            2
        )  # Sotopia's rubric rates secrets
        await expect(page.locator(".rated-agent .secret").first).to_have_text(SECRET)
        text = await page.locator("main").inner_text()
        assert MODEL not in text and "rated-model" not in text and JUDGE_REASONING not in text
        await snap(ada, shots, "rater-page")
        first = await rate_one(page, 5, "Both stayed polite; neither got much.", by_keyboard=True)
        await expect(page.locator(".rated-count")).to_have_text("1 of 4 rated")
        second = await rate_one(page, 6, "A fair exchange.")
        await expect(page.locator(".rated-count")).to_have_text("2 of 4 rated")
        # half of the third, then the tab is reloaded: the draft comes back, and the place
        third = await position(page)
        await fill_scores(page, 2, count=3)
        await page.get_by_label("Your reasoning").fill("Still reading")
        await expect(page.locator(".draft-state")).to_contain_text("Draft kept")
        await page.reload()
        assert await position(page) == third
        assert third not in (first, second)
        await expect(page.locator(".rated-count")).to_have_text("2 of 4 rated")
        await expect(page.get_by_label("Your reasoning")).to_have_value("Still reading")
        filled = await page.locator(".rating-form input[type=number]").evaluate_all(
            "boxes => boxes.map(b => b.value)"
        )
        assert [bool(v) for v in filled] == [True] * 3 + [False] * (2 * DIMENSIONS - 3)
        assert await ada.clean() == []

    # the same link on another device: the same place, the same draft
    async with AppPage.open(browser, studio.url, link(studio, 0), PHONE) as phone:
        page = phone.page
        assert await position(page) == third
        await expect(page.get_by_label("Your reasoning")).to_have_value("Still reading")
        assert await page.evaluate(OVERFLOW) <= 0
        await snap(phone, shots, "rater-page-phone")
        await fill_scores(page, 2, first=3, count=2 * DIMENSIONS - 3)
        await page.get_by_label("Your reasoning").fill("Finished on the phone.")
        await page.get_by_role("button", name=re.compile("^Save")).click()
        await expect(page.locator(".rated-count")).to_have_text("3 of 4 rated")
        await rate_one(page, 1, "Last one.")
        await expect(
            page.get_by_role("heading", name="Every episode is rated: thank you.")
        ).to_be_visible()
        await expect(page.locator(".rated-count")).to_have_text("4 of 4 rated")
        assert await page.evaluate(OVERFLOW) <= 0
        await snap(phone, shots, "rater-page-done-phone")
        assert await phone.clean() == []

    for rater, viewport in ((1, DESKTOP), (2, PHONE)):
        async with AppPage.open(browser, studio.url, link(studio, rater), viewport) as tab:
            page = tab.page
            total = 4 if rater == 1 else 3
            await rate_one(page, 4, f"Rater {rater} thinks so.")
            await page.reload()  # mid-way: it goes on from the next one
            await expect(page.locator(".rated-count")).to_have_text(f"1 of {total} rated")
            for _ in range(total - 1):
                await rate_one(page, 4, f"Rater {rater} thinks so.")
            await expect(
                page.get_by_role("heading", name="Every episode is rated: thank you.")
            ).to_be_visible()
            assert await tab.clean() == []
            headers = [h.get("authorization", "") for h in await tab.graphql_posts()]
            assert headers and all(
                h == f"Rater {studio.tokens[rater]}" for h in headers
            )  # no API token

    found = (await graphql(studio.url, STUDY, {"id": studio.study}, API_TOKEN))["ratingStudy"]
    assert found["progress"] == {"assigned": 11, "rated": 11, "finished": True}
    stored = await annotations(redis_client, studio.url, studio.study)
    assert len(stored) == 11
    assert {(a["annotator_id"], a["episode"]) for a in stored} == {
        (found["raters"][r["rater"]]["annotatorId"], r["episodeId"]) for r in found["ratings"]
    }
    assert all(len(a["rewards"]) == 2 and len(a["rewards"][0][1]) == DIMENSIONS + 1 for a in stored)
    assert {a["reasoning"] for a in stored} >= {
        "Finished on the phone.",
        "Both stayed polite; neither got much.",
    }


async def test_the_study_page_follows_the_raters_flags_gold_renews_a_link_and_closes(
    browser: Browser, studio: Studio, shots: Path
) -> None:
    async with AppPage.open(browser, studio.url, f"#/studies/{studio.study}") as researcher:
        page = researcher.page
        await page.get_by_label("Token", exact=True).fill(API_TOKEN)
        await page.get_by_role("button", name="Continue").click()
        await expect(page.locator("main h1")).to_have_text("Lunch talks")
        progress = page.locator(".study-progress")
        await expect(progress).to_have_attribute("data-rated", "0")
        await expect(page.locator("table.study-raters tbody tr")).to_have_count(3)

        async with AppPage.open(browser, studio.url, link(studio, 2)) as cy:
            for done in range(1, 4):  # goal 0 where 9 is expected on the gold one: far off
                await rate_one(cy.page, 0, "Low all round.")
                await expect(progress).to_have_attribute("data-rated", str(done))  # live
        await expect(progress).to_have_attribute("data-rated", "3")
        flag = page.locator(".gold-flags li")
        await expect(flag).to_have_count(1)
        await expect(flag).to_contain_text("Cy")
        await expect(flag).to_contain_text("goal: 0 where 9 was expected")
        await expect(page.locator('table.study-raters tr[data-rater="2"] .gold-flag')).to_have_text(
            "1 flagged"
        )
        dimensions = await page.locator("ul.rubric li").count() + 1  # and the overall score
        humans = page.locator("table.agreement.humans tbody tr")
        await expect(humans).to_have_count(dimensions)
        # One rater so far: no unit has two scores, and the page says so.
        await expect(humans.last).to_have_attribute("data-dimension", "overall_score")
        await expect(humans.last).to_contain_text("too few units")
        judged = page.locator('table.agreement.judges tbody tr[data-judge="judge"]')
        await expect(judged).to_have_count(dimensions)
        await snap(researcher, shots, "study-page")

        await (
            page.locator('table.study-raters tr[data-rater="1"]')
            .get_by_role("button", name="New link")
            .click()
        )
        new_link = page.locator('.rater-link[data-rater="1"]')
        await expect(new_link).to_contain_text(f"#/rate/{studio.study}/1?token=")
        address = await new_link.inner_text()
        assert studio.tokens[1] not in address
        async with AppPage.open(browser, studio.url, link(studio, 1)) as old:
            await expect(old.page.locator(".rater-refused")).to_contain_text(
                "does not open a rating"
            )
            await expect(old.page.get_by_label("Rater token", exact=True)).to_be_visible()
        token = address.split("token=", 1)[1]
        async with AppPage.open(browser, studio.url, link(studio, 1, token)) as renewed:
            await expect(renewed.page.locator(".rated-count")).to_have_text("0 of 4 rated")

        await page.get_by_role("button", name="Close the study").click()
        await page.get_by_role("button", name=re.compile("^Yes: close it")).click()
        await expect(page.locator(".closed")).to_contain_text("Closed")
        async with AppPage.open(browser, studio.url, link(studio, 0)) as late:
            await expect(late.page.locator(".rater-refused")).to_contain_text(
                "does not open a rating"
            )
        assert await researcher.clean() == []

    async with AppPage.open(browser, studio.url, f"#/studies/{studio.study}", PHONE) as phone:
        await phone.page.get_by_label("Token", exact=True).fill(API_TOKEN)
        await phone.page.get_by_role("button", name="Continue").click()
        await expect(phone.page.locator(".gold-flags li")).to_have_count(1)
        assert await phone.page.evaluate(OVERFLOW) <= 0
        await snap(phone, shots, "study-page-phone")
        await phone.go("#/studies")
        await expect(
            phone.page.locator(f'table.studies tr[data-study="{studio.study}"]')
        ).to_be_visible()
        assert await phone.page.evaluate(OVERFLOW) <= 0
        assert await phone.clean() == []
