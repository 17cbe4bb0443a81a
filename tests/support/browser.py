"""Headless Chromium through Playwright, and the GraphiQL page driven as a person would."""

import json
import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.async_api import (
    Browser,
    ConsoleMessage,
    Page,
    Request,
    Response,
    WebSocket,
    async_playwright,
)
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
WAIT_MS = 30_000
"""How long the page may take to show something (a first load parses 4 MB of script)."""

RECORD_CSP_VIOLATIONS = """
window.cspViolations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.cspViolations.push(event.violatedDirective + " " + event.blockedURI);
});
"""
EDITOR_VALUE = "(selector) => document.querySelector(selector).CodeMirror.getValue()"
CLEAR_EDITOR = "(selector) => document.querySelector(selector)?.CodeMirror.setValue('')"
RESPONSE_HAS = """([selector, text]) => {
  const editor = document.querySelector(selector);
  return editor !== null && editor.CodeMirror.getValue().includes(text);
}"""
QUERY_EDITOR = ".graphiql-query-editor .CodeMirror"
HEADERS_EDITOR = ".graphiql-editor-tool .graphiql-editor:not(.hidden) .CodeMirror"
RESPONSE = ".result-window .CodeMirror"


def chromium() -> str | None:
    """The installed Chromium (Debian's `chromium`), if any."""
    return shutil.which("chromium")


@asynccontextmanager
async def launch(executable: str) -> AsyncIterator[Browser]:
    """Chromium with its own fresh profile (Playwright makes a new user data dir per launch)."""
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=executable, headless=True, args=CHROMIUM_FLAGS
        )
        try:
            yield browser
        finally:
            await browser.close()


@asynccontextmanager
async def browser_for_tests() -> AsyncIterator[Browser]:
    """The installed Chromium, launched; the test is skipped without one, or fails when
    PARLEY_REQUIRE_BROWSER=1 (as in CI) says it must run."""
    executable = chromium()
    if executable is None:
        reason = "Chromium is not installed (Debian: apt-get install chromium)"
        if os.environ.get("PARLEY_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{reason}, and PARLEY_REQUIRE_BROWSER=1 requires it")
        pytest.skip(reason)
    async with launch(executable) as launched:
        yield launched


def same_origin(url: str, origin: str) -> bool:
    """Whether `url` (http(s) or ws(s)) goes to `origin`'s host and port; data: URLs stay local."""
    if url.startswith("data:"):
        return True
    target, home = urlsplit(url), urlsplit(origin)
    return target.netloc == home.netloc and target.scheme in {"http", "https", "ws", "wss"}


class GraphiQLPage:
    """One browser tab on the GraphiQL page, recording every request and websocket frame it
    makes; requests to any other origin are aborted (and recorded) so none leaves the host."""

    def __init__(self, page: Page, origin: str) -> None:
        self.page = page
        self.origin = origin
        self.requests: list[Request] = []
        self.websockets: list[str] = []
        self.sent_frames: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self.console_errors: list[str] = []
        """What the page logged as an error to the console (a refused request shows there)."""
        self.failed: list[tuple[int, str]] = []
        """The status and address of every request answered 400 or more, or not answered (0)."""
        page.on("request", self._on_request)
        page.on("websocket", self._on_websocket)
        page.on("pageerror", self._on_error)
        page.on("console", self._on_console)
        page.on("response", self._on_response)
        page.on("requestfailed", lambda request: self.failed.append((0, request.url)))

    @classmethod
    @asynccontextmanager
    async def open(cls, browser: Browser, origin: str) -> AsyncIterator["GraphiQLPage"]:
        context = await browser.new_context()
        try:
            await context.add_init_script(RECORD_CSP_VIOLATIONS)
            await context.route("**/*", lambda route: cls._local_only(route, origin))
            tab = cls(await context.new_page(), origin)
            await tab.page.goto(origin + "/graphql", wait_until="load")
            try:
                await tab.page.wait_for_selector(QUERY_EDITOR, timeout=WAIT_MS)
            except PlaywrightTimeoutError:
                foreign, errors = tab.foreign_requests(), tab.errors
                raise AssertionError(
                    f"the editor did not render (requests elsewhere: {foreign}, errors: {errors})"
                ) from None
            yield tab
        finally:
            await context.close()

    @staticmethod
    async def _local_only(route: Any, origin: str) -> None:
        if same_origin(route.request.url, origin):
            await route.continue_()
        else:
            await route.abort()

    def _on_request(self, request: Request) -> None:
        self.requests.append(request)

    def _on_error(self, error: Exception) -> None:
        self.errors.append(str(error))

    def _on_console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.console_errors.append(f"{message.text} ({message.location.get('url', '')})")

    def _on_response(self, response: Response) -> None:
        if response.status >= 400:
            self.failed.append((response.status, response.url))

    def _on_websocket(self, websocket: WebSocket) -> None:
        self.websockets.append(websocket.url)
        websocket.on("framesent", self._on_frame)

    def _on_frame(self, payload: str | bytes) -> None:
        try:
            frame = json.loads(payload)
        except ValueError:
            return
        if isinstance(frame, dict):
            self.sent_frames.append(frame)

    def foreign_requests(self) -> list[str]:
        """Every request or websocket the page made to anywhere but the service."""
        urls = [r.url for r in self.requests] + self.websockets
        return [url for url in urls if not same_origin(url, self.origin)]

    async def csp_violations(self) -> list[str]:
        violations: list[str] = await self.page.evaluate("window.cspViolations")
        return violations

    async def editor_text(self, selector: str = QUERY_EDITOR) -> str:
        text: str = await self.page.evaluate(EDITOR_VALUE, selector)
        return text

    async def _replace(self, selector: str, text: str) -> None:
        await self.page.click(selector)
        await self.page.keyboard.press("Control+A")
        await self.page.keyboard.press("Delete")
        await self.page.keyboard.insert_text(text)

    async def type_query(self, query: str) -> None:
        await self._replace(QUERY_EDITOR, query)

    async def type_headers(self, headers: dict[str, str]) -> None:
        await self.page.get_by_role("button", name="Headers").click()
        await self._replace(HEADERS_EDITOR, json.dumps(headers))

    async def run(self, expect: str) -> str:
        """Press the run button and wait for a response that contains `expect`; the response."""
        await self.page.evaluate(CLEAR_EDITOR, RESPONSE)  # so an earlier answer cannot match
        await self.page.click(".graphiql-execute-button")
        await self.page.wait_for_function(RESPONSE_HAS, arg=[RESPONSE, expect], timeout=WAIT_MS)
        return await self.editor_text(RESPONSE)

    def connection_inits(self) -> list[Any]:
        """The payloads of the graphql-transport-ws `connection_init` frames sent so far."""
        return [f.get("payload") for f in self.sent_frames if f.get("type") == "connection_init"]

    async def graphql_posts(self) -> list[dict[str, str]]:
        """The headers of each GraphQL POST the page sent."""
        posts = [r for r in self.requests if r.method == "POST" and r.url.endswith("/graphql")]
        return [await r.all_headers() for r in posts]


async def choose(page: Page, label: str, name: str) -> None:
    """Pick `name` in the web app's choice box labelled `label` as a person does: type it, then
    click its match in the list the server's answer fills."""
    box = page.get_by_label(label, exact=True)
    await box.fill(name)
    matches = page.locator("#" + str(await box.get_attribute("aria-controls")))
    await matches.get_by_role("option", name=name, exact=True).click()


PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}


class AppPage(GraphiQLPage):
    """One tab on Parley's web app at `/`, recording requests and frames like GraphiQLPage."""

    @classmethod
    @asynccontextmanager
    async def open(
        cls, browser: Browser, origin: str, route: str = "", viewport: dict[str, int] = DESKTOP
    ) -> AsyncIterator["AppPage"]:
        context = await browser.new_context(viewport=viewport)  # type: ignore[arg-type]
        try:
            await context.add_init_script(RECORD_CSP_VIOLATIONS)
            await context.route("**/*", lambda route: cls._local_only(route, origin))
            tab = cls(await context.new_page(), origin)
            await tab.page.goto(origin + "/" + route, wait_until="load")
            yield tab
        finally:
            await context.close()

    async def go(self, route: str) -> None:
        """Follow an in-app link (a hash route) as a click would, without reloading."""
        await self.page.evaluate("(route) => { location.hash = route; }", route)

    def subscribe_variables(self) -> list[dict[str, Any]]:
        """The variables of every graphql-transport-ws `subscribe` frame sent so far."""
        return [
            (f.get("payload") or {}).get("variables") or {}
            for f in self.sent_frames
            if f.get("type") == "subscribe"
        ]

    async def clean(self) -> list[str]:
        """Whatever went wrong on the page: requests elsewhere, CSP violations, script errors."""
        return self.foreign_requests() + await self.csp_violations() + self.errors
