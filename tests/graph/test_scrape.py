"""/metrics answers Prometheus's formats to who asks for them, and the JSON to everyone else."""

import asyncio
from types import SimpleNamespace

import httpx
import pytest
import redis.asyncio as redis
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as openmetrics_families,
)
from prometheus_client.parser import text_string_to_metric_families

from parley.graph import scrape as scrape_module
from parley.graph.scrape import UnknownFormat, chosen_format
from parley.storage.jobs import JobQueue

PROMETHEUS_2 = (
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
    "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
)
"""What Prometheus 2 sends when it scrapes."""
PROMETHEUS_3_TEXT = "text/plain;version=1.0.0;escaping=allow-utf-8;q=0.5,*/*;q=0.1"
BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
EVERY_METRIC = {
    "parley_model_calls",
    "parley_model_tokens",
    "parley_model_errors",
    "parley_turn_seconds",
    "parley_judge_seconds",
    "parley_lease_takeovers",
    "parley_subscription_deliveries",
    "parley_subscriptions",
    "parley_held_documents",
    "parley_episodes",
    "parley_queue_jobs",
    "parley_queue_lag_seconds",
    "parley_workers",
}


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        ("", "json"),
        ("*/*", "json"),
        (BROWSER, "json"),
        ("application/json", "json"),
        ("application/json, text/plain;q=0.5", "json"),
        ("text/plain", "prometheus"),
        ("text/plain;version=0.0.4", "prometheus"),
        ("application/openmetrics-text", "prometheus"),
        (PROMETHEUS_2, "prometheus"),
        (PROMETHEUS_3_TEXT, "prometheus"),
        ("application/json;q=0.2, TEXT/PLAIN;q=0.3", "prometheus"),
    ],
)
def test_the_accept_header_chooses_prometheus_only_when_it_prefers_it(
    accept: str, expected: str
) -> None:
    assert chosen_format(accept) == expected


def test_the_format_parameter_decides_outright() -> None:
    assert chosen_format("text/plain", ["json"]) == "json"
    assert chosen_format("*/*", ["prometheus"]) == "prometheus"
    with pytest.raises(UnknownFormat):
        chosen_format("", ["xml"])
    with pytest.raises(UnknownFormat):  # the last one won: JSON for a Prometheus scrape
        chosen_format("", ["prometheus", "json"])


async def test_a_prometheus_scrape_parses_and_the_json_stays(api_url: str) -> None:
    async with httpx.AsyncClient(base_url=api_url, timeout=30) as http:
        scraped = await http.get("/metrics", headers={"accept": "text/plain;version=0.0.4"})
        openmetrics = await http.get("/metrics", headers={"accept": PROMETHEUS_2})
        by_parameter = await http.get("/metrics", params={"format": "prometheus"})
        plain = await http.get("/metrics")
        refused = await http.get("/metrics", params={"format": "xml"})
        twice = await http.get("/metrics?format=prometheus&format=json")
    assert scraped.status_code == 200
    assert scraped.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert {f.name for f in text_string_to_metric_families(scraped.text)} >= EVERY_METRIC
    assert openmetrics.headers["content-type"].startswith("application/openmetrics-text")
    found = openmetrics_families(openmetrics.text)  # type: ignore[no-untyped-call]
    assert {f.name for f in found} >= EVERY_METRIC
    assert by_parameter.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert plain.headers["content-type"] == "application/json"
    assert {"subscribers", "documents_held_hits", "provider_limits"} <= set(plain.json())
    assert refused.status_code == 400 and "json or prometheus" in refused.text
    assert twice.status_code == 400 and "give format once" in twice.text


async def test_a_redis_that_never_answers_costs_the_scrape_its_figures_not_the_scrape(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1 << 16)  # takes the command, answers nothing
        await asyncio.sleep(3600)

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=None)
    hub = SimpleNamespace(subscriber_count=0)
    services = SimpleNamespace(
        client=client, jobs=JobQueue(client), hub=hub, documents=SimpleNamespace(hits=0, misses=0)
    )
    monkeypatch.setattr(scrape_module, "REDIS_SECONDS", 0.3)
    try:
        async with asyncio.timeout(5):
            response = await scrape_module.scrape("text/plain", services, 30.0)  # type: ignore[arg-type]
    finally:
        server.close()
        await client.aclose()
    names = {
        family.name for family in text_string_to_metric_families(bytes(response.body).decode())
    }
    assert "parley_model_calls" in names and "parley_episodes" not in names
