"""People in the loop in the web app, in a real headless Chromium against real `parley serve`
and `parley worker` processes: a person plays a seat from its page to the scores, a wrong seat
token is refused, pause, step, resume and inject drive an episode from its page, and the
perspective switch shows the transcript as one agent saw it."""

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Page, WebSocketRoute, expect

from bench.support.fake_llm import FakeLLM, Rule
from bench.support.people import START_WITH_SEATS
from bench.support.simulation import CREATE_DIMENSION_LIST, episode, make_world, post, start_input
from parley.engine.models import LOCAL_MODEL
from parley.storage.models import EpisodeLog
from tests.graph import test_webapp
from tests.graph.test_webapp import MODEL, TURNS, Service, completed, snap, unique
from tests.support.browser import PHONE, WAIT_MS, AppPage
from tests.support.server import CANCEL, graphql, serve

browser = test_webapp.browser
shots = test_webapp.shots
service = test_webapp.service

SEEN = ".transcript li"
RESUME = """
mutation($id: ID!) { resumeSimulation(input: {id: $id}) { userErrors { message } } }"""
SEAT_SETUP = """
query($id: ID!) {
  episode(id: $id) { humanSeats { seat claimed } seatDeadlineSeconds onSeatTimeout standInModel }
}"""
ENVIRONMENT = """
query($id: ID!) {
  episode(id: $id) {
    status sequence
    statusHistory { status }
    environmentMessages { text to turn }
    turns { turn speaker argument to actionType }
  }
}"""


async def start_with_seats(url: str, variables: dict[str, Any]) -> tuple[str, dict[int, str]]:
    payload = (await post(url, START_WITH_SEATS, {"input": variables}))["startSimulation"]
    assert payload["userErrors"] == [], payload
    tokens = {t["seat"]: t["token"] for t in payload["seatTokens"]}
    return payload["episode"]["id"], tokens


async def seat_one_started(url: str, tag: str, model: str, **extra: Any) -> tuple[str, str]:
    """An episode of a new world (`make_world(tag)`) whose seat 1 is a person's, started with
    the API token `alpha`: its id and the seat's token."""
    scenario, agents = await make_world(tag)
    variables = {"input": start_input(scenario, agents, model, tag=tag, humanSeats=[1], **extra)}
    started = (await graphql(url, START_WITH_SEATS, variables, "alpha"))["startSimulation"]
    assert started["userErrors"] == [], started
    return started["episode"]["id"], started["seatTokens"][0]["token"]


@dataclass(frozen=True)
class LockedSeat:
    """A server that wants the API token `alpha`, and its episode whose seat 1 is a person's."""

    url: str
    episode_id: str
    token: str

    def page(self, token: str) -> str:
        """The seat's page, offering `token`."""
        return f"#/seat/{self.episode_id}/1?token={token}"


@asynccontextmanager
async def locked_with_a_seat(
    redis_url: str, tmp_path: Path, tag: str, model: str
) -> AsyncIterator[LockedSeat]:
    """The server serving, its episode (`seat_one_started`) cancelled after."""
    async with serve(redis_url, tmp_path, tokens="alpha") as url:
        seat = LockedSeat(url, *await seat_one_started(url, tag, model))
        yield seat
        await graphql(url, CANCEL, {"id": seat.episode_id}, "alpha")


async def stored(url: str, episode_id: str) -> dict[str, Any]:
    found: dict[str, Any] = (await post(url, ENVIRONMENT, {"id": episode_id}))["episode"]
    return found


async def status_is(page: Page, status: str, timeout: float = WAIT_MS) -> None:
    await expect(page.locator("main h1")).to_have_attribute("data-status", status, timeout=timeout)


async def start_from_the_form(
    tab: AppPage, agent_model: str, turns: int, tag: str, shots: Path | None = None
) -> str:
    """Fill the start form with Tobias Hale played by a person against Marisol Quintero; the
    episode's id, read from the link to its seat page."""
    page = tab.page
    await page.get_by_label("Search scenario").fill("van")
    await page.get_by_label("used_van_sale", exact=False).check()
    await page.get_by_label("Tobias Hale").check()
    await page.get_by_label("Marisol Quintero").check()
    await page.get_by_label("Tobias Hale (seat 1)").check()
    await page.get_by_label("Agents' model").select_option(agent_model)
    await page.get_by_label("Judge's model").select_option(agent_model)
    await page.get_by_label("Turn limit").fill(str(turns))
    await page.get_by_label("Tag", exact=True).fill(tag)
    await page.get_by_label("Seconds for each turn").fill("900")
    await page.get_by_label("Seconds for each turn").press("Tab")  # leave it, as a person does
    await page.get_by_label("If a person does not act in time").select_option("STAND_IN")
    if shots:
        await snap(tab, shots, "start-form-person")
    await page.get_by_role("button", name="Start simulation").click()
    link = page.locator('.seat-links a.seat-link[data-seat="0"]')
    await expect(link).to_be_visible()
    href = await link.get_attribute("href")
    assert href is not None and "token=" in href
    match = re.match(r"#/seat/([^/]+)/0\?token=", href)
    assert match, href
    return match.group(1)


async def play(page: Page, words: str, to: str | None = None, before_sending: Any = None) -> None:
    """Wait for this person's turn, then say `words` (privately to `to`); `before_sending` is
    awaited with the box filled in."""
    banner = page.locator(".turn-banner")
    await expect(banner).to_have_attribute("data-yours", "true", timeout=120_000)
    await expect(banner.locator(".countdown")).to_contain_text("left")
    before = await page.locator(SEEN).count()
    await page.get_by_label("Action", exact=True).select_option("SPEAK")
    await page.get_by_label("What you say or do").fill(words)
    if to:
        await page.get_by_label(to, exact=True).check()
    if before_sending:
        await before_sending()
    await page.get_by_role("button", name="Send").click()
    await expect(page.locator(".act-form .sent")).to_have_text("Sent.")
    await expect(page.locator(SEEN).nth(before)).to_contain_text(words)


async def test_a_person_plays_a_seat_from_the_start_page_to_the_scores(
    browser: Any, service: Service, shots: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.delay = 0.2
    tag = unique("seat")
    async with AppPage.open(browser, service.url, "#/start") as tab:
        page = tab.page
        episode_id = await start_from_the_form(tab, MODEL, 4, tag, shots)
        await snap(tab, shots, "start-seat-links")
        await page.get_by_role("button", name="Open seat 1").click()
        await page.wait_for_url(re.compile(f"#/seat/{episode_id}/0$"))  # the token left the URL
        await expect(page.locator("main h1")).to_contain_text("Tobias Hale")
        await expect(page.locator(".me .goal")).not_to_be_empty()
        await expect(page.locator(".me h2")).to_have_text("You are Tobias Hale")
        episode_page = f"#/episodes/{episode_id}"
        with service.worker("seat-worker"):
            await play(page, "Hello, I saw your van listing.")

            async def shoot() -> None:
                await snap(tab, shots, "seat-page")
                async with AppPage.open(browser, service.url, episode_page) as watcher:
                    progress = watcher.page.locator(".progress")
                    await expect(progress).to_have_attribute("data-status", "WAITING")
                    await expect(progress).to_contain_text("waiting for Tobias Hale (seat 1)")
                    await expect(progress.locator(".countdown")).to_contain_text("left")
                    await expect(watcher.page.locator("table.agents .human")).to_have_count(1)
                    # going on after a person's turn is no lost worker's new attempt
                    await expect(watcher.page.locator(".attempt-reset")).to_have_count(0)
                    title = watcher.page.locator("#transcript-title")
                    await expect(title).to_have_text("Transcript")
                    await snap(watcher, shots, "episode-waiting")
                    assert await watcher.clean() == []

            cash = "Between us: I can pay cash today."
            await play(page, cash, to="Marisol Quintero", before_sending=shoot)
            await status_is(page, "COMPLETED", 60_000)
        await expect(page.locator(".turn-banner")).to_contain_text("over")
        charts = page.locator("figure.scores")
        await expect(charts).to_have_count(2)
        await expect(charts.first).to_have_class(re.compile("yours"))
        await expect(page.locator(".act-form")).to_be_hidden()
        private = page.locator(".transcript .turn.private")
        await expect(private).to_have_count(1)
        await expect(private).to_contain_text("privately to Marisol Quintero")
        await snap(tab, shots, "seat-page-completed")
        assert await tab.clean() == []
        token = next(v["seatToken"] for v in tab.subscribe_variables() if "seatToken" in v)
        assert not [r.url for r in tab.requests if token in r.url]  # only ever the argument
    link = f"#/seat/{episode_id}/0?token={token}"
    async with AppPage.open(browser, service.url, link, PHONE) as phone:
        await status_is(phone.page, "COMPLETED")
        await expect(phone.page.locator("figure.scores")).to_have_count(2)
        overflow = "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        assert await phone.page.evaluate(overflow) <= 0
        await snap(phone, shots, "seat-page-phone")
    record = await stored(service.url, episode_id)
    assert record["status"] == "COMPLETED"
    mine = [t for t in record["turns"] if t["speaker"] == "Tobias Hale"]
    assert [t["argument"] for t in mine] == [
        "Hello, I saw your van listing.",
        "Between us: I can pay cash today.",
    ]
    assert [t["to"] for t in mine] == [[], ["Marisol Quintero"]]
    assert [t["turn"] for t in record["turns"]] == [0, 1, 2, 3]
    setup = await post(service.url, SEAT_SETUP, {"id": episode_id})
    assert setup["episode"] == {
        "humanSeats": [{"seat": 0, "claimed": True}],
        "seatDeadlineSeconds": 900.0,
        "onSeatTimeout": "STAND_IN",
        "standInModel": MODEL,
    }


async def test_a_wrong_seat_token_is_refused_plainly_and_changes_nothing(
    browser: Any, service: Service, shots: Path, fake_llm: FakeLLM
) -> None:
    tag = unique("wrong-token")
    scenario, agents = await make_world(tag)
    variables = start_input(scenario, agents, MODEL, tag=tag, humanSeats=[0])
    episode_id, tokens = await start_with_seats(service.url, variables)
    before = await stored(service.url, episode_id)
    async with AppPage.open(browser, service.url, f"#/seat/{episode_id}/0?token=wrong") as tab:
        page = tab.page
        refused = page.locator(".seat-refused")
        await expect(refused).to_contain_text("not the token of this seat")
        await expect(page.locator(".act-form")).to_be_hidden()
        assert "wrong" not in page.url
        await snap(tab, shots, "seat-wrong-token")
        assert await stored(service.url, episode_id) == before

        await page.get_by_label("Seat token").fill(tokens[0])
        await page.get_by_role("button", name="Take the seat").click()
        await expect(page.locator(".me h2")).to_have_text(f"You are Ava0 {tag}")
        await expect(refused).to_have_count(0)
        await page.get_by_label("What you say or do").fill("Too early")
        await page.get_by_role("button", name="Send").click()  # QUEUED: not this seat's turn
        await expect(page.locator(".act-form [role=alert]").first).to_contain_text(
            "not waiting for this seat"
        )
        assert await stored(service.url, episode_id) == before

        await page.reload()  # the token is kept for this tab
        await expect(page.locator(".me h2")).to_have_text(f"You are Ava0 {tag}")
        assert await tab.clean() == []
    await post(service.url, CANCEL, {"id": episode_id})


async def test_pause_step_and_resume_from_the_episode_page_drive_the_status(
    browser: Any, service: Service, shots: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.delay = 0.5
    tag = unique("control")
    scenario, agents = await make_world(tag)
    variables = start_input(scenario, agents, MODEL, maxTurns=10, tag=tag)
    episode_id, _ = await start_with_seats(service.url, variables)
    async with AppPage.open(browser, service.url, f"#/episodes/{episode_id}") as tab:
        page = tab.page
        names = ("Pause", "Step", "Resume")
        pause, step, resume = (page.get_by_role("button", name=n) for n in names)
        await status_is(page, "QUEUED")
        await expect(pause).to_be_enabled()
        await expect(step).to_be_disabled()
        await expect(resume).to_be_disabled()
        await pause.click()
        await status_is(page, "PAUSED")
        await expect(page.locator(".progress")).to_contain_text("Paused after 0 of 10 turns")
        await expect(pause).to_be_disabled()
        await expect(resume).to_be_enabled()
        await snap(tab, shots, "episode-paused")
        with service.worker("control-worker"):
            await step.click()
            await expect(page.locator(TURNS)).to_have_count(1)
            await status_is(page, "PAUSED")
            await expect(page.locator(".progress")).to_contain_text("Paused after 1 of 10 turns")
            await page.wait_for_timeout(500)  # a worker that did not pause would play on
            assert len((await EpisodeLog.get(episode_id)).turns) == 1
            await resume.click()
            await status_is(page, "RUNNING")
            await expect(page.locator(TURNS).nth(1)).to_be_attached()
            await pause.click()  # a running episode pauses before its next turn
            await status_is(page, "PAUSED")
            paused_at = len((await EpisodeLog.get(episode_id)).turns)
            assert 2 <= paused_at < 10
            await expect(page.locator(TURNS)).to_have_count(paused_at)
            await resume.click()
            await completed(tab)
        await expect(page.locator(TURNS)).to_have_count(10)
        await expect(page.get_by_role("button", name="Pause")).to_have_count(0)
        assert await tab.clean() == []
    record = await stored(service.url, episode_id)
    assert [h["status"] for h in record["statusHistory"]].count("PAUSED") == 3
    assert len(record["turns"]) == 10


class HeldBack:
    """Forwards the server's websocket frames to the page, except while held: then they wait,
    so the page shows a status the episode has already left."""

    def __init__(self) -> None:
        self.holding = False
        self.waiting: list[tuple[WebSocketRoute, str | bytes]] = []

    async def route(self, page: Page) -> None:
        await page.route_web_socket(re.compile(r"/graphql$"), self._connect)

    def _connect(self, ws: WebSocketRoute) -> None:
        server = ws.connect_to_server()
        server.on_message(lambda message: self._to_page(ws, message))

    def _to_page(self, ws: WebSocketRoute, message: str | bytes) -> None:
        if self.holding:
            self.waiting.append((ws, message))
        else:
            ws.send(message)

    def release(self) -> None:
        self.holding = False
        for ws, message in self.waiting:
            ws.send(message)
        self.waiting.clear()


async def test_a_control_that_makes_no_sense_now_is_refused_on_the_page(
    browser: Any, service: Service, fake_llm: FakeLLM
) -> None:
    tag = unique("refused")
    scenario, agents = await make_world(tag)
    episode_id, _ = await start_with_seats(service.url, start_input(scenario, agents, MODEL))
    held = HeldBack()
    async with AppPage.open(browser, service.url, "#/nowhere") as tab:  # no stream yet
        page = tab.page
        await expect(page.locator("main h1")).to_have_text("Not found")
        await held.route(page)
        await tab.go(f"#/episodes/{episode_id}")
        await status_is(page, "QUEUED")
        await page.get_by_role("button", name="Pause").click()
        await status_is(page, "PAUSED")
        held.holding = True
        await post(service.url, RESUME, {"id": episode_id})  # elsewhere: the page cannot know
        before = await stored(service.url, episode_id)
        await page.get_by_role("button", name="Resume").click()
        await expect(page.locator(".control-note [role=alert]")).to_contain_text(
            "the episode is QUEUED"
        )
        assert await stored(service.url, episode_id) == before
        held.release()
        await status_is(page, "QUEUED")
        await post(service.url, CANCEL, {"id": episode_id})
        await status_is(page, "CANCELLED")
        await expect(page.get_by_role("button", name="Resume")).to_have_count(0)
        await expect(page.locator(".inject-form")).to_be_hidden()
        assert await tab.clean() == []


async def test_an_environment_message_injected_from_the_page_is_in_the_transcript(
    browser: Any, service: Service, shots: Path, fake_llm: FakeLLM
) -> None:
    tag = unique("inject")
    scenario, agents = await make_world(tag)
    first, second = f"Ava0 {tag}", f"Ava1 {tag}"
    variables = start_input(scenario, agents, MODEL, maxTurns=2, tag=tag)
    episode_id, _ = await start_with_seats(service.url, variables)
    async with AppPage.open(browser, service.url, f"#/episodes/{episode_id}") as tab:
        page = tab.page
        await page.get_by_role("button", name="Pause").click()
        await status_is(page, "PAUSED")
        await page.get_by_label("Message", exact=True).fill("A fire alarm rings.")
        await page.get_by_role("button", name="Inject").click()
        environment = page.locator(".transcript .turn.environment")
        await expect(environment).to_have_count(1)
        await expect(environment).to_contain_text("A fire alarm rings.")
        await expect(page.get_by_label("Message", exact=True)).to_have_value("")
        await page.get_by_label("Message", exact=True).fill("Only you smell smoke.")
        await page.locator(".inject-form").get_by_label(second, exact=True).check()
        await page.get_by_role("button", name="Inject").click()
        await expect(environment).to_have_count(2)
        await expect(environment.nth(1)).to_contain_text(f"privately to {second}")
        await page.get_by_label("Message", exact=True).fill("   ")
        await page.get_by_role("button", name="Inject").click()
        await expect(page.locator(".inject-form .form-errors p")).not_to_be_empty()
        await expect(environment).to_have_count(2)
        await snap(tab, shots, "episode-injected")
        with service.worker("inject-worker"):
            await page.get_by_role("button", name="Resume").click()
            await completed(tab)
        await expect(environment).to_have_count(2)
        await expect(page.locator(TURNS)).to_have_count(4)
        await page.get_by_label("View as").select_option(label=first)
        await expect(page.locator(".transcript")).to_have_attribute("data-view", "0")
        await expect(environment).to_have_count(1)  # the private one was not for the first
        assert await tab.clean() == []
    record = await stored(service.url, episode_id)
    assert [(m["text"], m["to"]) for m in record["environmentMessages"]] == [
        ("A fire alarm rings.", []),
        ("Only you smell smoke.", [second]),
    ]
    assert all(m["turn"] == 0 for m in record["environmentMessages"])


async def test_the_perspective_switch_hides_another_agents_private_message(
    browser: Any, service: Service, shots: Path, fake_llm: FakeLLM
) -> None:
    tag = unique("perspective")
    scenario, agents = await make_world(tag, agents=3)
    one, two, three = (f"Ava{i} {tag}" for i in range(3))
    fake_llm.add_rule(Rule.action(three, "speak", "Keep this between us.", to=[one]))
    variables = start_input(scenario, agents, MODEL, maxTurns=3, tag=tag)
    episode_id, _ = await start_with_seats(service.url, variables)
    async with AppPage.open(browser, service.url, f"#/episodes/{episode_id}") as tab:
        page = tab.page
        with service.worker("perspective-worker"):
            await completed(tab)
        secret = page.locator(".transcript li", has_text="Keep this between us.")
        await expect(page.locator(".transcript")).to_have_attribute("data-view", "everyone")
        await expect(page.locator(TURNS)).to_have_count(3)
        await expect(secret).to_have_count(1)
        view = page.get_by_label("View as")
        await view.select_option(label=two)
        await expect(page.locator(".transcript")).to_have_attribute("data-view", "1")
        await expect(page.locator("#transcript-title")).to_have_text(f"Transcript as {two} saw it")
        await expect(page.locator(TURNS)).to_have_count(2)
        await expect(secret).to_have_count(0)
        await snap(tab, shots, "episode-perspective")
        for seat, name in ((0, one), (2, three)):
            await view.select_option(label=name)
            await expect(page.locator(".transcript")).to_have_attribute("data-view", str(seat))
            await expect(page.locator(TURNS)).to_have_count(3)
            await expect(secret).to_have_count(1)
        await view.select_option(label="everyone (all that happened)")
        await expect(page.locator(".transcript")).to_have_attribute("data-view", "everyone")
        await expect(page.locator(TURNS)).to_have_count(3)
        assert await tab.clean() == []
    turns = (await episode(service.url, episode_id))["turns"]
    assert [t["argument"] for t in turns][2] == "Keep this between us."


async def test_a_participant_needs_no_api_token_and_reaches_only_their_seat(
    browser: Any, redis_url: str, redis_client: Any, tmp_path: Path, shots: Path, fake_llm: FakeLLM
) -> None:
    tag = unique("seat-only")
    async with (
        locked_with_a_seat(redis_url, tmp_path, tag, fake_llm.model_name()) as seat,
        AppPage.open(browser, seat.url, seat.page(seat.token)) as tab,
    ):
        page = tab.page
        await expect(page.locator(".me h2")).to_have_text(f"You are Ava1 {tag}")
        await expect(page.locator("main h1")).to_have_attribute("data-status", "QUEUED")
        assert await page.get_by_role("heading", name="A token is needed").count() == 0
        await page.get_by_label("What you say or do").fill("Hello")
        await page.get_by_role("button", name="Send").click()
        await expect(page.locator(".act-form [role=alert]").first).to_contain_text(
            "not waiting for this seat"
        )
        sent = {h.get("authorization") for h in await tab.graphql_posts()}
        assert sent == {f"Seat {seat.token}"}
        assert tab.connection_inits() == [{"seatToken": seat.token}]
        await snap(tab, shots, "seat-page-seat-token-only")
        await tab.go("#/")  # the rest of the app needs an API token
        await expect(page.get_by_role("heading", name="A token is needed")).to_be_visible()
        assert tab.foreign_requests() == [] and await tab.csp_violations() == []


async def test_a_seat_token_a_locked_server_does_not_know_is_refused_on_the_seat_page(
    browser: Any, redis_url: str, tmp_path: Path, fake_llm: FakeLLM
) -> None:
    """The server answers such a seat credential 401, as a wrong bearer token: the seat page
    says the link is not valid (all a tab without an API token may learn) and asks for the
    seat's token, not for an API token."""
    tag = unique("seat-unknown")
    async with (
        locked_with_a_seat(redis_url, tmp_path, tag, fake_llm.model_name()) as seat,
        AppPage.open(browser, seat.url, seat.page("made-up")) as tab,
    ):
        page = tab.page
        await expect(page.locator(".seat-refused")).to_contain_text("This link is not valid")
        assert await page.get_by_role("heading", name="A token is needed").count() == 0
        await page.get_by_label("Seat token").fill(seat.token)
        await page.get_by_role("button", name="Take the seat").click()
        await expect(page.locator(".me h2")).to_have_text(f"You are Ava1 {tag}")
        assert await tab.clean() == []


async def test_a_participant_with_a_seat_token_alone_sees_their_own_scores(
    browser: Any, redis_url: str, tmp_path: Path, fake_llm: FakeLLM
) -> None:
    tag = unique("seat-scores")
    model = fake_llm.model_name()
    async with serve(redis_url, tmp_path, tokens="alpha", worker=True) as url:
        episode_id, token = await seat_one_started(url, tag, model, maxTurns=2)
        async with AppPage.open(browser, url, f"#/seat/{episode_id}/1?token={token}") as tab:
            page = tab.page
            await play(page, "Hello from the only seat I hold.")
            await status_is(page, "COMPLETED", 60_000)
            charts = page.locator("figure.scores")
            await expect(charts).to_have_count(1)  # its own: the others' come with the episode
            await expect(charts.first).to_have_class(re.compile("yours"))
            await expect(charts.first).to_contain_text(f"Ava1 {tag}")
            sent = {h.get("authorization") for h in await tab.graphql_posts()}
            assert sent == {f"Seat {token}"}
            assert tab.foreign_requests() == [] and await tab.csp_violations() == []


@pytest.mark.slow
@pytest.mark.timeout(900)
async def test_a_person_plays_against_the_embedded_model_to_the_scores(
    browser: Any, service: Service, shots: Path
) -> None:
    tag = unique("local-seat")
    async with AppPage.open(browser, service.url, "#/start") as tab:
        page = tab.page
        episode_id = await start_from_the_form(tab, LOCAL_MODEL, 2, tag)
        await page.get_by_role("button", name="Open seat 1").click()
        await page.wait_for_url(re.compile(f"#/seat/{episode_id}/0$"))
        with service.worker("local-worker"):
            await play(page, "Hello, is the van still for sale?")
            await status_is(page, "COMPLETED", 600_000)
        await expect(page.locator("figure.scores")).to_have_count(2)
        await snap(tab, shots, "seat-page-local-model")
        assert await tab.clean() == []
    record = await episode(service.url, episode_id)
    assert record["status"] == "COMPLETED", record["error"]
    assert record["agentModels"][1] == LOCAL_MODEL and record["judgeModel"] == LOCAL_MODEL
    assert [t["speaker"] for t in record["turns"]] == ["Tobias Hale", "Marisol Quintero"]
    assert record["turns"][0]["argument"] == "Hello, is the van still for sale?"
    assert len(record["rewards"]) == 2


async def test_a_participant_sees_their_own_scores_on_the_ranges_of_the_episodes_list(
    browser: Any, redis_url: str, tmp_path: Path, fake_llm: FakeLLM
) -> None:
    """A tab with a seat token alone drew its agent's scores with Sotopia's ranges whatever
    the episode's dimension list: a courtesy of 50 on 0..100 was shown full, as "50 (0..50)"
    (the episode page and a tab with an API token read the list's ranges)."""
    tag = unique("seat-custom")
    model = fake_llm.model_name()
    dimensions = [
        {"name": "courtesy", "description": "How courteous", "rangeLow": 0, "rangeHigh": 100}
    ]
    async with serve(redis_url, tmp_path, tokens="alpha", worker=True) as url:
        listed = await graphql(
            url, CREATE_DIMENSION_LIST, {"input": {"name": tag, "dimensions": dimensions}}, "alpha"
        )
        dimension_list = listed["createEvaluationDimensionList"]["evaluationDimensionList"]["id"]
        episode_id, token = await seat_one_started(
            url, tag, model, maxTurns=2, evaluationDimensionListId=dimension_list
        )
        async with AppPage.open(browser, url, f"#/seat/{episode_id}/1?token={token}") as tab:
            page = tab.page
            await play(page, "Hello from the only seat I hold.")
            await status_is(page, "COMPLETED", 60_000)
            chart = page.locator("figure.scores.yours")
            await expect(chart).to_have_count(1)
            score = chart.locator('g.dimension[data-dimension="courtesy"] .score')
            await expect(score).to_have_text("50 (0..100)")
