"""Every page of the web app as a person sees it, in a real headless Chromium at a desktop's
and a phone's width, against real `parley serve` and `parley worker` processes: nothing runs
past the right edge (but inside a box that scrolls on purpose), no "null" or "undefined" is
shown, no goal shows Sotopia's hint tags raw, and nothing is logged to the console or refused
that was not expected. The pages come from the app's own route list (routes.js), so a new page
fails here until it is given an address to visit. The charts are read as SVG: each dimension's
name, range labels and dots share its row and its scale. With PARLEY_SCREENSHOTS=<dir>, every
page is saved at both widths."""

import asyncio
import itertools
import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, Page, expect
from ulid import ULID

from bench.support.fake_llm import FakeLLM, Rule
from bench.support.people import START_WITH_SEATS
from bench.support.simulation import CREATE_DIMENSION_LIST, post, start, start_input, wait_for
from parley.resolvers.importer import import_lines
from parley.storage.models import EpisodeLog, EpisodeStatus, StatusChange
from tests.graph import test_webapp
from tests.graph.test_webapp import (
    CREATE_EXPERIMENT,
    MODEL,
    OTHER_MODEL,
    Service,
    asking_for_a_token,
    comparing_design,
    unique,
)
from tests.support.browser import DESKTOP, PHONE, WAIT_MS, AppPage
from tests.support.games import EXAMPLES, game_lines
from tests.support.server import CANCEL, serve
from tests.support.studies import CREATE_STUDY

browser = test_webapp.browser
service = test_webapp.service

WIDTHS = {"desktop": DESKTOP, "phone": PHONE}
SCORES = {
    "believability": 8,
    "relationship": -4,
    "knowledge": 2,
    "secret": -1,
    "social_rules": -9,
    "financial_and_material_benefits": 3,
    "goal": 10,
}
"""What the judge gives every agent: a different place on each dimension's range."""
OVERALL = sum(SCORES.values()) / len(SCORES)
RANGES = {
    "overall": (-10, 10),
    "believability": (0, 10),
    "relationship": (-5, 5),
    "knowledge": (0, 10),
    "secret": (-10, 0),
    "social_rules": (-10, 0),
    "financial_and_material_benefits": (-5, 5),
    "goal": (0, 10),
}
"""Sotopia's ranges; the overall score (their mean) on the span of theirs."""
FAILURE = (
    "the judge did not answer: local/gemma-3-270m: request timed out (after 2 attempts); the "
    "transcript is kept and can be judged again"
)
FORK = """
mutation($input: ForkEpisodeInput!) {
  forkEpisode(input: $input) { episode { id } userErrors { message } }
}"""
PAUSE = "mutation($id: ID!) { pauseSimulation(input: {id: $id}) { userErrors { message } } }"
START_EXPERIMENT = "mutation($id: ID!) { startExperiment(input: {id: $id}) { changed } }"
PROGRESS = "query($id: ID!) { experiment(id: $id) { progress { finished completed total } } }"
WORLD = """
query {
  agents(filter: {name: "Tobias Hale"}) { nodes { id } }
  others: agents(filter: {name: "Marisol Quintero"}) { nodes { id } }
  scenarios(filter: {codename: "used_van_sale"}) { nodes { id } }
  relationships(first: 1) { nodes { id } }
}"""

PAGE_FAULTS = """() => {
  const root = document.documentElement;
  const width = root.clientWidth;
  const scrolls = (element) => {
    for (let up = element.parentElement; up && up !== document.body; up = up.parentElement) {
      const overflow = getComputedStyle(up).overflowX;
      if (overflow === "auto" || overflow === "scroll") return true;
    }
    return false;
  };
  const name = (element) => {
    const classes = typeof element.className === "string" ? element.className.trim() : "";
    return element.tagName.toLowerCase() + (classes ? "." + classes.split(/\\s+/).join(".") : "");
  };
  const past = [];
  for (const element of document.body.querySelectorAll("*")) {
    const box = element.getBoundingClientRect();
    if (box.width === 0 || box.height === 0) continue;
    if (box.right > width + 1 && !scrolls(element)) {
      past.push(`${name(element)} ends at ${box.right}`);
    }
  }
  const text = document.body.innerText;
  const values = [...document.querySelectorAll("input, textarea")].map((control) => control.value);
  const around = (t, m) => t.slice(Math.max(0, m.index - 30), m.index + m[0].length + 30);
  const found = (t, pattern) => [...t.matchAll(pattern)].map((m) => around(t, m));
  const words = [text, ...values].flatMap((t) => found(t, /\\b(null|undefined|NaN)\\b/g));
  const tags = found(text, /<\\/?(extra_info|clarification_hint|strategy_hint)>/g);
  return { overflow: root.scrollWidth - width, past: past.slice(0, 8), words, tags };
}"""
"""What a person would see as wrong on the page drawn now."""
ROUTE_COVERAGE = """async (paths) => {
  const { ROUTES } = await import(new URL("app/routes.js", document.baseURI).href);
  const covered = new Set(paths.map((path) => ROUTES.findIndex(([pattern]) => pattern.test(path))));
  return ROUTES.filter((_, i) => !covered.has(i)).map(([pattern]) => pattern.source);
}"""
"""The app's routes that none of the given paths reaches."""


@dataclass
class Visit:
    name: str
    route: str
    ready: str
    """A selector that shows once the page has drawn what this visit is for."""
    act: Callable[[Page], Awaitable[None]] | None = None
    refused: set[int] = field(default_factory=set)
    """HTTP statuses this page is expected to meet (and log to the console)."""


@dataclass
class World:
    tag: str
    agent: str
    scenario: str
    relationship: str
    experiment: str
    episodes: dict[str, str]
    """An episode id per status."""
    seat: tuple[str, str]
    """The WAITING episode and the token of its seat 0, played by a person."""
    game: str
    """A queued episode of a social game (Spyfall)."""
    study: tuple[str, str]
    """A rating study of the completed episode and the token of its rater 0."""
    fork: str
    """A fork of the completed episode at turn 1, with an environment message."""


CREATE_AGENT = """mutation ($input: CreateAgentInput!) {
  createAgent(input: $input) { agent { id } userErrors { field message } }
}"""


async def copied(
    source: str, status: EpisodeStatus, reason: str | None = None, **changes: Any
) -> str:
    """A stored copy of a completed episode as it stood at `status`, unscored (the states a
    worker passes through, held still: no worker owns the copy)."""
    record = await EpisodeLog.get(source)
    queued, running = record.status_history[:2]
    history = [queued, running]
    if status is not EpisodeStatus.RUNNING:
        at, sequence = running.at + 2, running.sequence + 1
        change = StatusChange(status=status, at=at, sequence=sequence, attempt=1, reason=reason)
        history.append(change)
    unscored = {"rewards": [], "reasoning": "", "finished_at": None, "status_history": history}
    copy = record.model_copy(update={"pk": str(ULID()), "status": status, **unscored, **changes})
    await copy.save()
    return str(copy.pk)


async def held_still(base_url: str, episode_id: str) -> str:
    """A stored copy of a just-queued episode, with no job: a worker takes any queued job, so a
    worker a later test of this module starts would run the original (which is cancelled)."""
    copy = (await EpisodeLog.get(episode_id)).model_copy(update={"pk": str(ULID())})
    await copy.save()
    await post(base_url, CANCEL, {"id": episode_id})
    return str(copy.pk)


@pytest.fixture(scope="module")
async def world(
    service: Service, fake_llm_server: FakeLLM, redis_client: Any
) -> World:  # `redis_client` binds the models to the test Redis
    """An episode in each status, an experiment with results, and a person's seat."""
    fake_llm_server.reset()
    scores = {d: {"reasoning": "Scored.", "score": s} for d, s in SCORES.items()}
    fake_llm_server.add_rule(Rule(kind="judge", content=json.dumps(scores), times=None))
    tag = unique("pages")
    long_name = {
        "firstName": "Bartholomew-Maximilian-Alexander",
        "lastName": "Featherstonehaugh-" * 6,
    }
    long_agent = await post(service.url, CREATE_AGENT, {"input": {**long_name, "tag": tag}})
    assert long_agent["createAgent"]["agent"], long_agent  # a wide choice in every agent filter
    found = await post(service.url, WORLD, {})
    agents = [found["agents"]["nodes"][0]["id"], found["others"]["nodes"][0]["id"]]
    scenario = found["scenarios"]["nodes"][0]["id"]
    design = comparing_design(seed=3, pairs=1)
    created = await post(
        service.url, CREATE_EXPERIMENT, {"input": {"name": tag, "tag": tag, "design": design}}
    )
    experiment = created["createExperiment"]["experiment"]["id"]
    first = start_input(scenario, agents, MODEL, maxTurns=2, tag=tag)
    waiting = start_input(scenario, agents, MODEL, maxTurns=2, tag=tag, humanSeats=[0])
    with service.worker("pages-worker"):
        await post(service.url, START_EXPERIMENT, {"id": experiment})
        done = await start(service.url, first)
        seated = (await post(service.url, START_WITH_SEATS, {"input": waiting}))["startSimulation"]
        seat_episode, seat_token = seated["episode"]["id"], seated["seatTokens"][0]["token"]
        await wait_for(service.url, done, lambda e: e["status"] == "COMPLETED")
        fork_input = {"episodeId": done, "atTurn": 1, "injectMessage": {"text": "Rain."}}
        forked = (await post(service.url, FORK, {"input": fork_input}))["forkEpisode"]
        fork = forked["episode"]["id"]
        await wait_for(service.url, fork, lambda e: e["status"] == "COMPLETED")
        await wait_for(service.url, seat_episode, lambda e: e["status"] == "WAITING")
        for _ in range(600):
            progress = (await post(service.url, PROGRESS, {"id": experiment}))["experiment"]
            if progress["progress"]["finished"]:
                break
            await asyncio.sleep(0.1)
        assert progress["progress"]["completed"] == progress["progress"]["total"] == 4
    fake_llm_server.reset()
    queued = await held_still(service.url, await start(service.url, first))
    paused = await start(service.url, first)
    await post(service.url, PAUSE, {"id": paused})
    cancelled = await start(service.url, first)
    await post(service.url, CANCEL, {"id": cancelled})
    assert (await import_lines(redis_client, (EXAMPLES / "spyfall.jsonl").open())).invalid == 0
    lines = game_lines("spyfall")
    players = [line["agent_id"] for line in lines if "agent_id" in line]
    (spyfall,) = [line["env_id"] for line in lines if "env_id" in line]
    spyfall_input = start_input(spyfall, players, MODEL, maxTurns=40, tag=tag)
    game = await held_still(service.url, await start(service.url, spyfall_input))
    turns = (await EpisodeLog.get(done)).turns
    episodes = {
        "QUEUED": queued,
        "RUNNING": await copied(done, EpisodeStatus.RUNNING, turns=turns[:1], progress=1),
        "WAITING": seat_episode,
        "PAUSED": paused,
        "EVALUATING": await copied(done, EpisodeStatus.EVALUATING),
        "COMPLETED": done,
        "FAILED": await copied(done, EpisodeStatus.FAILED, reason=FAILURE, error=FAILURE),
        "CANCELLED": cancelled,
    }
    study_input = {"name": tag, "episodes": {"ids": [done]}, "raters": 1}
    study = (await post(service.url, CREATE_STUDY, {"input": study_input}))["createRatingStudy"]
    return World(
        tag=tag,
        agent=agents[0],
        scenario=scenario,
        relationship=found["relationships"]["nodes"][0]["id"],
        experiment=experiment,
        episodes=episodes,
        seat=(seat_episode, seat_token),
        game=game,
        study=(study["study"]["id"], study["raterLinks"][0]["token"]),
        fork=fork,
    )


async def draft(page: Page) -> None:
    await page.get_by_label("The situation, in a sentence").fill("Two roommates argue about rent.")
    await page.get_by_label("Model that drafts (and plays)").select_option(MODEL)
    await page.get_by_role("button", name="Draft it").click()


def visits(world: World) -> list[Visit]:
    agent, scenario, relationship = world.agent, world.scenario, world.relationship
    seat_episode, seat_token = world.seat
    return [
        Visit("episodes", f"#/?tag={world.tag}", "table.episodes .failure-reason"),
        *[
            Visit(f"episode-{status.lower()}", f"#/episodes/{id}", f'h1[data-status="{status}"]')
            for status, id in world.episodes.items()
        ],
        Visit("episode-game", f"#/episodes/{world.game}", "section.game .game-phase"),
        Visit("episode-unknown", "#/episodes/no-such-episode", "text=Episode not found"),
        Visit(
            "episode-calls",
            f"#/episodes/{world.episodes['COMPLETED']}/calls",
            'li.model-call[data-purpose="JUDGE"] .call-answer',
        ),
        Visit(
            "episode-calls-turn",
            f"#/episodes/{world.episodes['COMPLETED']}/calls?turn=1",
            'li.model-call[data-purpose="TURN"][data-turn="1"] details',
        ),
        Visit("episode-fork", f"#/episodes/{world.fork}", ".family-tree [aria-current]"),
        Visit(
            "compare",
            f"#/compare?a={world.episodes['COMPLETED']}&b={world.fork}",
            '.branch-row[data-turn="1"] li.environment',
        ),
        Visit("compare-unknown", "#/compare?a=no-such&b=episode", "text=Nothing to compare"),
        Visit("agent-unknown", "#/agents/no-such-agent", "text=Agent not found"),
        Visit("start", "#/start", "form.start-form"),
        Visit("describe", "#/describe", "form.describe-form"),
        Visit("describe-draft", "#/describe", ".draft-form .goal-preview .goal-hint", draft),
        Visit("seat", f"#/seat/{seat_episode}/0?token={seat_token}", ".me .goal-hint"),
        Visit("experiments", "#/experiments", "table.experiments tbody tr"),
        Visit("studies", "#/studies", "table.studies tbody tr"),
        Visit("study", f"#/studies/{world.study[0]}", "table.study-raters tbody tr"),
        Visit("rate", f"#/rate/{world.study[0]}/0?token={world.study[1]}", ".rated-agent .goal"),
        Visit("experiment", f"#/experiments/{world.experiment}", "figure.interval-chart"),
        Visit("agents", "#/agents", "table.records tbody tr"),
        Visit("agent", f"#/agents/{agent}", "table.episodes .overall-scores"),
        Visit("agent-new", "#/agents/new", "form.record-form"),
        Visit("agent-edit", f"#/agents/{agent}/edit", "form.record-form"),
        Visit("scenarios", "#/scenarios", "table.records tbody tr"),
        Visit("scenario", f"#/scenarios/{scenario}", ".facts .goal-hint"),
        Visit("scenario-new", "#/scenarios/new", "form.record-form"),
        Visit("scenario-edit", f"#/scenarios/{scenario}/edit", ".goal-preview .goal-hint"),
        Visit("relationships", "#/relationships", "table.records tbody tr"),
        Visit("relationship", f"#/relationships/{relationship}", ".facts"),
        Visit("relationship-new", "#/relationships/new", "form.record-form"),
        Visit("relationship-edit", f"#/relationships/{relationship}/edit", "form.record-form"),
    ]


async def faults(tab: AppPage, visit: Visit) -> dict[str, Any]:
    """Everything wrong with the page as drawn, empty when nothing is."""
    found: dict[str, Any] = await tab.page.evaluate(PAGE_FAULTS)
    problems = {key: value for key, value in found.items() if value}
    refused = [(status, url) for status, url in tab.failed if status not in visit.refused]
    expected_logs = [f"status of {status}" for status in visit.refused]
    logged = [e for e in tab.console_errors if not any(x in e for x in expected_logs)]
    problems |= {"refused": refused} if refused else {}
    problems |= {"console": logged} if logged else {}
    problems |= {"script": tab.errors} if tab.errors else {}
    problems |= {"elsewhere": tab.foreign_requests()} if tab.foreign_requests() else {}
    return problems


async def test_every_page_fits_both_widths_and_shows_nothing_broken(
    browser: Browser, service: Service, world: World
) -> None:
    pages = visits(world)
    shots = os.environ.get("PARLEY_SCREENSHOTS")
    async with AppPage.open(browser, service.url, "#/nowhere") as tab:
        paths = [v.route.removeprefix("#").split("?")[0] for v in pages]
        uncovered = await tab.page.evaluate(ROUTE_COVERAGE, paths)
    assert uncovered == [], "pages of the app no visit reaches: give each one here"
    found: dict[str, Any] = {}
    for visit in pages:
        for width, viewport in WIDTHS.items():
            async with AppPage.open(browser, service.url, visit.route, viewport) as tab:
                if visit.act:
                    await expect(tab.page.locator("main .page")).to_be_attached()
                    await visit.act(tab.page)
                problems: dict[str, Any] = {}
                try:
                    await expect(tab.page.locator(visit.ready).first).to_be_visible(timeout=WAIT_MS)
                except AssertionError:
                    problems["never shown"] = visit.ready
                await tab.page.wait_for_load_state("networkidle")
                if problems := problems | await faults(tab, visit):
                    found[f"{visit.name} at {width}"] = problems
                if shots:
                    path = Path(shots) / f"page-{visit.name}-{width}.png"
                    await tab.page.screenshot(path=path, full_page=True)
    assert found == {}, json.dumps(found, indent=1)


ROWS = """() => [...document.querySelectorAll("figure.interval-chart g.dimension-row")].map(row => {
  const box = (element) => {
    const b = element.getBBox();
    return { x: b.x, y: b.y, right: b.x + b.width, bottom: b.y + b.height };
  };
  const text = (selector) => {
    const element = row.querySelector(selector);
    return { text: element.textContent, ...box(element) };
  };
  const axis = row.querySelector("line.axis");
  return {
    dimension: row.dataset.dimension,
    band: box(row.querySelector("rect.band")),
    label: text(".dimension-label"),
    low: text(".tick.low"),
    high: text(".tick.high"),
    axis: { x1: axis.x1.baseVal.value, x2: axis.x2.baseVal.value, y: axis.y1.baseVal.value },
    dots: [...row.querySelectorAll("g.interval circle")].map((dot) => ({
      ...box(dot),
      mean: Number(dot.parentElement.dataset.mean),
      x: dot.cx.baseVal.value,
    })),
  };
})"""
CLIPPED = """() => {
  const table = document.querySelector("table.results").getBoundingClientRect();
  return table.right - document.querySelector(".results-box").getBoundingClientRect().right;
}"""
BARS = """() => [...document.querySelectorAll("figure.scores g.dimension")].map((row) => {
  const [track, bar] = row.querySelectorAll("rect");
  const box = (element) => {
    const b = element.getBBox();
    return { x: b.x, y: b.y, right: b.x + b.width, bottom: b.y + b.height };
  };
  return {
    dimension: row.dataset.dimension,
    score: Number(row.dataset.score),
    row: box(row),
    text: row.querySelector(".score").textContent,
    track: box(track),
    bar: box(bar),
  };
})"""


def within(inner: dict[str, float], outer: dict[str, float]) -> bool:
    return outer["y"] <= inner["y"] and inner["bottom"] <= outer["bottom"]


async def test_each_dimension_of_a_chart_keeps_its_labels_and_dots_on_its_own_row_and_scale(
    browser: Browser, service: Service, world: World
) -> None:
    route = f"#/experiments/{world.experiment}"
    for viewport in WIDTHS.values():
        async with AppPage.open(browser, service.url, route, viewport) as tab:
            await expect(tab.page.locator("figure.interval-chart")).to_be_visible()
            rows = await tab.page.evaluate(ROWS)
            clipped = await tab.page.evaluate(CLIPPED)
        assert clipped <= 0  # the whole results table, "Not in the means" too, without scrolling
        assert [row["dimension"] for row in rows] == list(RANGES)
        bands = [row["band"] for row in rows]
        assert all(a["bottom"] <= b["y"] for a, b in itertools.pairwise(bands))
        for row in rows:
            low, high = RANGES[row["dimension"]]
            assert (row["low"]["text"], row["high"]["text"]) == (str(low), str(high)), row
            parts = [row["label"], row["low"], row["high"], *row["dots"]]
            assert all(within(part, row["band"]) for part in parts), row
            assert row["band"]["y"] <= row["axis"]["y"] <= row["band"]["bottom"], row
            # the range's labels sit at the ends of its axis
            assert abs(row["low"]["x"] - row["axis"]["x1"]) < 1, row
            assert abs(row["high"]["right"] - row["axis"]["x2"]) < 1, row
            expected = OVERALL if row["dimension"] == "overall" else SCORES[row["dimension"]]
            assert len(row["dots"]) == 2, row  # one per model compared
            for dot in row["dots"]:
                assert dot["mean"] == pytest.approx(expected)
                share = (dot["mean"] - low) / (high - low)
                span = row["axis"]["x2"] - row["axis"]["x1"]
                assert dot["x"] == pytest.approx(row["axis"]["x1"] + share * span, abs=0.5), row

    completed = f"#/episodes/{world.episodes['COMPLETED']}"
    async with AppPage.open(browser, service.url, completed) as tab:
        await expect(tab.page.locator("figure.scores")).to_have_count(2)
        bars = await tab.page.evaluate(BARS)
    assert len(bars) == 2 * len(SCORES)
    for one, two in itertools.pairwise(bars[:7]):
        assert one["row"]["bottom"] <= two["row"]["y"]  # each dimension on a row of its own
    for bar in bars:
        low, high = RANGES[bar["dimension"]]
        assert bar["score"] == SCORES[bar["dimension"]]
        assert bar["text"] == f"{bar['score']} ({low}..{high})"
        track = bar["track"]
        share = [(value - low) / (high - low) for value in (min(high, max(low, 0)), bar["score"])]
        ends = sorted(track["x"] + s * (track["right"] - track["x"]) for s in share)  # from 0
        assert bar["bar"]["x"] == pytest.approx(ends[0], abs=0.5), bar
        assert bar["bar"]["right"] == pytest.approx(max(ends[1], ends[0] + 1.5), abs=0.5), bar


async def test_the_episodes_list_shows_each_agents_overall_score_and_why_one_failed(
    browser: Browser, service: Service, world: World
) -> None:
    async with AppPage.open(browser, service.url, f"#/?tag={world.tag}") as tab:
        page = tab.page
        done = page.locator(f'tr[data-episode="{world.episodes["COMPLETED"]}"] .overall-scores')
        await expect(done).to_have_text(f"overall {OVERALL:.2f} · {OVERALL:.2f}")
        title = (
            "Overall score per agent: "
            + f"Tobias Hale {OVERALL:.2f}, Marisol Quintero {OVERALL:.2f}"
        )
        await expect(done).to_have_attribute("title", title)
        failed = page.locator(f'tr[data-episode="{world.episodes["FAILED"]}"] .failure-reason')
        await expect(failed).to_have_attribute("title", FAILURE)
        shown = await failed.inner_text()
        assert shown.endswith("…") and len(shown) <= 70 and FAILURE.startswith(shown[:-1])
        for status in ("QUEUED", "RUNNING", "CANCELLED"):
            row = page.locator(f'tr[data-episode="{world.episodes[status]}"] td.result')
            await expect(row).to_have_text("")
        assert await tab.clean() == []


async def test_a_word_longer_than_the_screen_wraps_in_the_episodes_list(
    browser: Browser, service: Service, world: World
) -> None:
    """Whatever the records hold (a tag of one long word here), no cell of the list runs past
    the screen's edge, at either width (the agent's page lists the episode too)."""
    tag = f"{world.tag}-{'unbroken' * 30}"
    done = await EpisodeLog.get(world.episodes["COMPLETED"])
    await done.model_copy(update={"pk": str(ULID()), "tag": tag}).save()
    for viewport in WIDTHS.values():
        async with AppPage.open(browser, service.url, f"#/?tag={tag}", viewport) as tab:
            await expect(tab.page.locator("table.episodes tbody tr")).to_have_count(1)
            found = await tab.page.evaluate(PAGE_FAULTS)
            assert found["overflow"] <= 0 and found["past"] == [], (viewport, found)


async def test_with_tokens_the_first_load_asks_for_one_before_sending_anything(
    browser: Browser, redis_url: str, tmp_path: Path
) -> None:
    async with asking_for_a_token(browser, redis_url, tmp_path, "alpha") as tab:
        page = tab.page
        await page.wait_for_load_state("networkidle")
        assert await tab.graphql_posts() == [] and tab.websockets == []
        assert tab.console_errors == [] and tab.failed == []
        await tab.go("#/agents")  # another page: still nothing sent without a token
        await expect(page.get_by_role("heading", name="A token is needed")).to_be_visible()
        assert await tab.graphql_posts() == []
        await page.get_by_label("Token", exact=True).fill("alpha")
        await page.get_by_role("button", name="Continue").click()
        await expect(page.locator("main h1")).to_have_text("Agents")
        assert tab.console_errors == [] and tab.failed == [] and await tab.clean() == []


async def test_a_seat_link_to_a_missing_episode_says_so(
    browser: Browser, service: Service, redis_url: str, tmp_path: Path
) -> None:
    """A tab that may read episodes is told the episode is not there; a tab with only the link
    (a locked server) is told the link is not valid, as for a wrong token: nothing more."""
    missing = str(ULID())
    for route in (f"#/seat/{missing}/0?token=made-up", f"#/seat/{missing}/0"):
        async with AppPage.open(browser, service.url, route) as tab:
            page = tab.page
            await expect(page.locator("main h1")).to_have_text("No such episode")
            await expect(page.get_by_role("alert")).to_contain_text("may have been deleted")
            assert await page.get_by_label("Seat token").count() == 0
            assert await tab.clean() == [] and tab.console_errors == []
    async with (
        serve(redis_url, tmp_path, tokens="alpha") as url,
        AppPage.open(browser, url, f"#/seat/{missing}/0?token=made-up") as tab,
    ):
        page = tab.page
        await expect(page.locator(".seat-refused")).to_have_text(
            "This link is not valid: the episode may have been deleted, or the link is not the "
            "whole one you were given."
        )
        assert await page.get_by_role("heading", name="A token is needed").count() == 0
        await expect(page.get_by_label("Seat token")).to_be_visible()
        assert [status for status, _ in tab.failed] == [401]  # the seat view, refused once
        assert await tab.clean() == []


CUSTOM_DIMENSIONS = {
    "courtesy": (0, 100),
    "persuasiveness_of_the_arguments_made_during_the_negotiation": (-100, 100),
}
"""A custom list's dimensions: ranges other than Sotopia's, one name longer than a phone."""
UNREACHABLE = "custom/fake@http://127.0.0.1:1/v1"
"""An endpoint nothing listens on: every turn of its agents fails at once."""
COMPACT = json.dumps(
    {"action_type": "whisper_to_everyone_in_the_room", "argument": "psst", "to": []},
    separators=(",", ":"),
)
"""An answer as models often write JSON, without spaces, of an action type that does not exist."""


@dataclass
class OddWorld:
    custom: str
    """An experiment of two models judged on CUSTOM_DIMENSIONS."""
    all_failed: str
    """An experiment whose one episode failed."""
    compact: str
    """An episode failed for an answer written as COMPACT, quoted in its reason."""


async def finished(url: str, experiment: str) -> dict[str, Any]:
    for _ in range(600):
        progress: dict[str, Any] = (await post(url, PROGRESS, {"id": experiment}))["experiment"][
            "progress"
        ]
        if progress["finished"]:
            return progress
        await asyncio.sleep(0.1)
    raise AssertionError(f"experiment {experiment} never finished: {progress}")


@pytest.fixture(scope="module")
async def odd_world(service: Service, fake_llm_server: FakeLLM, redis_client: Any) -> OddWorld:
    """What research runs produce beside the sample's: custom dimensions, a model nobody
    answers for, a model writing compact JSON."""
    fake_llm_server.reset()
    tag = unique("odd")
    dimensions = [
        {"name": name, "description": f"How much {name}", "rangeLow": low, "rangeHigh": high}
        for name, (low, high) in CUSTOM_DIMENSIONS.items()
    ]
    listed = await post(
        service.url, CREATE_DIMENSION_LIST, {"input": {"name": tag, "dimensions": dimensions}}
    )
    dimension_list = listed["createEvaluationDimensionList"]["evaluationDimensionList"]["id"]
    found = await post(service.url, WORLD, {})
    agents = [found["agents"]["nodes"][0]["id"], found["others"]["nodes"][0]["id"]]
    scenario = found["scenarios"]["nodes"][0]["id"]
    base = {
        "scenarios": {"codename": "used_van_sale"},
        "agents": {"pairs": [agents]},
        "maxTurns": 2,
        "judgeModel": MODEL,
    }
    designs = {
        "custom": {
            **base,
            "models": {"compare": [MODEL, OTHER_MODEL], "partner": MODEL},
            "evaluationDimensionListId": dimension_list,
        },
        "all_failed": {**base, "models": {"seats": [[UNREACHABLE, UNREACHABLE]]}},
    }
    experiments = {}
    with service.worker("odd-worker"):
        for name, design in designs.items():
            created = await post(
                service.url,
                CREATE_EXPERIMENT,
                {"input": {"name": f"{tag}-{name}", "tag": f"{tag}-{name}", "design": design}},
            )
            experiments[name] = created["createExperiment"]["experiment"]["id"]
            await post(service.url, START_EXPERIMENT, {"id": experiments[name]})
            await finished(service.url, experiments[name])
        fake_llm_server.add_rule(Rule(kind="action", content=COMPACT, times=None))
        compact = await start(
            service.url, start_input(scenario, agents, MODEL, maxTurns=2, tag=tag)
        )
        await wait_for(service.url, compact, lambda e: e["status"] == "FAILED")
    fake_llm_server.reset()
    return OddWorld(experiments["custom"], experiments["all_failed"], compact)


async def test_a_chart_of_custom_dimensions_draws_each_on_the_range_of_its_list(
    browser: Browser, service: Service, odd_world: OddWorld
) -> None:
    """The experiment chart knew only Sotopia's ranges: a custom dimension of 0..100 whose
    mean is 50 was drawn on 0..50, its dot at the right end, and one of -100..100 whose mean
    is 0 on 0..1, its dot at the left end. The episode page reads the list's ranges; the chart
    must too ("each dimension on its own range")."""
    route = f"#/experiments/{odd_world.custom}"
    for viewport in WIDTHS.values():
        async with AppPage.open(browser, service.url, route, viewport) as tab:
            await expect(tab.page.locator("figure.interval-chart g.dimension-row")).to_have_count(
                1 + len(CUSTOM_DIMENSIONS)
            )
            rows = {row["dimension"]: row for row in await tab.page.evaluate(ROWS)}
        for name, (low, high) in CUSTOM_DIMENSIONS.items():
            row = rows[name]
            assert (row["low"]["text"], row["high"]["text"]) == (str(low), str(high)), row
            span = row["axis"]["x2"] - row["axis"]["x1"]
            for dot in row["dots"]:
                share = (dot["mean"] - low) / (high - low)
                assert dot["x"] == pytest.approx(row["axis"]["x1"] + share * span, abs=0.5), row


async def test_a_long_dimension_name_stays_on_its_row_at_both_widths(
    browser: Browser, service: Service, odd_world: OddWorld
) -> None:
    """A dimension's name is one line of SVG text: a long one ran past its row's band, cut off
    at the chart's edge at 1280 px and past the right edge of the page at 390 px."""
    route = f"#/experiments/{odd_world.custom}"
    for width, viewport in WIDTHS.items():
        async with AppPage.open(browser, service.url, route, viewport) as tab:
            await expect(tab.page.locator("figure.interval-chart g.dimension-row")).to_have_count(
                1 + len(CUSTOM_DIMENSIONS)
            )
            rows = await tab.page.evaluate(ROWS)
            found = await tab.page.evaluate(PAGE_FAULTS)
        for row in rows:
            label, band = row["label"], row["band"]
            assert band["x"] <= label["x"] and label["right"] <= band["right"], (width, row)
        assert found["overflow"] <= 0 and found["past"] == [], (width, found)


async def test_an_experiment_with_nothing_scored_draws_no_empty_chart(
    browser: Browser, service: Service, odd_world: OddWorld
) -> None:
    """Every episode failed: the page drew the chart's caption ("Each model's mean per
    dimension ...") and legend above an empty picture (an SVG 0 high), where a person looks
    for the scores and finds a blank."""
    route = f"#/experiments/{odd_world.all_failed}"
    for viewport in WIDTHS.values():
        async with AppPage.open(browser, service.url, route, viewport) as tab:
            page = tab.page
            await expect(page.locator("main")).to_contain_text("1 episode: 1 failed")
            await page.wait_for_load_state("networkidle")
            charts = await page.locator("figure.interval-chart").count()
            rows = await page.locator("figure.interval-chart g.dimension-row").count()
        assert charts == 0 or rows > 0, "a chart with nothing in it"


async def test_a_failure_that_quotes_a_compact_answer_stays_within_the_page(
    browser: Browser, service: Service, odd_world: OddWorld
) -> None:
    """The reason an episode failed quotes the model's answer, which models often write as
    JSON without spaces: the status timeline drew it as one unbroken line, past the right
    edge at 390 px and at 1280 px alike."""
    route = f"#/episodes/{odd_world.compact}"
    for width, viewport in WIDTHS.items():
        async with AppPage.open(browser, service.url, route, viewport) as tab:
            await expect(tab.page.locator('h1[data-status="FAILED"]')).to_be_visible()
            await tab.page.wait_for_load_state("networkidle")
            found = await tab.page.evaluate(PAGE_FAULTS)
        assert found["overflow"] <= 0 and found["past"] == [], (width, found)
