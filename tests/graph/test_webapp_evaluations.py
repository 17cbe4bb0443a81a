"""An experiment's results by any evaluation, in a real headless Chromium against real `parley
serve` and `parley worker` processes: the page offers the episodes' own judge, the experiment's
re-judging and its rating study; choosing one shows that evaluation's figures (the API's own),
keeps the choice in the address, and beside the table shows how far the chosen evaluation agrees
with the study's raters, as the API's humanAgreement says; "Judges compared" shows the API's
evaluationAgreement of the evaluations chosen. An experiment nobody has rated says so, with a link
that makes a study of it. With PARLEY_SCREENSHOTS=<dir>, the page with a study's agreement and the
judges compared are saved at both widths."""

import asyncio
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, Locator, Page, expect

from bench.support.fake_llm import FakeLLM, Rule
from bench.support.simulation import post
from tests.graph import test_webapp
from tests.graph.test_webapp import CREATE_EXPERIMENT, MODEL, Service, comparing_design, unique
from tests.support.browser import DESKTOP, PHONE, AppPage
from tests.support.studies import CREATE_STUDY, SAVE

browser = test_webapp.browser
service = test_webapp.service
shots = test_webapp.shots

START_EXPERIMENT = "mutation($id: ID!) { startExperiment(input: {id: $id}) { changed } }"
PROGRESS = "query($id: ID!) { experiment(id: $id) { progress { finished completed total } } }"
REJUDGE = """
mutation($input: RejudgeEpisodesInput!) {
  rejudgeEpisodes(input: $input) { rejudging { id } userErrors { field message code } }
}"""
SLOTS = "query($id: ID!) { experiment(id: $id) { slots { nodes { episode { id } } } } }"
REJUDGING = (
    "query($id: ID!) { rejudging(id: $id) { progress { queued running completed failed } } }"
)
LISTED = """
query($id: ID!) {
  experiment(id: $id) { rejudgings { id judgeModel episodes } ratingStudies { id name } }
}"""
RESULTS = """
query($id: ID!, $evaluation: ID) {
  episodeResults(filter: {experimentId: $id}, groupBy: [MODEL], evaluation: $evaluation) {
    groups { model dimensions { dimension count mean } }
  }
}"""
AGREEMENT = """
query($id: ID!, $evaluation: ID, $study: ID!) {
  episodeResults(filter: {experimentId: $id}, evaluation: $evaluation) {
    humanAgreement(studyId: $study) {
      dimension units
      pairs { pearson { n estimate low high reason } tau { estimate } models { model } }
    }
  }
}"""
JUDGE_SCORES = [1, 2, 3, 4]
"""What the experiment's judge gives every dimension of each episode, one episode each."""
REJUDGE_SCORES = [6, 7, 8, 9]
"""What the re-judging's judge gives, one episode each."""
RATERS = 2
ESTIMATE = "{ n estimate low high }"


@dataclass
class Evaluated:
    experiment: str
    """Four episodes, a re-judging of them and a study of them that two raters rated whole."""
    rejudging: str
    study: str
    study_name: str
    unrated: str
    """An experiment of no study (and no episodes yet)."""
    by_ids: str
    """A study of the same episodes named by id: not the experiment's (nor is a re-judging of
    them by id)."""


async def until_finished(url: str, experiment: str) -> None:
    for _ in range(900):
        progress = (await post(url, PROGRESS, {"id": experiment}))["experiment"]["progress"]
        if progress["finished"]:
            assert progress["completed"] == progress["total"] == len(JUDGE_SCORES), progress
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"experiment {experiment} never finished")


async def until_judged(url: str, rejudging: str) -> None:
    for _ in range(900):
        progress = (await post(url, REJUDGING, {"id": rejudging}))["rejudging"]["progress"]
        if progress["completed"] + progress["failed"] == len(REJUDGE_SCORES):
            assert progress["completed"] == len(REJUDGE_SCORES), progress
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"re-judging {rejudging} never ended")


async def rate_whole(url: str, made: dict[str, Any]) -> None:
    """Every rater rates every episode, each agent's scores different (within each range)."""
    rubric = made["study"]["rubric"]
    for link in made["raterLinks"]:
        rater = link["rater"]
        for position in range(len(JUDGE_SCORES)):
            scores = [
                {
                    "agent": a,
                    "dimension": d["name"],
                    "score": d["rangeLow"]
                    + (3 * position + 2 * a + rater) % (d["rangeHigh"] - d["rangeLow"] + 1),
                }
                for a in range(2)
                for d in rubric
            ]
            fields = {
                "studyId": made["study"]["id"],
                "rater": rater,
                "raterToken": link["token"],
                "position": position,
                "revision": 0,
                "scores": scores,
            }
            saved = (await post(url, SAVE, {"input": fields}))["saveRating"]
            assert saved["userErrors"] == [], saved


@pytest.fixture(scope="module")
async def evaluated(service: Service, fake_llm_server: FakeLLM) -> Evaluated:
    fake_llm_server.reset()
    tag = unique("evals")
    design = comparing_design(seed=5, pairs=1)  # 2 compared models x 2 seat orders
    inputs = [{"name": f"{tag}-{n}", "tag": f"{tag}-{n}", "design": design} for n in (0, 1)]
    made = [
        (await post(service.url, CREATE_EXPERIMENT, {"input": i}))["createExperiment"]
        for i in inputs
    ]
    experiment, unrated = (m["experiment"]["id"] for m in made)
    fake_llm_server.add_rule(*(Rule(kind="judge", score=s) for s in JUDGE_SCORES))
    with service.worker("evaluations-worker"):
        await post(service.url, START_EXPERIMENT, {"id": experiment})
        await until_finished(service.url, experiment)
        fake_llm_server.reset()
        fake_llm_server.add_rule(*(Rule(kind="judge", score=s) for s in REJUDGE_SCORES))
        rejudge = {"experimentId": experiment, "judgeModel": MODEL}
        queued = (await post(service.url, REJUDGE, {"input": rejudge}))["rejudgeEpisodes"]
        assert queued["userErrors"] == [], queued
        rejudging = queued["rejudging"]["id"]
        await until_judged(service.url, rejudging)
        slots = (await post(service.url, SLOTS, {"id": experiment}))["experiment"]["slots"]
        ids = [slot["episode"]["id"] for slot in slots["nodes"]]
        again = {"episodeIds": ids, "judgeModel": MODEL}
        named = (await post(service.url, REJUDGE, {"input": again}))["rejudgeEpisodes"]
        assert named["userErrors"] == [], named
        await until_judged(service.url, named["rejudging"]["id"])
    fake_llm_server.reset()
    study_name = f"Rated {tag}"
    fields = {
        "name": study_name,
        "episodes": {"experimentId": experiment},
        "raters": RATERS,
        "ratersPerEpisode": RATERS,
    }
    study = (await post(service.url, CREATE_STUDY, {"input": fields}))["createRatingStudy"]
    assert study["userErrors"] == [], study
    await rate_whole(service.url, study)
    by_ids = {"name": f"By ids {tag}", "episodes": {"ids": ids}, "raters": 1}
    other = (await post(service.url, CREATE_STUDY, {"input": by_ids}))["createRatingStudy"]
    assert other["userErrors"] == [], other
    return Evaluated(
        experiment, rejudging, study["study"]["id"], study_name, unrated, other["study"]["id"]
    )


async def test_an_experiment_lists_the_rejudgings_and_studies_made_from_it(
    service: Service, evaluated: Evaluated
) -> None:
    """Those made with its experimentId, not a study or a re-judging of the same episodes named
    by id."""
    listed = (await post(service.url, LISTED, {"id": evaluated.experiment}))["experiment"]
    assert listed["rejudgings"] == [{"id": evaluated.rejudging, "judgeModel": MODEL, "episodes": 4}]
    assert listed["ratingStudies"] == [{"id": evaluated.study, "name": evaluated.study_name}]
    assert evaluated.by_ids not in {s["id"] for s in listed["ratingStudies"]}
    empty = (await post(service.url, LISTED, {"id": evaluated.unrated}))["experiment"]
    assert empty == {"rejudgings": [], "ratingStudies": []}


async def api_means(
    url: str, experiment: str, evaluation: str | None
) -> dict[tuple[str, str], str]:
    """(model, dimension) to the mean as the page writes it in data-mean (JavaScript's String)."""
    data = await post(url, RESULTS, {"id": experiment, "evaluation": evaluation})
    return {
        (group["model"], d["dimension"]): d["mean"]
        for group in data["episodeResults"]["groups"]
        for d in group["dimensions"]
    }


async def page_means(page: Page) -> dict[tuple[str, str], float]:
    cells: list[list[str]] = await page.locator("table.results td[data-dimension]").evaluate_all(
        "cells => cells.map(c => [c.dataset.model, c.dataset.dimension, c.dataset.mean])"
    )
    return {(model, dimension): float(mean) for model, dimension, mean in cells}


async def shows_means_of(page: Page, expected: dict[tuple[str, str], Any]) -> None:
    cells = page.locator("table.results td[data-dimension]")
    await expect(cells).to_have_count(len(expected))
    for _ in range(100):  # the table is drawn again once the chosen evaluation's figures come
        if await page_means(page) == expected:
            return
        await asyncio.sleep(0.1)
    assert await page_means(page) == expected


async def test_choosing_an_evaluation_shows_its_figures_and_the_address_keeps_it(
    browser: Browser, service: Service, evaluated: Evaluated
) -> None:
    route = f"#/experiments/{evaluated.experiment}"
    judge = await api_means(service.url, evaluated.experiment, None)
    rejudged = await api_means(service.url, evaluated.experiment, evaluated.rejudging)
    rated = await api_means(service.url, evaluated.experiment, evaluated.study)
    assert judge != rejudged and judge != rated and rejudged != rated  # the check can fail
    async with AppPage.open(browser, service.url, route) as tab:
        page = tab.page
        choice = page.get_by_label("Scores from")
        await shows_means_of(page, judge)
        await expect(choice).to_have_value("")
        options = await choice.locator("option").evaluate_all("os => os.map(o => o.value)")
        assert options == ["", evaluated.rejudging, evaluated.study]

        await choice.select_option(evaluated.rejudging)
        await page.wait_for_url(re.compile(f"evaluation={evaluated.rejudging}"))
        await shows_means_of(page, rejudged)
        await expect(page.locator("table.results caption")).to_contain_text(f"re-judged by {MODEL}")

        await choice.select_option(evaluated.study)
        await page.wait_for_url(re.compile(f"evaluation={evaluated.study}"))
        await shows_means_of(page, rated)
        await page.reload()
        await expect(page.get_by_label("Scores from")).to_have_value(evaluated.study)
        await shows_means_of(page, rated)
        shared = f"{route}?evaluation={evaluated.rejudging}"
        async with AppPage.open(browser, service.url, shared) as other:
            await expect(other.page.get_by_label("Scores from")).to_have_value(evaluated.rejudging)
            await shows_means_of(other.page, rejudged)
            assert await other.clean() == []
        await choice.select_option("")
        await page.wait_for_url(re.compile(f"#/experiments/{evaluated.experiment}$"))
        await shows_means_of(page, judge)
        assert await tab.clean() == []


async def test_an_address_naming_no_evaluation_of_the_experiment_says_so(
    browser: Browser, service: Service, evaluated: Evaluated
) -> None:
    """An evaluation of another experiment (or none at all) is not shown as this one's."""
    for wrong in (evaluated.by_ids, "01HZZZZZZZZZZZZZZZZZZZZZZZ"):
        route = f"#/experiments/{evaluated.experiment}?evaluation={wrong}"
        async with AppPage.open(browser, service.url, route) as tab:
            page = tab.page
            await expect(page.locator(".evaluation-choice [role=alert]")).to_contain_text(
                f"The address names an evaluation, {wrong}, that is not one of this experiment's."
            )
            box = page.locator(".human-agreement-box")
            await expect(box).to_contain_text("Choose one of this experiment's evaluations")
            await expect(box.locator("table")).to_have_count(0)
            assert await tab.clean() == []


def plain(figure: dict[str, Any], units: str) -> str:
    """Pearson's r as the page words it."""
    value, low, high = (f"{figure[k]:.2f}" for k in ("estimate", "low", "high"))
    return f"r\u00a0=\u00a0{value} [{low},\u00a0{high}], {units}"


async def test_the_agreement_beside_the_table_is_the_apis_human_agreement(
    browser: Browser, service: Service, evaluated: Evaluated
) -> None:
    for evaluation in (None, evaluated.rejudging):
        answer = await post(
            service.url,
            AGREEMENT,
            {"id": evaluated.experiment, "evaluation": evaluation, "study": evaluated.study},
        )
        expected = answer["episodeResults"]["humanAgreement"]
        overall = next(d for d in expected if d["dimension"] == "overall_score")["pairs"][0]
        assert overall["pearson"]["estimate"] is not None, overall  # a figure to compare
        route = f"#/experiments/{evaluated.experiment}"
        if evaluation:
            route += f"?evaluation={evaluation}"
        async with AppPage.open(browser, service.url, route) as tab:
            section = tab.page.locator(
                f'.human-agreement-box section[data-study="{evaluated.study}"]'
            )
            await expect(section.locator("h3 a")).to_have_attribute(
                "href", f"#/studies/{evaluated.study}"
            )
            await expect(section.locator("h3")).to_contain_text(evaluated.study_name)
            rows = section.locator("table.human-agreement tbody tr")
            await expect(rows).to_have_count(len(expected))
            for d in expected:
                pair = d["pairs"][0]
                row = section.locator(f'tr[data-dimension="{d["dimension"]}"]')
                pearson = pair["pearson"]
                shown = await row.evaluate(
                    "r => [r.dataset.pearson, r.dataset.pearsonN, r.dataset.tau]"
                )
                figures = [None if text == "" else float(text) for text in shown]
                assert figures == [pearson["estimate"], pearson["n"], pair["tau"]["estimate"]]
                if pearson["estimate"] is not None and pearson["low"] is not None:
                    units = f"{pearson['n']}\u00a0agents"
                    await expect(row.locator("td.pearson")).to_have_text(plain(pearson, units))
            assert await tab.clean() == []
    route = f"#/experiments/{evaluated.experiment}?evaluation={evaluated.study}"
    async with AppPage.open(browser, service.url, route) as tab:
        section = tab.page.locator(f'.human-agreement-box section[data-study="{evaluated.study}"]')
        await expect(section).to_contain_text("These results are this study's raters' own mean")
        await expect(section.locator("table")).to_have_count(0)
        assert await tab.clean() == []


async def test_an_experiment_nobody_rated_says_so_and_links_to_making_a_study(
    browser: Browser, service: Service, evaluated: Evaluated
) -> None:
    async with AppPage.open(browser, service.url, f"#/experiments/{evaluated.unrated}") as tab:
        page = tab.page
        line = page.locator(".human-agreement-box .no-study")
        await expect(line).to_contain_text("No people have rated these episodes.")
        await expect(page.locator(".human-agreement-box table")).to_have_count(0)
        await line.get_by_role("link").click()
        await page.wait_for_url(re.compile(rf"#/studies\?experiment={evaluated.unrated}$"))
        await expect(page.locator("#episodes-by-experimentId")).to_be_checked()
        await expect(page.locator("#study-experiment")).to_have_value(evaluated.unrated)
        assert await tab.clean() == []
    async with AppPage.open(browser, service.url, f"#/experiments/{evaluated.experiment}") as tab:
        await expect(tab.page.locator(".human-agreement-box section[data-study]")).to_have_count(1)
        await expect(tab.page.locator(".human-agreement-box .no-study")).to_have_count(0)


FITS = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"


@pytest.mark.parametrize("width", ["desktop", "phone"])
async def test_the_agreement_fits_beside_or_under_the_table_at_both_widths(
    browser: Browser, service: Service, evaluated: Evaluated, shots: Path, width: str
) -> None:
    viewport = {"desktop": DESKTOP, "phone": PHONE}[width]
    route = f"#/experiments/{evaluated.experiment}"
    async with AppPage.open(browser, service.url, route, viewport) as tab:
        page = tab.page
        box = page.locator(".human-agreement-box")
        await expect(box.locator("table.human-agreement tbody tr").first).to_be_visible()
        assert await page.evaluate(FITS) <= 0
        table = await page.locator("table.results").bounding_box()
        beside = await box.bounding_box()
        assert table is not None and beside is not None
        if width == "desktop":  # beside the table
            assert (
                beside["x"] >= table["x"] + table["width"]
                and beside["y"] < table["y"] + table["height"]
            )
        else:  # under it, within the screen
            assert beside["y"] >= table["y"] + table["height"]
            assert beside["x"] + beside["width"] <= viewport["width"]
        await page.screenshot(path=shots / f"experiment-agreement-{width}.png", full_page=True)
        # the choice of evaluation, the table and the agreement beside it
        top = await page.locator(".evaluation-choice").bounding_box()
        bottom = await page.locator(".results-beside").bounding_box()
        assert top is not None and bottom is not None
        height = bottom["y"] + bottom["height"] - top["y"] + 16
        clip = {"x": 0, "y": top["y"] - 8, "width": viewport["width"], "height": height}
        path = shots / f"experiment-agreement-{width}-results.png"
        await page.screenshot(path=path, clip=clip, full_page=True)  # type: ignore[arg-type]
        assert await tab.clean() == []


COMPARED = f"""
query($id: ID!, $evaluations: [ID]!) {{
  evaluationAgreement(episodes: {{experimentId: $id}}, evaluations: $evaluations) {{
    dimension units
    panels {{ evaluation runs agreement {{ alpha {ESTIMATE} icc1 {ESTIMATE} icck {ESTIMATE} }} }}
    pairs {{ first second pearson {ESTIMATE} spearman {ESTIMATE} tau {ESTIMATE} }}
  }}
}}"""
"""The figures the "Judges compared" section shows, as the API gives them."""
FIGURES = (
    "cells => cells.map(c => [c.dataset.estimate, c.dataset.low, c.dataset.high, c.dataset.n])"
)
"""Each figure cell's estimate, interval and count as the page keeps them."""


def as_shown(figure: dict[str, Any]) -> list[float | int | None]:
    return [figure["estimate"], figure["low"], figure["high"], figure["n"]]


def read_back(cells: list[list[str]]) -> list[list[float | int | None]]:
    return [[None if v == "" else float(v) for v in cell[:3]] + [int(cell[3])] for cell in cells]


async def shown_row(row: Locator, kinds: list[str]) -> list[list[float | int | None]]:
    cells = row.locator(", ".join(f"td.{kind}" for kind in kinds))
    return read_back(await cells.evaluate_all(FIGURES))


async def test_judges_compared_shows_the_apis_figures_for_the_evaluations_chosen(
    browser: Browser, service: Service, evaluated: Evaluated
) -> None:
    """The episodes' own judge, the re-judging and the study's raters, chosen together: every
    pair's Pearson, Spearman and Kendall figures, its agents, and the study's panel's alpha and
    ICCs are the API's evaluationAgreement; fewer than two chosen says so."""
    chosen = [None, evaluated.rejudging, evaluated.study]
    variables = {"id": evaluated.experiment, "evaluations": chosen}
    expected = (await post(service.url, COMPARED, variables))["evaluationAgreement"]
    overall = next(d for d in expected if d["dimension"] == "overall_score")
    assert overall["pairs"][0]["pearson"]["estimate"] is not None  # a figure to compare
    async with AppPage.open(browser, service.url, f"#/experiments/{evaluated.experiment}") as tab:
        page = tab.page
        section = page.locator("section.judges-compared")
        labels = section.locator("fieldset label")
        await expect(labels).to_have_count(3)
        await expect(labels.nth(1)).to_contain_text(f"B. Re-judged by {MODEL}")
        await section.get_by_role("button", name="Compare").click()
        await expect(section.locator(".no-figures")).to_have_text(
            "Choose two evaluations or more to compare them."
        )
        for n in range(3):
            await labels.nth(n).click()
        await section.get_by_role("button", name="Compare").click()
        pairs = section.locator("table.pairs tbody tr")
        await expect(pairs).to_have_count(sum(len(d["pairs"]) for d in expected))
        await expect(section.locator("table.panels tbody tr")).to_have_count(len(expected))
        for d in expected:
            for pair in d["pairs"]:
                row = section.locator(
                    f'table.pairs tr[data-dimension="{d["dimension"]}"]'
                    f'[data-first="{pair["first"] or ""}"][data-second="{pair["second"]}"]'
                )
                figures = [as_shown(pair[k]) for k in ("pearson", "spearman", "tau")]
                assert await shown_row(row, ["pearson", "spearman", "tau"]) == figures
                await expect(row.locator("td.units")).to_have_text(str(pair["pearson"]["n"]))
            (panel,) = d["panels"]
            assert panel["evaluation"] == evaluated.study
            row = section.locator(f'table.panels tr[data-dimension="{d["dimension"]}"]')
            figures = [as_shown(panel["agreement"][k]) for k in ("alpha", "icc1", "icck")]
            assert await shown_row(row, ["alpha", "icc1", "icck"]) == figures
        pearson = overall["pairs"][0]["pearson"]
        first = section.locator('table.pairs tr[data-dimension="overall_score"]').first
        value, low, high = (f"{pearson[k]:.2f}" for k in ("estimate", "low", "high"))
        await expect(first.locator("td.pearson")).to_have_text(
            f"r\u00a0=\u00a0{value} [{low},\u00a0{high}]"
        )
        await expect(first.locator("td.which")).to_have_text("A and B")
        assert await tab.clean() == []


async def test_judges_compared_on_an_experiment_of_one_evaluation_says_so(
    browser: Browser, service: Service, evaluated: Evaluated
) -> None:
    async with AppPage.open(browser, service.url, f"#/experiments/{evaluated.unrated}") as tab:
        section = tab.page.locator("section.judges-compared")
        await expect(section.locator(".no-figures")).to_contain_text(
            "The episodes' own judge is this experiment's only evaluation"
        )
        await expect(section.locator("form")).to_have_count(0)
        assert await tab.clean() == []


@pytest.mark.parametrize("width", ["desktop", "phone"])
async def test_judges_compared_fits_at_both_widths(
    browser: Browser, service: Service, evaluated: Evaluated, shots: Path, width: str
) -> None:
    viewport = {"desktop": DESKTOP, "phone": PHONE}[width]
    route = f"#/experiments/{evaluated.experiment}"
    async with AppPage.open(browser, service.url, route, viewport) as tab:
        page = tab.page
        section = page.locator("section.judges-compared")
        labels = section.locator("fieldset label")
        await labels.nth(0).click()
        await labels.nth(1).click()
        await labels.nth(2).click()
        await section.get_by_role("button", name="Compare").click()
        await expect(section.locator("table.pairs tbody tr").first).to_be_visible()
        assert await page.evaluate(FITS) <= 0
        await section.screenshot(path=shots / f"judges-compared-{width}.png")
        # the choice, the panels and the first two dimensions' pairs (boxes of the page's top)
        await page.evaluate("window.scrollTo(0, 0)")
        top = await section.bounding_box()
        last = await section.locator("table.pairs tbody tr").nth(5).bounding_box()
        assert top is not None and last is not None
        height = last["y"] + last["height"] - top["y"] + 16
        clip = {"x": 0, "y": top["y"] - 8, "width": viewport["width"], "height": height}
        path = shots / f"judges-compared-{width}-top.png"
        await page.screenshot(path=path, clip=clip, full_page=True)  # type: ignore[arg-type]
        assert await tab.clean() == []
