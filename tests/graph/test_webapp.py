"""The web app at `/` in a real headless Chromium, against real `parley serve` and `parley
worker` processes, the test Redis with the sample data, and the fake LLM answering slowly enough
that turns arrive one by one. Every page is saved as a screenshot in the directory printed at the
start (PARLEY_SCREENSHOTS, or a temporary one)."""

import json
import os
import re
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, Locator, Page, expect

from bench.support.fake_llm import FakeLLM, Rule
from bench.support.processes import ApiProcess, parley_env, worker_process
from bench.support.simulation import episode, make_world, post, start, start_input
from parley.graph.webapp import CONTENT_SECURITY_POLICY
from parley.resolvers.importer import import_lines
from parley.storage import sample
from parley.storage.models import EpisodeLog
from tests.support.browser import PHONE, WAIT_MS, AppPage, browser_for_tests, choose
from tests.support.games import EXAMPLES, Script, game_lines
from tests.support.server import CANCEL, CREATE_AGENT, serve

MODEL = "fake-llm"
"""The fake LLM under a name of the models file, so the form offers it."""
OTHER_MODEL = "fake-llm-b"
"""The same fake LLM under a second name, for an experiment comparing two models."""
TURNS = ".transcript li"
RECORD_TRANSCRIPT = """() => {
  window.transcriptLengths = [];
  const list = document.querySelector(".transcript");
  new MutationObserver(() => window.transcriptLengths.push(list.children.length))
    .observe(list, { childList: true });
}"""
"""Record the transcript's length after every change to it, to see how it grew."""


SPYFALL = ["Lena Brooks", "Marco Vitale", "Ruth Okafor", "Dex Moreau", "Sami Kallio"]
SPYFALL_VOTES = ["Dex Moreau", "Dex Moreau", "Dex Moreau", "Lena Brooks", "Dex Moreau"]
"""Who each Spyfall player accuses: the spy, Dex, is caught."""


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@asynccontextmanager
async def asking_for_a_token(
    browser: Browser, redis_url: str, tmp_path: Path, tokens: str
) -> AsyncIterator[AppPage]:
    """The app of a server that takes only the API `tokens`, opened: it asks for one."""
    async with (
        serve(redis_url, tmp_path, tokens=tokens) as url,
        AppPage.open(browser, url) as tab,
    ):
        await expect(tab.page.get_by_role("heading", name="A token is needed")).to_be_visible()
        yield tab


def comparing_design(seed: int, pairs: int) -> dict[str, Any]:
    """MODEL and OTHER_MODEL, each against MODEL and judged by it, on the bundled used_van_sale
    scenario with `pairs` pairs sampled (by `seed`) from the bundled sample agents."""
    return {
        "scenarios": {"codename": "used_van_sale"},
        "agents": {
            "sample": "UNIFORM",
            "seed": seed,
            "pairsPerScenario": pairs,
            "tag": "parley-sample",
        },
        "models": {"compare": [MODEL, OTHER_MODEL], "partner": MODEL},
        "maxTurns": 2,
        "judgeModel": MODEL,
    }


def sample_agent_box(page: Page, name: str) -> Locator:
    """The start form's checkbox of the sample agent `name`, found by the agent's id: a label
    may name others too (the fake LLM drafts agents with the sample's names)."""
    [pk] = [
        agent["pk"]
        for agent in sample.sample_data()["agents"]
        if f"{agent['first_name']} {agent['last_name']}" == name
    ]
    return page.locator(f"#agentIds-{pk}")


class Service:
    """A `parley serve --no-worker` process that can be stopped and started again on its port."""

    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self.env = env
        self.logs = logs
        self.starts = 0
        self.api = self._start(None)
        self.url = self.api.url

    def _start(self, port: int | None) -> ApiProcess:
        self.starts += 1
        return ApiProcess(self.env, self.logs / f"api-{self.starts}.log", "--no-worker", port=port)

    def stop(self) -> None:
        self.api.stop()

    def start(self) -> None:
        self.api = self._start(self.api.port)

    def worker(self, name: str) -> Any:
        return worker_process(self.env, self.logs / f"{name}.log")


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Browser]:
    # What the page must come to show may take a while on a busy machine (assertions, not timings).
    expect.set_options(timeout=WAIT_MS)
    async with browser_for_tests() as launched:
        yield launched


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wanted = os.environ.get("PARLEY_SCREENSHOTS")
    directory = Path(wanted) if wanted else tmp_path_factory.mktemp("webapp-screenshots")
    directory.mkdir(parents=True, exist_ok=True)
    print(f"\nweb app screenshots: {directory}")
    return directory


@asynccontextmanager
async def sample_service(
    redis_url: str, redis_client: Any, logs: Path, models: list[dict[str, Any]], **settings: str
) -> AsyncIterator[Service]:
    """The API on the sample data with `models` as its models file; workers come per test.
    `redis_client` binds the test's models to the same Redis."""
    await sample.seed(redis_client)
    models_file = logs / "models.json"
    models_file.write_text(json.dumps({"models": models}))
    env = parley_env(
        redis_url, logs / "data", seed="false", models_file=str(models_file), **settings
    )
    running = Service(env, logs)
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
async def service(
    redis_url: str,
    redis_client: Any,
    fake_llm_server: FakeLLM,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[Service]:
    """`sample_service` with the fake LLM as two named models."""
    entries = [
        {"name": name, "base_url": fake_llm_server.base_url, "model": "fake"}
        for name in (MODEL, OTHER_MODEL)
    ]
    logs = tmp_path_factory.mktemp("webapp")
    async with sample_service(
        redis_url, redis_client, logs, entries, lease_seconds="2", max_attempts="3"
    ) as running:
        yield running


async def snap(tab: AppPage, shots: Path, name: str) -> None:
    await tab.page.screenshot(path=shots / f"{name}.png", full_page=True)


async def sequences(tab: AppPage) -> list[int]:
    """The sequence numbers of the turns the page shows, in page order."""
    found: list[str] = await tab.page.locator(TURNS).evaluate_all(
        "items => items.map(item => item.dataset.sequence)"
    )
    return [int(s) for s in found]


async def turn_count(tab: AppPage) -> int:
    return await tab.page.locator(TURNS).count()


async def wait_for_turns(tab: AppPage, at_least: int) -> None:
    """Until the page shows `at_least` turns (polled: the page's policy forbids eval)."""
    await expect(tab.page.locator(TURNS).nth(at_least - 1)).to_be_attached(timeout=WAIT_MS)


async def completed(tab: AppPage) -> None:
    await expect(tab.page.locator("main h1")).to_have_attribute(
        "data-status", "COMPLETED", timeout=60_000
    )


async def cancel(base_url: str, *episode_ids: str) -> None:
    for episode_id in episode_ids:
        await post(base_url, CANCEL, {"id": episode_id})


async def test_the_page_is_served_with_a_policy_and_its_files_need_no_token(
    redis_url: str, tmp_path: Path
) -> None:
    async with (
        serve(redis_url, tmp_path, tokens="alpha") as url,
        httpx.AsyncClient(base_url=url, timeout=30) as http,
    ):
        page = await http.get("/", headers={"accept": "text/html"})
        sources = re.findall(r'(?:src|href)="(app/[^"]+)"', page.text)
        files = [await http.get("/" + source) for source in sources]
        operations = await http.get("/app/operations.graphql")
        query = await http.post("/graphql", json={"query": "{ __typename }"})
    assert page.status_code == 200
    assert page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert "script-src 'self';" in CONTENT_SECURITY_POLICY
    assert len(sources) == 3 and all(f.status_code == 200 and f.content for f in files)
    assert operations.status_code == 200 and "subscription WatchEpisode" in operations.text
    assert query.status_code == 401
    assert '<meta name="parley-tokens" content="required" />' in page.text  # asked for at once


async def test_the_app_shows_the_sample_data_and_filters_the_list(
    browser: Browser, service: Service, shots: Path, fake_llm: FakeLLM
) -> None:
    tag = unique("list")
    scenario, agents = await make_world(tag)
    model = fake_llm.model_name()
    ids = [await start(service.url, start_input(scenario, agents, model, tag=tag)) for _ in "abc"]
    other = await start(service.url, start_input(scenario, agents, model, tag=unique("other")))
    await cancel(service.url, ids[0])
    try:
        # Found by name: other tests' agents may fill the first pages.
        async with AppPage.open(browser, service.url, "#/agents?name=Marisol%20Quintero") as tab:
            page = tab.page
            await expect(page.get_by_role("link", name="Marisol Quintero")).to_be_visible()
            await snap(tab, shots, "agents")
            await page.get_by_role("link", name="Marisol Quintero").click()
            await expect(page.locator("main h1")).to_have_text("Marisol Quintero")
            await expect(page.get_by_role("link", name="Lucas Ferreira")).to_be_visible()
            await snap(tab, shots, "agent")
            await tab.go("#/scenarios?codename=used_van_sale")
            await expect(page.get_by_role("link", name="used_van_sale")).to_be_visible()
            await snap(tab, shots, "scenarios")
            await page.get_by_role("link", name="used_van_sale").click()
            await expect(page.locator(".facts")).to_contain_text("Two strangers meet")
            await snap(tab, shots, "scenario")
            await tab.go("#/relationships")
            await expect(page.locator("table.records tbody tr").first).to_be_visible()
            assert await page.locator("table.records tbody tr").count() >= 9
            await snap(tab, shots, "relationships")

            await tab.go("#/")
            await page.get_by_label("Tag").fill(tag)
            await page.get_by_role("button", name="Filter").click()
            rows = page.locator("table.episodes tbody tr")
            await expect(rows).to_have_count(3)
            assert set(await rows.evaluate_all("rs => rs.map(r => r.dataset.episode)")) == set(ids)
            assert await rows.first.get_attribute("data-episode") == ids[-1]  # newest first
            counts = page.locator(".counts")
            await expect(counts.locator("[data-status=QUEUED] .count")).to_have_text("2")
            await expect(counts.locator("[data-status=CANCELLED] .count")).to_have_text("1")
            await expect(counts.locator("[data-status=COMPLETED] .count")).to_have_text("0")

            await tab.go(f"#/?tag={tag}&first=2")
            await expect(rows).to_have_count(2)
            await page.get_by_role("link", name="Next page").click()
            await expect(rows).to_have_count(1)
            assert await rows.first.get_attribute("data-episode") == ids[0]
            await expect(page.get_by_role("link", name="Next page")).to_have_count(0)
            await page.get_by_role("link", name="Previous page").click()
            await expect(rows).to_have_count(2)
            assert await rows.first.get_attribute("data-episode") == ids[-1]

            await page.get_by_label("Status", exact=True).select_option("CANCELLED")
            await expect(rows).to_have_count(1)
            assert await rows.first.get_attribute("data-episode") == ids[0]
            await expect(counts.locator("[data-status=QUEUED] .count")).to_have_text("2")
            await choose(page, "Agent", f"Ava1 {tag}")
            await expect(rows).to_have_count(1)
            await snap(tab, shots, "episodes-filtered")
            assert other not in await page.locator("main").inner_html()
            assert await tab.clean() == []
    finally:
        await cancel(service.url, *ids[1:], other)


async def test_a_simulation_started_from_the_form_plays_live_to_its_scores(
    browser: Browser, service: Service, shots: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.delay = 0.3
    tag = unique("form")
    async with (
        AppPage.open(browser, service.url, f"#/?tag={tag}") as watcher,
        AppPage.open(browser, service.url, "#/start") as tab,
    ):
        await expect(watcher.page.locator("#connection")).to_have_attribute("data-state", "live")
        await watcher.page.evaluate("window.sameDocument = true")
        page = tab.page
        await page.get_by_label("Search scenario").fill("van")
        await page.get_by_label("used_van_sale", exact=False).check()
        await page.get_by_label("Search agents").fill("o")
        await page.get_by_label("Tobias Hale").check()
        await page.get_by_label("Marisol Quintero").check()
        await expect(page.locator(".seats li")).to_have_text(["Tobias Hale", "Marisol Quintero"])
        await page.get_by_label("Agents' model").select_option(MODEL)
        await page.get_by_label("Judge's model").select_option(MODEL)
        await page.get_by_label("Turn limit").fill("4")
        await page.get_by_label("Tag", exact=True).fill(tag)
        await expect(page.locator(".unavailable summary")).to_contain_text("unavailable")
        await snap(tab, shots, "start-form")
        await page.get_by_role("button", name="Start simulation").click()
        await page.wait_for_url(re.compile(r"#/episodes/"))
        episode_id = page.url.rsplit("/", 1)[-1]
        await expect(page.locator("main h1")).to_have_attribute("data-status", "QUEUED")
        await page.evaluate(RECORD_TRANSCRIPT)

        row = watcher.page.locator(f'tr[data-episode="{episode_id}"] .status')
        await expect(row).to_have_text("QUEUED")  # appeared without a reload

        with service.worker("worker"):
            await wait_for_turns(tab, 2)
            await snap(tab, shots, "episode-live")
            await completed(tab)
        stored = await episode(service.url, episode_id)

        lengths: list[int] = await page.evaluate("window.transcriptLengths")
        grown = [n for i, n in enumerate(lengths) if i == 0 or lengths[i - 1] != n]
        assert grown == [1, 2, 3, 4]  # one turn at a time, as each arrived
        assert await sequences(tab) == [t["sequence"] for t in stored["turns"]]
        assert [t["speaker"] for t in stored["turns"]][:2] == ["Tobias Hale", "Marisol Quintero"]
        charts = page.locator("figure.scores")
        await expect(charts).to_have_count(2)
        for chart in await charts.all():
            assert await chart.locator("g.dimension").count() == 7
            await expect(chart.locator(".overall")).to_contain_text("overall")
        secret = charts.first.locator('g.dimension[data-dimension="secret"] .score')
        await expect(secret).to_contain_text("(-10..0)")
        await expect(page.locator(".reasoning")).to_contain_text("Reasonable behaviour")
        timeline = page.locator(".timeline li")
        await expect(timeline).to_have_count(len(stored["statusHistory"]))
        assert await page.get_by_role("button", name="Cancel episode").count() == 0
        await snap(tab, shots, "episode-completed")

        await expect(row).to_have_text("COMPLETED")
        completed_count = watcher.page.locator(".counts [data-status=COMPLETED] .count")
        await expect(completed_count).to_have_text("1")
        assert await watcher.page.evaluate("window.sameDocument") is True
        await snap(watcher, shots, "episodes-live")
        assert await tab.clean() == [] and await watcher.clean() == []

    async with AppPage.open(browser, service.url, f"#/episodes/{episode_id}", PHONE) as phone:
        await completed(phone)
        await expect(phone.page.locator("figure.scores")).to_have_count(2)
        overflow = "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        assert await phone.page.evaluate(overflow) <= 0
        await snap(phone, shots, "episode-phone")


async def test_the_page_resumes_after_the_api_restarts_with_exactly_the_stored_turns(
    browser: Browser, service: Service, shots: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.delay = 0.3
    tag = unique("restart")
    scenario, agents = await make_world(tag)
    variables = start_input(scenario, agents, MODEL, maxTurns=10, tag=tag)
    episode_id = await start(service.url, variables)
    async with (
        AppPage.open(browser, service.url, f"#/?tag={tag}") as watcher,
        AppPage.open(browser, service.url, f"#/episodes/{episode_id}") as tab,
    ):
        connection = tab.page.locator("#connection")
        await expect(connection).to_have_attribute("data-state", "live")
        await expect(watcher.page.locator("#connection")).to_have_attribute("data-state", "live")
        with service.worker("worker"):
            await wait_for_turns(tab, 2)
            service.stop()
            await expect(connection).to_have_attribute("data-state", "reconnecting")
            shown = await turn_count(tab)
            while len((await EpisodeLog.get(episode_id)).turns) < shown + 2:
                await tab.page.wait_for_timeout(100)  # turns the page cannot see yet
            await snap(tab, shots, "episode-reconnecting")
            service.start()
            await completed(tab)
        stored = await episode(service.url, episode_id)
        assert len(stored["turns"]) == 10
        assert await sequences(tab) == [t["sequence"] for t in stored["turns"]]
        variables_sent = tab.subscribe_variables()
        assert variables_sent[0].get("after") is None
        resumed = [v["after"] for v in variables_sent[1:] if v.get("after")]
        assert resumed and int(resumed[0]) >= shown
        statuses = await tab.page.locator(".timeline li").evaluate_all(
            "items => items.map(item => item.dataset.status)"
        )
        assert statuses == [h["status"] for h in stored["statusHistory"]]
        await expect(connection).not_to_have_attribute("data-state", "reconnecting")
        await snap(tab, shots, "episode-resumed")
        row = watcher.page.locator(f'tr[data-episode="{episode_id}"] .status')
        await expect(row).to_have_text("COMPLETED")  # the list's stream resumed too
        assert any(v.get("after") for v in watcher.subscribe_variables()[1:])
        assert await tab.clean() == [] and await watcher.clean() == []


async def test_a_lost_worker_shows_the_new_attempt_resetting_the_transcript(
    browser: Browser, service: Service, shots: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.delay = 0.3
    tag = unique("reset")
    scenario, agents = await make_world(tag)
    variables = start_input(scenario, agents, MODEL, maxTurns=5, tag=tag, redelivery="RESTART")
    episode_id = await start(service.url, variables)
    async with AppPage.open(browser, service.url, f"#/episodes/{episode_id}") as tab:
        page = tab.page
        await expect(page.locator("#connection")).to_have_attribute("data-state", "live")
        with service.worker("doomed") as doomed:
            await wait_for_turns(tab, 2)
            doomed.kill()
        first_attempt = await sequences(tab)
        await page.evaluate(RECORD_TRANSCRIPT)
        with service.worker("rescuer"):
            notice = page.locator('.attempt-reset[data-attempt="2"]')
            await expect(notice).to_be_visible(timeout=WAIT_MS)
            await expect(notice).to_contain_text("started over")
            await snap(tab, shots, "episode-attempt-reset")
            await completed(tab)
        stored = await episode(service.url, episode_id)
        assert stored["attempt"] == 2
        lengths: list[int] = await page.evaluate("window.transcriptLengths")
        after_reset = lengths[lengths.index(0) :]  # the first attempt's turns went away at once
        grown = [n for i, n in enumerate(after_reset) if i == 0 or after_reset[i - 1] != n]
        assert grown == [0, 1, 2, 3, 4, 5]
        shown = await sequences(tab)
        assert shown == [t["sequence"] for t in stored["turns"]] and len(shown) == 5
        assert min(shown) > max(first_attempt)
        runs = page.locator('.timeline li[data-status="RUNNING"]')
        await expect(runs).to_have_count(2)
        await expect(runs.nth(1)).to_contain_text("attempt 2")
        reason = next(h["reason"] for h in stored["statusHistory"] if h["attempt"] == 2)
        await expect(runs.nth(1)).to_contain_text(reason)
        await expect(page.locator("#transcript-title")).to_have_text("Transcript (attempt 2)")
        await snap(tab, shots, "episode-attempt-2-completed")
        assert await tab.clean() == []


async def test_each_kind_of_action_is_drawn_differently_and_private_lines_name_recipients(
    browser: Browser, service: Service, shots: Path, fake_llm: FakeLLM
) -> None:
    tag = unique("kinds")
    scenario, agents = await make_world(tag, agents=3)
    one, two, three = (f"Ava{i} {tag}" for i in range(3))
    fake_llm.add_rule(
        Rule.action(one, "non-verbal communication", "waves from across the room"),
        Rule.action(two, "action", "pulls out a chair"),
        Rule.action(three, "speak", "Keep this between us.", to=[one]),
        Rule.action(one, "leave"),
    )
    episode_id = await start(service.url, start_input(scenario, agents, MODEL, maxTurns=4))
    async with AppPage.open(browser, service.url, f"#/episodes/{episode_id}") as tab:
        with service.worker("worker"):
            await completed(tab)
        page = tab.page
        kinds = await page.locator(TURNS).evaluate_all("items => items.map(i => i.dataset.kind)")
        assert kinds == ["NON_VERBAL_COMMUNICATION", "ACTION", "SPEAK", "LEAVE"]
        await expect(page.locator(".turn-non_verbal_communication em")).to_contain_text("waves")
        await expect(page.locator(".turn-action .tag")).to_have_text("action")
        private = page.locator(".turn.private")
        await expect(private).to_have_count(1)
        await expect(private.locator(".private-to")).to_have_text(f" (privately to {one})")
        await expect(page.locator(".turn-leave")).to_contain_text("left the conversation")
        await expect(page.locator("figure.scores")).to_have_count(3)
        await snap(tab, shots, "episode-kinds")
        assert await tab.clean() == []


async def test_an_episode_its_judge_failed_says_why_and_is_judged_again_from_its_page(
    browser: Browser, service: Service, shots: Path, fake_llm: FakeLLM
) -> None:
    """The judge answers HTTP 500 to every try: the page shows the conversation, that it was
    not judged and why, and a button that judges it again; once the judge answers, that fills
    the episode's scores on the page."""
    tag = unique("unjudged")
    scenario, agents = await make_world(tag)
    fake_llm.add_rule(Rule(kind="judge", contains=[tag], status=500, times=None))
    episode_id = await start(service.url, start_input(scenario, agents, MODEL, maxTurns=2))
    async with AppPage.open(browser, service.url, f"#/episodes/{episode_id}") as tab:
        page = tab.page
        with service.worker("worker"):
            await completed(tab)
            unjudged = page.locator(".unjudged")
            await expect(unjudged).to_contain_text("The judge gave no scores:")
            await expect(unjudged).to_contain_text("HTTP 500 (after 4 attempts)")
            await expect(page.locator(".progress label")).to_have_text(
                "Done: 2 of 2 turns, not judged"
            )
            await expect(page.locator(".timeline")).to_contain_text("not judged: judge")
            await expect(page.locator(TURNS)).to_have_count(2)
            await expect(page.locator("figure.scores")).to_have_count(0)
            await snap(tab, shots, "episode-not-judged")
            fake_llm.reset()  # the judge answers again
            await page.get_by_role("button", name="Judge again").click()
            await expect(page.locator("figure.scores")).to_have_count(2)
        await expect(page.locator(".unjudged")).to_have_count(0)
        await expect(page.locator(".progress label")).to_have_text("Done: 2 of 2 turns, scored")
        stored = await episode(service.url, episode_id)
        assert all(reward["overall"] is not None for reward in stored["rewards"])
        await snap(tab, shots, "episode-judged-again")
        assert await tab.clean() == []


async def test_cancel_from_the_page_keeps_the_partial_transcript(
    browser: Browser, service: Service, shots: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.delay = 0.3
    tag = unique("cancel")
    scenario, agents = await make_world(tag)
    episode_id = await start(service.url, start_input(scenario, agents, MODEL, maxTurns=40))
    async with AppPage.open(browser, service.url, f"#/episodes/{episode_id}") as tab:
        page = tab.page
        with service.worker("worker"):
            await wait_for_turns(tab, 2)
            await page.get_by_role("button", name="Cancel episode").click()
            await expect(page.locator("main h1")).to_have_attribute(
                "data-status", "CANCELLED", timeout=WAIT_MS
            )
        stored = await episode(service.url, episode_id)
        assert stored["status"] == "CANCELLED" and 2 <= len(stored["turns"]) < 40
        await expect(page.locator(TURNS)).to_have_count(len(stored["turns"]))
        assert await sequences(tab) == [t["sequence"] for t in stored["turns"]]
        await expect(page.get_by_role("button", name="Cancel episode")).to_have_count(0)
        await snap(tab, shots, "episode-cancelled")
        assert await tab.clean() == []


async def test_an_episode_of_100_turns_is_drawn_whole_and_the_page_stays_usable(
    browser: Browser, service: Service, shots: Path, fake_llm: FakeLLM
) -> None:
    tag = unique("long")
    scenario, agents = await make_world(tag)
    episode_id = await start(service.url, start_input(scenario, agents, MODEL, maxTurns=100))
    async with AppPage.open(browser, service.url, f"#/episodes/{episode_id}") as tab:
        with service.worker("worker"):
            await completed(tab)
        await expect(tab.page.locator(TURNS)).to_have_count(100)
        await snap(tab, shots, "episode-100-turns")
        stored = await episode(service.url, episode_id)
        assert await sequences(tab) == [t["sequence"] for t in stored["turns"]]
        await tab.page.get_by_role("link", name="Episodes").click()
        await expect(tab.page.locator("main h1")).to_have_text("Episodes")
        assert await tab.clean() == []


async def test_field_errors_from_the_start_form_sit_next_to_their_fields(
    browser: Browser, service: Service, shots: Path
) -> None:
    tag = unique("invalid")
    async with AppPage.open(browser, service.url, "#/start") as tab:
        page = tab.page
        await page.keyboard.press("Tab")
        assert await page.evaluate("document.activeElement.textContent") == "Skip to content"
        person = page.get_by_role("group", name="Played by a person instead of a model")
        seconds = page.get_by_label("Seconds for each turn")
        await expect(person).to_be_hidden()  # no seats to play before agents are picked
        await expect(seconds).to_be_hidden()
        await page.get_by_label("checkup_talk", exact=False).check()
        await page.get_by_role("button", name="Start simulation").click()
        agents_error = page.locator('[data-field="agentIds"] .field-error')
        await expect(agents_error).to_have_text("Pick at least two agents.")
        assert not [r for r in tab.requests if "StartSimulation" in (r.post_data or "")]
        await sample_agent_box(page, "Priya Raman").check()
        await sample_agent_box(page, "Ezra Whitlock").check()
        await expect(person).to_be_visible()
        await expect(seconds).to_be_hidden()  # until a seat is ticked for a person
        await page.get_by_label("Turn limit").fill("500")
        await page.get_by_label("Tag", exact=True).fill(tag)
        await page.get_by_role("button", name="Start simulation").click()
        error = page.locator('[data-field="maxTurns"] .field-error')
        await expect(error).to_contain_text("must be at most 100")
        await expect(page.locator("#maxTurns")).to_have_attribute("aria-invalid", "true")
        assert await page.evaluate("document.activeElement.id") == "maxTurns"
        await snap(tab, shots, "start-form-errors")

        await page.get_by_label("Turn limit").fill("3")
        await page.get_by_label("Or another model for both").fill("no-such-model")
        await page.get_by_role("button", name="Start simulation").click()
        # the agents' and the judge's model are refused once, under the field that named it
        model_error = page.locator('[data-field="otherModel"] .field-error')
        await expect(model_error).to_have_count(1)
        await expect(model_error).to_contain_text("no-such-model")
        assert await page.evaluate("document.activeElement.id") == "otherModel"
        selects = '[data-field="agentModels"] .field-error, [data-field="judgeModel"] .field-error'
        await expect(page.locator(selects)).to_have_count(0)
        await expect(page.locator('[data-field="maxTurns"] .field-error')).to_have_count(0)
        assert "#/start" in page.url
        assert await tab.clean() == []
    found = await post(
        service.url, "query($t: String) { episodes(filter: {tag: $t}) { totalCount } }", {"t": tag}
    )
    assert found["episodes"]["totalCount"] == 0


async def test_agents_and_relationships_are_created_and_edited_with_field_errors(
    browser: Browser, service: Service, shots: Path
) -> None:
    last = unique("Field").replace("-", "")
    partner = {"firstName": "Gideon", "lastName": last, "tag": last}
    created = await post(service.url, CREATE_AGENT, {"input": partner})
    assert created["createAgent"]["agent"], created
    async with AppPage.open(browser, service.url, "#/agents/new") as tab:
        page = tab.page
        await page.get_by_label("Last name").fill(last)
        await page.get_by_role("button", name="Create").click()
        await expect(page.locator('[data-field="firstName"] .field-error')).to_contain_text(
            "cannot be empty"
        )
        await snap(tab, shots, "agent-form-errors")
        await page.get_by_label("First name").fill("Noor")
        await page.get_by_label("Occupation").fill("Glassblower")
        await page.get_by_role("button", name="Create").click()
        await expect(page.locator("main h1")).to_have_text(f"Noor {last}")
        agent_url = page.url
        await page.get_by_role("link", name="Edit").click()
        await page.get_by_label("Occupation").fill("Potter")
        await page.get_by_role("button", name="Save changes").click()
        await expect(page.locator("main h1")).to_have_text(f"Noor {last}")
        await expect(page.locator(".facts")).to_contain_text("Potter")
        agent_id = agent_url.rsplit("/", 1)[-1]
        await tab.go("#/agents")
        await page.get_by_label("Name").fill(f"noor {last}")
        await page.get_by_role("button", name="Search").click()
        await expect(page.locator("table.records tbody tr")).to_have_count(1)
        await expect(page.get_by_role("link", name=f"Noor {last}")).to_be_visible()

        await tab.go(f"#/relationships/new?agentId={agent_id}")
        await choose(page, "Second agent", f"Gideon {last}")
        await page.get_by_label("Relationship", exact=True).select_option("FRIEND")
        await page.get_by_label("Background story").fill("Met at a kiln workshop")
        await page.get_by_role("button", name="Create").click()
        await expect(page.locator("main h1")).to_have_text(f"Noor {last} and Gideon {last}")
        await snap(tab, shots, "relationship")
        await tab.go(f"#/relationships/new?agentId={agent_id}")
        await choose(page, "Second agent", f"Gideon {last}")
        await page.get_by_role("button", name="Create").click()
        await expect(page.locator(".form-errors p, .field-error").first).to_be_visible()
        await tab.go(f"#/agents/{agent_id}")
        await expect(page.locator("ul.relationships")).to_contain_text(f"Gideon {last}")
        await expect(page.locator("ul.relationships")).to_contain_text("friend")
        assert await tab.clean() == []


async def test_a_token_is_asked_for_once_and_a_wrong_one_is_refused_clearly(
    browser: Browser, redis_url: str, tmp_path: Path, shots: Path
) -> None:
    async with asking_for_a_token(browser, redis_url, tmp_path, "alpha,beta") as tab:
        page = tab.page
        await page.get_by_label("Token", exact=True).fill("gamma")
        await page.get_by_role("button", name="Continue").click()
        await expect(page.get_by_role("alert")).to_contain_text("refused the token")
        await snap(tab, shots, "token-refused")
        await page.get_by_label("Token", exact=True).fill("alpha")
        await page.get_by_role("button", name="Continue").click()
        await expect(page.locator("main h1")).to_have_text("Episodes")
        await expect(page.locator("#connection")).to_have_attribute("data-state", "live")
        assert (await tab.graphql_posts())[-1]["authorization"] == "Bearer alpha"
        assert tab.connection_inits()[-1] == {"authorization": "Bearer alpha"}

        await page.reload()
        await expect(page.locator("main h1")).to_have_text("Episodes")  # kept for the session
        assert await page.get_by_label("Token", exact=True).count() == 0
        assert await tab.clean() == []


async def test_an_unknown_episode_id_in_the_address_says_so(
    browser: Browser, service: Service, shots: Path
) -> None:
    async with AppPage.open(browser, service.url, "#/episodes/no-such-episode") as tab:
        await expect(tab.page.locator("main h1")).to_have_text("Episode not found")
        await expect(tab.page.get_by_role("alert")).to_contain_text("no-such-episode")
        await snap(tab, shots, "episode-unknown")
        await tab.go("#/nowhere")
        await expect(tab.page.locator("main h1")).to_have_text("Not found")
        assert await tab.clean() == []


CREATE_EXPERIMENT = """
mutation($input: CreateExperimentInput!) {
  createExperiment(input: $input) { experiment { id slotCount } userErrors { message } }
}"""


async def test_an_experiment_shows_live_progress_results_with_intervals_and_its_episodes(
    browser: Browser, service: Service, shots: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.delay = 0.05
    tag = unique("experiment")
    design = comparing_design(seed=7, pairs=2)
    created = await post(
        service.url,
        CREATE_EXPERIMENT,
        {"input": {"name": "two fakes", "tag": tag, "design": design}},
    )
    payload = created["createExperiment"]
    assert payload["userErrors"] == [], payload
    experiment_id = payload["experiment"]["id"]
    slots = payload["experiment"]["slotCount"]
    assert slots == 8  # 2 pairs x 2 compared models x 2 seat orders

    async with AppPage.open(browser, service.url, "#/experiments") as tab:
        page = tab.page
        link = page.get_by_role("link", name="two fakes")
        await link.first.click()
        await page.wait_for_url(re.compile(f"#/experiments/{experiment_id}$"))
        await expect(page.locator(".progress-summary")).to_contain_text(f"0 of {slots} ended")
        await expect(page.locator("#connection")).to_have_attribute("data-state", "live")
        await page.get_by_role("button", name="Start or resume").click()
        await expect(page.locator(".form-errors")).to_contain_text(f"{slots} episodes queued")
        with service.worker("experiment-worker"):
            progress = page.locator(".experiment-progress")
            await expect(progress).to_have_attribute("data-finished", "true", timeout=90_000)
        await expect(page.locator(".progress-summary")).to_contain_text(f"{slots} of {slots}")
        done = page.locator('.experiment-progress [data-status="COMPLETED"] .count')
        await expect(done).to_have_text(str(slots))
        finished = page.locator('table.slots .status[data-status="COMPLETED"]')
        await expect(finished).to_have_count(slots)  # the slots followed without a reload
        await expect(page.locator("table.slots tbody tr").first).to_contain_text("used_van_sale")

        columns = page.locator("table.results thead th[data-model]")
        await expect(columns).to_have_count(2)
        models = await columns.evaluate_all("cs => cs.map(c => c.dataset.model)")
        assert sorted(models) == sorted([MODEL, OTHER_MODEL])
        goal = page.locator(f'table.results td[data-model="{OTHER_MODEL}"][data-dimension="goal"]')
        # OTHER_MODEL sits in 4 episodes, one seat each: 4 goal scores, shown as mean ± margin.
        await expect(goal).to_have_attribute("data-count", "4")
        await expect(goal).to_contain_text("±")
        await expect(page.locator(".usage")).to_contain_text(f"over {slots} episodes")
        marks = page.locator("figure.interval-chart g.interval")
        assert await marks.count() >= 2 * 7
        await snap(tab, shots, "experiment-finished")

        await page.locator(f'table.results a:text-is("{OTHER_MODEL}")').click()
        filtered = page.locator("table.slots tbody tr")
        await expect(filtered).to_have_count(4)
        first = filtered.first.locator("a")
        await first.click()
        await page.wait_for_url(re.compile(r"#/episodes/"))
        await completed(tab)
        assert await tab.clean() == []


async def test_an_experiment_counts_its_episodes_completed_without_scores(
    browser: Browser, service: Service, shots: Path, fake_llm: FakeLLM
) -> None:
    tag = unique("unjudged-experiment")
    scenario, agents = await make_world(tag)
    fake_llm.add_rule(Rule(kind="judge", contains=[tag], status=500, times=None))
    design = {
        "scenarios": {"ids": [scenario]},
        "agents": {"pairs": [agents]},
        "models": {"seats": [[MODEL, MODEL]]},
        "repeats": 2,
        "maxTurns": 1,
        "judgeModel": MODEL,
    }
    created = await post(
        service.url, CREATE_EXPERIMENT, {"input": {"name": tag, "tag": tag, "design": design}}
    )
    experiment_id = created["createExperiment"]["experiment"]["id"]
    async with AppPage.open(browser, service.url, f"#/experiments/{experiment_id}") as tab:
        page = tab.page
        await page.get_by_role("button", name="Start or resume").click()
        with service.worker("unjudged-experiment-worker"):
            progress = page.locator(".experiment-progress")
            await expect(progress).to_have_attribute("data-finished", "true", timeout=90_000)
        counts = page.locator(".experiment-progress")
        await expect(counts.locator('[data-status="COMPLETED"] .count')).to_have_text("2")
        await expect(counts.locator('[data-status="NOT_JUDGED"]')).to_have_text(
            "completed, not judged 2"
        )
        await snap(tab, shots, "experiment-not-judged")
        assert await tab.clean() == []


async def test_a_game_episode_shows_its_phase_teams_and_each_turns_phase(
    browser: Browser, service: Service, shots: Path, fake_llm: FakeLLM, redis_client: Any
) -> None:
    report = await import_lines(redis_client, (EXAMPLES / "spyfall.jsonl").open())
    assert report.invalid == 0
    lines = game_lines("spyfall")
    agents = [line["agent_id"] for line in lines if "agent_id" in line]
    (scenario,) = [line["env_id"] for line in lines if "env_id" in line]
    Script(fake_llm).vote("accusation", 1, dict(zip(SPYFALL, SPYFALL_VOTES, strict=True)))
    episode_id = await start(service.url, start_input(scenario, agents, MODEL, maxTurns=40))
    async with AppPage.open(browser, service.url, f"#/episodes/{episode_id}") as tab:
        page = tab.page
        panel = page.locator("section.game")
        # queued: the game is at its first phase, and the teams are shown in full
        await expect(panel.locator(".game-phase")).to_have_text("questions")
        await expect(panel.locator(".game-team")).to_have_count(2)
        await expect(panel.locator('.game-team[data-team="spy"]')).to_contain_text("Dex Moreau")
        with service.worker("worker"):
            await completed(tab)
        await expect(panel.locator(".game-state")).to_contain_text("Over after round 1")
        await expect(panel.locator(".game-state")).to_contain_text("the crew win")
        await expect(panel.locator('.game-team[data-winner="true"]')).to_contain_text("crew")
        await expect(panel.locator('.game-team[data-team="spy"] s')).to_have_text("Dex Moreau")
        phases = await page.locator(f"{TURNS} .phase-tag").all_inner_texts()
        assert phases == ["questions"] * 10 + ["accusation"] * 5
        await snap(tab, shots, "episode-game")
        assert await tab.clean() == []


async def test_an_episode_outside_a_game_has_no_game_panel(
    browser: Browser, service: Service, fake_llm: FakeLLM
) -> None:
    scenario, agents = await make_world(unique("nogame"))
    episode_id = await start(service.url, start_input(scenario, agents, MODEL, maxTurns=2))
    async with AppPage.open(browser, service.url, f"#/episodes/{episode_id}") as tab:
        with service.worker("worker"):
            await completed(tab)
        await expect(tab.page.locator("section.game")).to_be_hidden()
        await expect(tab.page.locator(".phase-tag")).to_have_count(0)
        assert await tab.clean() == []


async def test_a_relationship_form_sent_with_no_agent_picked_says_to_pick_one(
    browser: Browser, service: Service
) -> None:
    """Both agents left at "choose…": each was answered with the rule for typed ids ("an id is
    1 to 100 letters, digits, '_', '-' or '.'"), about something the person never typed."""
    async with AppPage.open(browser, service.url, "#/relationships/new") as tab:
        page = tab.page
        await expect(page.get_by_label("First agent")).to_be_visible()
        await page.get_by_role("button", name="Create").click()
        errors = page.locator(".field-error")
        await expect(errors).to_have_count(2)
        for said in await errors.all_inner_texts():
            assert "an id is" not in said and "letters, digits" not in said, said
        assert await tab.clean() == []
