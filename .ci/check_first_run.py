"""Check a service started by the README's run command: GraphQL answers on the sample data; the
GraphiQL page renders in headless Chromium, requests nothing from elsewhere and runs a query; and
the web app at `/` starts a short simulation on the sample data with the default model and shows
it to its scores.

    python .ci/check_first_run.py http://127.0.0.1:PORT [--screenshot graphiql.png]

Run from the repository root with it on PYTHONPATH (it drives the page with tests/browser.py).
"""

import argparse
import asyncio
import json
import sys
import urllib.request
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, expect
from playwright.async_api import Error as PlaywrightError

from tests.support.browser import AppPage, GraphiQLPage, chromium, launch

QUERY = "{ agents { totalCount } }"
FIRST_EPISODE_MS = 600_000
"""How long the first episode may take: the embedded model starts on first use."""


def post(base_url: str, query: str) -> dict[str, Any]:
    request = urllib.request.Request(
        base_url + "/graphql",
        data=json.dumps({"query": query}).encode(),
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        body: dict[str, Any] = json.loads(response.read())
    return body


def check_http(base_url: str) -> int:
    body = post(base_url, QUERY)
    count = (body.get("data") or {}).get("agents", {}).get("totalCount")
    if not isinstance(count, int) or count <= 0:
        raise AssertionError(f"expected sample agents, got {body}")
    return count


async def check_app(browser: Browser, base_url: str) -> int:
    """Start a two-turn simulation from the app's form and watch it to its scores."""
    async with AppPage.open(browser, base_url, "#/start") as tab:
        page = tab.page
        await page.get_by_label("used_van_sale", exact=False).check()
        await page.get_by_label("Marisol Quintero").check()
        await page.get_by_label("Tobias Hale").check()
        await page.get_by_label("Turn limit").fill("2")
        await page.get_by_role("button", name="Start simulation").click()
        await expect(page.locator("main h1")).to_have_attribute(
            "data-status", "COMPLETED", timeout=FIRST_EPISODE_MS
        )
        await expect(page.locator("figure.scores")).to_have_count(2)
        turns = await page.locator(".transcript li").count()
        problems = await tab.clean()
        if problems or turns == 0:
            raise AssertionError(f"the app showed {turns} turns and reported {problems}")
        return turns


async def check_page(base_url: str, screenshot: Path | None) -> tuple[int, int]:
    executable = chromium()
    if executable is None:
        raise AssertionError("Chromium is not installed")
    async with launch(executable) as browser:
        return await check_graphiql(browser, base_url, screenshot), await check_app(
            browser, base_url
        )


async def check_graphiql(browser: Browser, base_url: str, screenshot: Path | None) -> int:
    async with GraphiQLPage.open(browser, base_url) as tab:
        await tab.type_query(QUERY)
        response = await tab.run(expect='"totalCount"')
        if screenshot:
            await tab.page.screenshot(path=screenshot)
        if json.loads(response)["data"]["agents"]["totalCount"] <= 0:
            raise AssertionError(f"the page's query found no agents: {response}")
        foreign = tab.foreign_requests()
        if foreign:
            raise AssertionError(f"the page requested other hosts: {foreign}")
        violations = await tab.csp_violations()
        if violations or tab.errors:
            raise AssertionError(f"the page reported {violations} {tab.errors}")
        return len(tab.requests)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Check a first run of the service.")
    parser.add_argument("base_url")
    parser.add_argument("--screenshot", type=Path)
    args = parser.parse_args(argv)
    base_url = args.base_url.rstrip("/")
    try:
        count = check_http(base_url)
        requests, turns = asyncio.run(check_page(base_url, args.screenshot))
    except (AssertionError, OSError, PlaywrightError) as err:
        print(f"first run: FAILED: {err}", file=sys.stderr)
        return 1
    print(f"first run: {count} sample agents over HTTP; GraphiQL rendered, ran the query, and")
    print(f"first run: made {requests} requests, all to {base_url}")
    print(f"first run: the web app played a simulation of {turns} turns to its scores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
