"""The providers' shared limits as GraphQL and the experiment page show them, read from the
allowance every process draws from."""

import json
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, expect

from bench.support.fake_llm import FakeLLM
from bench.support.simulation import post
from parley.engine.shared_limit import ProviderLimits
from parley.storage import sample
from parley.storage.provider_limits import RedisAllowance, admit
from tests.graph import test_webapp
from tests.graph.test_webapp import CREATE_EXPERIMENT, MODEL, OTHER_MODEL, comparing_design
from tests.graph.test_webapp_pages import PAGE_FAULTS
from tests.support.browser import DESKTOP, PHONE, AppPage
from tests.support.server import serve

browser = test_webapp.browser
LIMITS = """{ providerLimits { key models requestsPerMinute tokensPerMinute maxInFlight
  requestsThisMinute tokensThisMinute inFlight rateLimited heldFor } }"""


@dataclass
class Limited:
    url: str
    limits: ProviderLimits
    charged: list[float]
    """The server's time of each request charged to the key (epoch seconds)."""


@pytest.fixture
async def limited(
    redis_url: str, redis_client: Any, fake_llm_server: FakeLLM, tmp_path: Path
) -> AsyncIterator[Limited]:
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
    charged = []
    for _ in range(3):
        while (admission := await admit(redis_client, limits, 100)).wait > 0:
            pass
        charged.append(admission.at)
    await RedisAllowance(redis_client).penalize(limits, 30, rejected=True)
    async with serve(redis_url, tmp_path / "data", models_file=models) as url:
        yield Limited(url, limits, charged)


async def server_minute(client: Any) -> int:
    seconds, _ = await client.time()
    return int(seconds) // 60


async def test_provider_limits_show_each_keys_allowance_in_use(
    limited: Limited, redis_client: Any
) -> None:
    url, limits = limited.url, limited.limits
    while True:  # read within one minute of the server's clock, to know which requests count
        minute = await server_minute(redis_client)
        [found] = (await post(url, LIMITS, {}))["providerLimits"]
        if await server_minute(redis_client) == minute:
            break
    this_minute = sum(1 for at in limited.charged if int(at) // 60 == minute)
    assert found["key"] == limits.key and found["models"] == [MODEL, OTHER_MODEL]
    assert (found["requestsPerMinute"], found["tokensPerMinute"], found["maxInFlight"]) == (
        600,
        None,
        4,
    )
    assert found["requestsThisMinute"] == this_minute  # 0 to 3: the minute may have turned
    assert found["inFlight"] == 0 and found["rateLimited"] == 1 and found["heldFor"] > 20


async def test_the_experiment_page_shows_the_limits_at_both_widths(
    browser: Browser, limited: Limited, tmp_path: Path
) -> None:
    url, limits = limited.url, limited.limits
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
            await tab.page.screenshot(
                path=tmp_path / f"provider-limits-{width}.png", full_page=True
            )
            found = await tab.page.evaluate(PAGE_FAULTS)
            assert await tab.clean() == []
        assert found["overflow"] <= 0 and found["past"] == [], (width, found)
