"""GraphiQL is served by the service itself: its pinned assets, and the page in a real Chromium
against a real uvicorn, with no request leaving the host."""

import asyncio
import re
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest
from playwright.async_api import Browser

from bench.support.fake_llm import FakeLLM
from parley.graph.ide import ASSETS, ASSETS_PATH
from scripts.update_assets import load, problems
from tests.support.browser import GraphiQLPage, browser_for_tests
from tests.support.server import WAIT, queued_episode, serve

TOKENS = "alpha,beta"
BROWSER_ACCEPT = "text/html,application/xhtml+xml,*/*;q=0.8"
QUERY = "{ __typename agents(first: 1) { totalCount } }"


async def raw_get(base_url: str, target: str) -> bytes:
    """A GET of `target` exactly as written (an HTTP client would resolve `..` itself)."""
    host, port = urlsplit(base_url).hostname, urlsplit(base_url).port
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(f"GET {target} HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n\r\n".encode())
    await writer.drain()
    async with asyncio.timeout(WAIT):
        answer = await reader.read()
    writer.close()
    return answer


def subscription(episode_id: str) -> str:
    return f'subscription {{ episodeStatus(id: "{episode_id}") {{ kind status }} }}'


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Browser]:
    async with browser_for_tests() as launched:
        yield launched


@pytest.fixture(scope="module")
async def open_api(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    async with serve(redis_url, tmp_path_factory.mktemp("graphiql-open"), tokens="") as url:
        yield url


@pytest.fixture(scope="module")
async def locked(redis_url: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    async with serve(redis_url, tmp_path_factory.mktemp("graphiql-locked"), tokens=TOKENS) as url:
        yield url


def test_the_shipped_assets_match_their_manifest() -> None:
    assert problems(ASSETS) == []
    names = [package["name"] for package in load(ASSETS)["packages"]]
    assert {"react", "react-dom", "graphiql"} <= set(names)


def test_a_changed_asset_no_longer_matches(tmp_path: Path) -> None:
    copy = tmp_path / "graphiql"
    copy.mkdir()
    for path in ASSETS.rglob("*"):
        if path.is_file():
            target = copy / path.relative_to(ASSETS)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    (copy / "react.production.min.js").write_text("tampered")
    (copy / "extra.js").write_text("")
    assert problems(copy) == [
        "react.production.min.js: does not match its recorded integrity",
        "extra.js: not in the manifest",
    ]


async def test_the_page_and_its_assets_need_no_token_but_queries_do(locked: str) -> None:
    async with httpx.AsyncClient(base_url=locked, timeout=30) as http:
        page = await http.get("/graphql", headers={"accept": BROWSER_ACCEPT})
        sources = re.findall(r'(?:src|href)="([^"]+)"', page.text)
        assets = [await http.get(source) for source in sources if source.startswith("/")]
        query = await http.post("/graphql", json={"query": QUERY})
    outside = await raw_get(locked, f"{ASSETS_PATH}/../graphql?query=%7B__typename%7D")
    assert page.status_code == 200
    assert "default-src 'none'" in page.headers["content-security-policy"]
    assert [s for s in sources if not s.startswith(("/", "data:"))] == []
    assert len(assets) >= 6 and all(a.status_code == 200 and a.content for a in assets)
    assert query.status_code == 401
    assert outside.startswith(b"HTTP/1.1 404") and b"Query" not in outside


async def test_graphiql_renders_offline_and_runs_a_query(
    browser: Browser, open_api: str, tmp_path: Path
) -> None:
    async with GraphiQLPage.open(browser, open_api) as tab:
        assert "agents" in await tab.editor_text()  # the default query
        await tab.type_query(QUERY)
        response = await tab.run(expect='"totalCount"')
        await tab.page.screenshot(path=tmp_path / "graphiql.png")
        assert '"__typename": "Query"' in response
        assert tab.foreign_requests() == []
        assert await tab.csp_violations() == []
        assert tab.errors == []
        loaded = {r.url.split("?")[0].rsplit("/", 1)[-1] for r in tab.requests}
        assert {"graphiql.min.js", "react.production.min.js", "graphiql.min.css"} <= loaded


async def test_a_subscription_from_the_page_receives_its_first_message(
    browser: Browser, open_api: str, fake_llm: FakeLLM
) -> None:
    tag = f"graphiql-{uuid.uuid4().hex[:8]}"
    async with (
        queued_episode(open_api, fake_llm.model_name(), tag) as episode_id,
        GraphiQLPage.open(browser, open_api) as tab,
    ):
        await tab.type_query(subscription(episode_id))
        response = await tab.run(expect="SNAPSHOT")
        assert '"status": "QUEUED"' in response
        assert tab.websockets == [open_api.replace("http://", "ws://") + "/graphql"]
        assert tab.foreign_requests() == []


async def test_a_token_in_the_headers_pane_reaches_http_and_the_websocket(
    browser: Browser, locked: str, fake_llm: FakeLLM
) -> None:
    tag = f"graphiql-{uuid.uuid4().hex[:8]}"
    async with (
        queued_episode(locked, fake_llm.model_name(), tag, token="beta") as episode_id,
        GraphiQLPage.open(browser, locked) as tab,
    ):
        await tab.type_headers({"Authorization": "Bearer alpha"})
        await tab.type_query(QUERY)
        response = await tab.run(expect='"totalCount"')
        assert '"__typename": "Query"' in response
        assert (await tab.graphql_posts())[-1]["authorization"] == "Bearer alpha"

        await tab.type_query(subscription(episode_id))
        response = await tab.run(expect="SNAPSHOT")
        assert '"status": "QUEUED"' in response
        assert tab.connection_inits()[-1]["Authorization"] == "Bearer alpha"
        assert tab.foreign_requests() == []


async def test_a_wrong_token_in_the_headers_pane_gets_the_error(
    browser: Browser, locked: str
) -> None:
    async with GraphiQLPage.open(browser, locked) as tab:
        await tab.type_headers({"Authorization": "Bearer gamma"})
        await tab.type_query(QUERY)
        response = await tab.run(expect="bearer token is required")
        assert "totalCount" not in response.split("required", 1)[1]
        assert (await tab.graphql_posts())[-1]["authorization"] == "Bearer gamma"

        await tab.type_query(subscription("no-such-episode"))
        response = await tab.run(expect="4403")
        assert "no episode" not in response
        assert tab.connection_inits()[-1]["Authorization"] == "Bearer gamma"
