"""Three raters rate twenty episodes each through their own links in a real headless Chromium,
filling the rubric, the reasoning and going on as a person would, at the same time. Each rater
is scripted with a known, seeded noise around a known true score; the judge's scores are known
too. The study's agreement, read over GraphQL, must then equal the reference packages
(krippendorff, pingouin, scipy) computed here on the same numbers."""

import asyncio
import random
import re
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from fractions import Fraction
from itertools import product
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pytest
from playwright.async_api import Browser, Page, expect
from scipy import stats

from parley.engine.types import OVERALL_SCORE, SOTOPIA_DIMENSIONS
from parley.storage.models import AgentProfile, EpisodeLog
from tests.graph import test_webapp
from tests.graph.test_webapp import snap, unique
from tests.resolvers import test_agreement
from tests.resolvers.test_agreement import bonett_wright
from tests.support.browser import DESKTOP, PHONE, AppPage
from tests.support.references import pingouin_icc
from tests.support.server import graphql, serve
from tests.support.studies import CREATE_STUDY, finished_episodes

pytestmark = [
    pytest.mark.usefixtures("redis_client"),  # binds the records the tests save
    pytest.mark.filterwarnings("ignore:The inplace keyword:DeprecationWarning:pingouin"),
]
browser = test_webapp.browser
shots = test_webapp.shots
unrounded = test_agreement.unrounded
API_TOKEN = "raters"
EPISODES = 20
AGENTS = 2
NOISE = (0, 1, 2)
"""Rater r is off the true score by r, up or down at random (seeded), within the range."""
SNAP_AT = 10
"""After this many ratings, raters 1 (at a desktop's width) and 2 (a phone's) are pictured."""
DIMENSIONS = {d.name: (d.range_low, d.range_high) for d in SOTOPIA_DIMENSIONS}
TOLERANCE = 1e-9
OVERFLOW = "document.documentElement.scrollWidth - document.documentElement.clientWidth"
PEOPLE = [("Noor", "Haddad", "Accountant"), ("Sam", "Okafor", "Designer")]
LINES = [
    "Where shall we have lunch today?",
    "How about the café at {street} Market Street?",
    "Fine by me: I will book us a table.",
]
"""Each episode's conversation; the street number tells a reader which episode it is."""
EPISODE_NUMBER = re.compile(r"café at (\d+) Market Street")
REASONING = "Both were friendly and settled it fast; Sam gave a little more ground."
MODELS = ("gpt-4o-mini", "llama3.1:8b", "mistral-small", "qwen2.5:7b")
"""Who played: agent a of episode n is MODELS[(2n + a) % 4], ten agents each."""

Unit = tuple[int, int]
"""(the episode's number, the agent)."""

AGREEMENT = """
fragment Figure on Estimate { n estimate low high resamples reason }
query($id: ID!) {
  ratingStudy(id: $id) {
    progress { assigned rated finished }
    ratings { rater episodeId scores { agent dimension score } }
    agreement {
      dimension
      humans { raters iccDropped alpha { ...Figure } icc1 { ...Figure } icck { ...Figure } }
      judgeVsHumans { judge pearson { ...Figure } spearman { ...Figure } }
      rankings { judge tau { ...Figure } models { model humanMean judgeMean } }
    }
  }
}"""


def model_of(unit: Unit) -> str:
    return MODELS[(AGENTS * unit[0] + unit[1]) % len(MODELS)]


def exact(scores: list[Fraction]) -> Fraction:
    """The mean, with no rounding."""
    return sum(scores, Fraction(0)) / len(scores)


def clip(score: int, dimension: str) -> int:
    low, high = DIMENSIONS[dimension]
    return min(max(score, low), high)


@dataclass(frozen=True)
class Truth:
    """The known scores: the true one of each unit and dimension, each rater's, the judge's."""

    true: dict[tuple[int, int, str], int]
    raters: list[dict[tuple[int, int, str], int]]
    judge: dict[tuple[int, int, str], int]

    @classmethod
    def seeded(cls, seed: int = 25) -> "Truth":
        keys = list(product(range(EPISODES), range(AGENTS), DIMENSIONS))
        draw = random.Random(seed)
        true = {k: draw.randint(*DIMENSIONS[k[2]]) for k in keys}
        raters = []
        for r, spread in enumerate(NOISE):
            noise = random.Random(seed * 100 + r)
            raters.append({k: clip(true[k] + spread * noise.choice((-1, 1)), k[2]) for k in keys})
        off = random.Random(seed * 100 + 99)
        judge = {k: clip(true[k] + off.choice((-1, 0, 1)), k[2]) for k in keys}
        return cls(true, raters, judge)

    def units(self) -> Iterator[Unit]:
        return iter(product(range(EPISODES), range(AGENTS)))

    def human(self, r: int, unit: Unit, dimension: str) -> float:
        """Rater r's score; on the overall score, the mean of their scores (as stored)."""
        if dimension == OVERALL_SCORE:
            return sum(self.raters[r][(*unit, d)] for d in DIMENSIONS) / len(DIMENSIONS)
        return float(self.raters[r][(*unit, dimension)])

    def judged(self, unit: Unit, dimension: str) -> Fraction:
        """The judge's score; on the overall score, the mean of its scores."""
        if dimension == OVERALL_SCORE:
            return Fraction(sum(self.judge[(*unit, d)] for d in DIMENSIONS), len(DIMENSIONS))
        return Fraction(self.judge[(*unit, dimension)])

    def model_means(self, dimension: str) -> tuple[list[float], list[float]]:
        """Each model's mean of the raters' mean scores and of the judge's, exactly: models
        whose means are equal tie."""
        humans: dict[str, list[Fraction]] = {m: [] for m in MODELS}
        judge: dict[str, list[Fraction]] = {m: [] for m in MODELS}
        for unit in self.units():
            humans[model_of(unit)].append(self.exact_mean(unit, dimension))
            judge[model_of(unit)].append(self.judged(unit, dimension))
        return (
            [float(exact(humans[m])) for m in MODELS],
            [float(exact(judge[m])) for m in MODELS],
        )

    def human_mean(self, dimension: str) -> list[float]:
        """The raters' mean score of each unit, computed exactly and rounded once: units whose
        means are equal tie (in a ranking), whatever order the scores were summed in."""
        return [float(self.exact_mean(u, dimension)) for u in self.units()]

    def exact_mean(self, unit: Unit, dimension: str) -> Fraction:
        if dimension == OVERALL_SCORE:
            each = [
                Fraction(sum(self.raters[r][(*unit, d)] for d in DIMENSIONS), len(DIMENSIONS))
                for r in range(len(NOISE))
            ]
        else:
            each = [Fraction(self.raters[r][(*unit, dimension)]) for r in range(len(NOISE))]
        return exact(each)

    def table(self, dimension: str) -> np.ndarray:
        """Units by raters."""
        return np.array(
            [[self.human(r, u, dimension) for r in range(len(NOISE))] for u in self.units()]
        )

    def judge_column(self, dimension: str) -> list[float]:
        return [float(self.judged(u, dimension)) for u in self.units()]


@dataclass(frozen=True)
class Study:
    url: str
    id: str
    tokens: list[str]
    episodes: list[str]
    """Episode ids by episode number."""


@pytest.fixture
async def study(redis_url: str, tmp_path: Path) -> AsyncIterator[Study]:
    """A locked server; twenty completed episodes whose judge gave the known scores; a study
    of them with three raters, each rating every episode."""
    truth = Truth.seeded()
    async with serve(redis_url, tmp_path, tokens=API_TOKEN) as url:
        episodes = await finished_episodes(unique("raters"), EPISODES, AGENTS)
        first = await EpisodeLog.get(episodes[0])
        for pk, (first_name, last_name, occupation) in zip(first.agents, PEOPLE, strict=True):
            person = await AgentProfile.get(pk)
            person.first_name, person.last_name = first_name, last_name
            person.occupation = occupation
            person.public_info = f"{first_name} works on the third floor."
            await person.save()
        for n, pk in enumerate(episodes):
            episode = await EpisodeLog.get(pk)
            episode.models = ["gpt-4o", *(model_of((n, a)) for a in range(AGENTS))]
            for turn, line in zip(episode.turns, LINES, strict=True):
                turn.agent_name = " ".join(PEOPLE[turn.agent_index][:2])
                turn.argument = line.format(street=n + 1)
            rewards: list[tuple[float, dict[str, float]] | float] = []
            for agent in range(AGENTS):
                scores = {d: float(truth.judge[(n, agent, d)]) for d in DIMENSIONS}
                overall = float(truth.judged((n, agent), OVERALL_SCORE))
                rewards.append((overall, {**scores, OVERALL_SCORE: overall}))
            episode.rewards = rewards
            await episode.save()
        variables = {
            "input": {
                "name": "Twenty lunch talks",
                "episodes": {"ids": episodes},
                "raters": len(NOISE),
                "raterNames": ["Ada", "Bo", "Cy"],
                "ratersPerEpisode": len(NOISE),
            }
        }
        payload = (await graphql(url, CREATE_STUDY, variables, API_TOKEN))["createRatingStudy"]
        assert payload["userErrors"] == [], payload
        assert {(d["name"], d["rangeLow"], d["rangeHigh"]) for d in payload["study"]["rubric"]} == {
            (name, low, high) for name, (low, high) in DIMENSIONS.items()
        }
        tokens = [link["token"] for link in payload["raterLinks"]]
        yield Study(url, payload["study"]["id"], tokens, episodes)


async def rate_shown(page: Page, scores: dict[tuple[int, int, str], int], rated: int) -> str:
    """Read which episode the page shows from its conversation, as a person would, and rate it
    by typing `scores`' score into each of the rubric's boxes (its agent and dimension as the
    box says, clipped to the box's range) and a line of reasoning."""
    heading = page.locator("main h1[data-position]")
    await expect(page.locator(".rated-count")).to_have_text(f"{rated} of {EPISODES} rated")
    position = await heading.get_attribute("data-position")
    found = EPISODE_NUMBER.search(await page.locator("ol.transcript").inner_text())
    assert found is not None and position is not None
    n = int(found[1]) - 1
    inputs = page.locator(".rating-form input[type=number]")
    boxes = await inputs.evaluate_all(
        "boxes => boxes.map(b => [Number(b.dataset.agent), b.dataset.dimension,"
        " Number(b.min), Number(b.max)])"
    )
    assert len(boxes) == AGENTS * len(DIMENSIONS)
    for i, (agent, dimension, low, high) in enumerate(boxes):
        await inputs.nth(i).fill(str(min(max(scores[(n, agent, dimension)], low), high)))
    await page.get_by_label("Your reasoning").fill(REASONING)
    return position


async def rater_session(browser: Browser, study: Study, r: int, shots: Path, truth: Truth) -> None:
    """Rater r rates every episode given to them, one after another, through their link."""
    viewport = PHONE if r == 2 else DESKTOP
    link = f"#/rate/{study.id}/{r}?token={study.tokens[r]}"
    async with AppPage.open(browser, study.url, link, viewport) as tab:
        page = tab.page
        for rated in range(EPISODES):
            position = await rate_shown(page, truth.raters[r], rated)
            if rated == SNAP_AT and r > 0:
                await snap(tab, shots, "rater-mid-study" + ("-phone" if r == 2 else ""))
            await page.get_by_role("button", name="Save and go on").click()
            await expect(page.locator("main h1")).not_to_have_attribute("data-position", position)
        await expect(
            page.get_by_role("heading", name="Every episode is rated: thank you.")
        ).to_be_visible()
        assert await tab.clean() == []


def approx(figure: dict[str, Any], estimate: float, interval: tuple[float, float] | None) -> None:
    assert figure["estimate"] == pytest.approx(estimate, abs=TOLERANCE), figure
    if interval is not None:
        assert (figure["low"], figure["high"]) == pytest.approx(interval, abs=TOLERANCE), figure


@pytest.mark.usefixtures("unrounded")
async def test_the_agreement_of_three_scripted_raters_equals_the_reference_packages(
    browser: Browser, study: Study, shots: Path
) -> None:
    truth = Truth.seeded()
    await asyncio.gather(*(rater_session(browser, study, r, shots, truth) for r in range(3)))

    found = (await graphql(study.url, AGREEMENT, {"id": study.id}, API_TOKEN))["ratingStudy"]
    total = EPISODES * len(NOISE)
    assert found["progress"] == {"assigned": total, "rated": total, "finished": True}
    # What was typed in the browser is what is stored, score for score.
    number = {pk: n for n, pk in enumerate(study.episodes)}
    stored = {
        (rating["rater"], number[rating["episodeId"]], s["agent"], s["dimension"]): s["score"]
        for rating in found["ratings"]
        for s in rating["scores"]
    }
    assert stored == {(r, *k): v for r, given in enumerate(truth.raters) for k, v in given.items()}

    figures = {d["dimension"]: d for d in found["agreement"]}
    assert list(figures) == [*DIMENSIONS, OVERALL_SCORE]
    for dimension, figure in figures.items():
        table = truth.table(dimension)
        humans = figure["humans"]
        assert (humans["raters"], humans["iccDropped"]) == (len(NOISE), 0)
        assert humans["alpha"]["n"] == EPISODES * AGENTS
        expected_alpha = krippendorff.alpha(
            reliability_data=table.T, level_of_measurement="interval"
        )
        approx(humans["alpha"], float(expected_alpha), None)
        assert humans["alpha"]["low"] <= humans["alpha"]["estimate"] <= humans["alpha"]["high"]
        reference = pingouin_icc(table)
        for field, kind in (("icc1", "ICC(A,1)"), ("icck", "ICC(A,k)")):
            low, high = reference.at[kind, "CI95"]
            approx(humans[field], float(reference.at[kind, "ICC"]), (low, high))

        (judged,) = figure["judgeVsHumans"]
        assert judged["judge"] == "judge"
        mean, judge = truth.human_mean(dimension), truth.judge_column(dimension)
        r = stats.pearsonr(mean, judge)
        interval = r.confidence_interval()
        approx(judged["pearson"], float(r.statistic), (interval.low, interval.high))
        rho = float(stats.spearmanr(mean, judge).statistic)
        approx(judged["spearman"], rho, bonett_wright(rho, EPISODES * AGENTS))
        (ranked,) = figure["rankings"]
        human_means, judge_means = truth.model_means(dimension)
        shown = {m["model"]: (m["humanMean"], m["judgeMean"]) for m in ranked["models"]}
        assert shown == {
            m: pytest.approx((h, j), abs=TOLERANCE)
            for m, h, j in zip(MODELS, human_means, judge_means, strict=True)
        }
        tau = stats.kendalltau(human_means, judge_means)  # tau-b
        approx(ranked["tau"], float(tau.statistic), None)
    # The noise shows: the exact rater and the one off by two do not agree perfectly.
    overall = figures[OVERALL_SCORE]["humans"]["alpha"]["estimate"]
    assert 0 < overall < 1

    async with AppPage.open(browser, study.url, f"#/studies/{study.id}") as researcher:
        page = researcher.page
        await page.get_by_label("Token", exact=True).fill(API_TOKEN)
        await page.get_by_role("button", name="Continue").click()
        row = page.locator(f'table.agreement.humans tr[data-dimension="{OVERALL_SCORE}"]')
        await expect(row).to_contain_text(f"{overall:.2f}")
        await snap(researcher, shots, "study-agreement")
        assert await researcher.clean() == []
    async with AppPage.open(browser, study.url, f"#/studies/{study.id}", PHONE) as phone:
        await phone.page.get_by_label("Token", exact=True).fill(API_TOKEN)
        await phone.page.get_by_role("button", name="Continue").click()
        rows = phone.page.locator("table.agreement.humans tbody tr")
        await expect(rows).to_have_count(len(figures))
        await expect(rows.last).to_contain_text(f"{overall:.2f}")
        assert await phone.page.evaluate(OVERFLOW) <= 0
        # The whole page is six screens long at this width: its agreement is what is pictured.
        await phone.page.locator(".agreement-box").screenshot(
            path=shots / "study-agreement-phone.png"
        )
        assert await phone.clean() == []
