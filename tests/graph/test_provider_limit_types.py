"""The providers' shared limits as GraphQL and the experiment page show them, read from the
allowance every process draws from."""

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, expect

from bench.support.fake_llm import FakeLLM
from bench.support.simulation import post
from parley.engine.shared_limit import ProviderLimits
from parley.storage import sample
from parley.storage.provider_limits import RedisAllowance
from tests.graph import test_webapp
from tests.graph.test_webapp import CREATE_EXPERIMENT, MODEL, OTHER_MODEL, comparing_design
from tests.graph.test_webapp_pages import PAGE_FAULTS
from tests.support.browser import DESKTOP, PHONE, AppPage
from tests.support.server import serve

browser = test_webapp.browser
LIMITS = """{ providerLimits { key models requestsPerMinute tokensPerMinute maxInFlight
  requestsThisMinute tokensThisMinute inFlight rateLimited heldFor } }"""


@pytest.fixture
async def limited(
    redis_url: str, redis_client: Any, fake_llm_server: FakeLLM, tmp_path: Path
) -> AsyncIterator[tuple[str, ProviderLimits]]:
    """The API with both fake models under one key's limits, drawn from three times (one 429)."""
    await sample.seed(redis_client)
    key = f"lab {uuid.uuid4().hex[:8]}"
    stated = {"requests_per_minute": 600, "max_in_flight": 4, "limit_key": key}
    entries = [
        {"name": name, "base_url": fake_llm_server.base_url, "model": "fake", **stated}
        for name in (MODEL, OTHER_MODEL)
    ]
    models = tmp_path / "models.json"
    models.write_text(json.dumps({"models": entries}))
    limits = ProviderLimits(key, requests_per_minute=600, max_in_flight=4)
    allowance = RedisAllowance(redis_client)
    for _ in range(3):
        while await allowance.admit(limits, 100) > 0:
            pass
    await allowance.penalize(limits, 30, rejected=True)
    async with serve(redis_url, tmp_path / "data", models_file=models) as url:
        yield url, limits


async def test_provider_limits_show_each_keys_allowance_in_use(
    limited: tuple[str, ProviderLimits],
) -> None:
    url, limits = limited
    [found] = (await post(url, LIMITS, {}))["providerLimits"]
    assert found["key"] == limits.key and found["models"] == [MODEL, OTHER_MODEL]
    assert (found["requestsPerMinute"], found["tokensPerMinute"], found["maxInFlight"]) == (
        600,
        None,
        4,
    )
    assert found["requestsThisMinute"] in (1, 2, 3)  # the minute may turn between them
    assert found["inFlight"] == 0 and found["rateLimited"] == 1 and found["heldFor"] > 20


async def test_the_experiment_page_shows_the_limits_at_both_widths(
    browser: Browser, limited: tuple[str, ProviderLimits]
) -> None:
    url, limits = limited
    design = comparing_design(seed=3, pairs=1)
    created = await post(
        url,
        CREATE_EXPERIMENT,
        {"input": {"name": f"limits {uuid.uuid4().hex[:6]}", "design": design}},
    )
    experiment_id = created["createExperiment"]["experiment"]["id"]
    for width, viewport in (("1280", DESKTOP), ("390", PHONE)):
        async with AppPage.open(browser, url, f"#/experiments/{experiment_id}", viewport) as tab:
            row = tab.page.locator("table.provider-limits tbody tr")
            await expect(row).to_have_count(1)
            await expect(row).to_contain_text(limits.key)
            await expect(row).to_contain_text(f"{MODEL}, {OTHER_MODEL}")
            await expect(row.locator("[data-label='In flight']")).to_contain_text("0 of 4")
            await expect(row.locator("[data-label='429s seen']")).to_contain_text("1")
            await expect(row.locator("[data-label='Requests this minute']")).to_contain_text(
                "of 600"
            )
            await tab.page.screenshot(path=f"/tmp/provider-limits-{width}.png", full_page=True)
            found = await tab.page.evaluate(PAGE_FAULTS)
            assert await tab.clean() == []
        assert found["overflow"] <= 0 and found["past"] == [], (width, found)
