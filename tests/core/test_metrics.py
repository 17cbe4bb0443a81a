"""The metrics: what each recording function counts, the exposition Prometheus's parsers read,
and the multiprocess mode adding up the processes that share a directory."""

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest
from prometheus_client import REGISTRY
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as openmetrics_families,
)
from prometheus_client.parser import text_string_to_metric_families

from parley.core import metrics
from parley.core.metrics import ApiFigures, Scraped, Shared
from parley.storage.embedded import free_port

PROMETHEUS = "text/plain;version=0.0.4"
OPENMETRICS = "application/openmetrics-text;version=1.0.0"
RECORDED = {
    "parley_model_calls": "counter",
    "parley_model_tokens": "counter",
    "parley_model_errors": "counter",
    "parley_turn_seconds": "histogram",
    "parley_judge_seconds": "histogram",
    "parley_lease_takeovers": "counter",
    "parley_subscription_deliveries": "counter",
}
SCRAPED = {
    "parley_subscriptions": "gauge",
    "parley_held_documents": "counter",
    "parley_episodes": "gauge",
    "parley_queue_jobs": "gauge",
    "parley_queue_lag_seconds": "gauge",
    "parley_workers": "gauge",
}
SHARED = Shared({"QUEUED": 2, "COMPLETED": 5}, waiting=2, running=1, lag_seconds=1.5, workers=3)


@pytest.fixture(autouse=True)
def own_model_labels(monkeypatch: pytest.MonkeyPatch) -> None:
    """A table of model labels of the test's own: the session's earlier tests may have filled
    the cap, and a model past it is counted as `other`."""
    monkeypatch.setattr(metrics, "_models", {})


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def tokens(prompt: int, completion: int) -> SimpleNamespace:
    return SimpleNamespace(prompt_tokens=prompt, completion_tokens=completion)


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a text-format exposition, by its name and labels."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_an_answer_counts_a_call_and_its_tokens_and_a_failure_its_code() -> None:
    model = "custom/m@http://127.0.0.1:1/v1"
    calls, prompt = (
        value("parley_model_calls_total", model=model),
        value("parley_model_tokens_total", model=model, kind="prompt"),
    )
    metrics.model_answered(model, tokens(30, 7))
    metrics.model_failed(model, "timeout")
    metrics.model_failed(model, "no_choices", tokens(5, 0))
    assert value("parley_model_calls_total", model=model) == calls + 3
    assert value("parley_model_tokens_total", model=model, kind="prompt") == prompt + 35
    assert value("parley_model_errors_total", model=model, code="timeout") >= 1
    assert value("parley_model_errors_total", model=model, code="no_choices") >= 1


def test_a_model_label_has_no_credentials_and_their_number_is_capped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(metrics, "MODEL_LABELS", 2)
    assert metrics.model_label("custom/m@https://user:secret@host/v1?key=k") == (
        "custom/m@https://host/v1"
    )
    assert metrics.model_label("gpt-4o-mini") == "gpt-4o-mini"
    assert metrics.model_label("custom/third@http://x/v1") == metrics.OTHER
    assert metrics.model_label("gpt-4o-mini") == "gpt-4o-mini"  # known ones keep theirs
    assert len(metrics._models) == 2  # the names past the cap are not kept


def test_the_turn_clock_times_each_turn_once_whatever_its_seats() -> None:
    count = value("parley_turn_seconds_count")
    clock = metrics.TurnClock()
    for turn in (0, 1, 1, 2):  # turn 1 is simultaneous: two seats handed over
        clock.lap(turn)
    assert value("parley_turn_seconds_count") == count + 3


async def test_a_judge_run_is_timed_even_when_it_raises() -> None:
    count = value("parley_judge_seconds_count", model="judge-m")

    async def fails() -> None:
        await asyncio.sleep(0.01)
        raise RuntimeError("no scores")

    assert await metrics.judge_run("judge-m", asyncio.sleep(0, "scored")) == "scored"
    with pytest.raises(RuntimeError):
        await metrics.judge_run("judge-m", fails())
    assert value("parley_judge_seconds_count", model="judge-m") == count + 2
    assert value("parley_judge_seconds_sum", model="judge-m") >= 0.01


def test_takeovers_and_deliveries_are_counted() -> None:
    takeovers, deliveries = (
        value("parley_lease_takeovers_total"),
        value("parley_subscription_deliveries_total"),
    )
    metrics.took_over()
    metrics.delivered()
    metrics.delivered()
    assert value("parley_lease_takeovers_total") == takeovers + 1
    assert value("parley_subscription_deliveries_total") == deliveries + 2


def test_the_exposition_parses_and_holds_every_metric() -> None:
    body, content_type = metrics.exposition(PROMETHEUS, Scraped(SHARED, ApiFigures(4, 10, 3)))
    assert content_type == "text/plain; version=0.0.4; charset=utf-8"
    families = {f.name: f.type for f in text_string_to_metric_families(body.decode())}
    assert {**RECORDED, **SCRAPED}.items() <= families.items()
    found = samples(body.decode())
    assert found[("parley_episodes", (("status", "QUEUED"),))] == 2
    assert found[("parley_queue_jobs", (("state", "running"),))] == 1
    assert found[("parley_queue_lag_seconds", ())] == 1.5
    assert found[("parley_workers", ())] == 3
    assert found[("parley_subscriptions", ())] == 4
    assert found[("parley_held_documents_total", (("result", "miss"),))] == 3
    assert ("process_cpu_seconds_total", ()) in found  # the library's own, one process


def test_openmetrics_is_sent_to_who_asks_for_it_and_parses() -> None:
    body, content_type = metrics.exposition(OPENMETRICS, Scraped(SHARED, ApiFigures(0, 0, 0)))
    assert content_type.startswith("application/openmetrics-text; version=1.0.0")
    names = {f.name for f in openmetrics_families(body.decode())}  # type: ignore[no-untyped-call]
    assert set(RECORDED) | set(SCRAPED) <= names


@pytest.mark.parametrize(
    ("accept", "sent"),
    [
        ('application/openmetrics-text;version="1.0.0"', "application/openmetrics-text"),
        ("application/openmetrics-text;version=99", "application/openmetrics-text"),
        (
            "application/openmetrics-text;version=abc, text/plain;q=0.5",
            "application/openmetrics-text",
        ),
        ("application/openmetrics-text;q=0, text/plain", "text/plain"),
        ("text/plain;version=a.b", "text/plain"),
        ("text/plain;version=1.0.0;escaping=allow-utf-8", "text/plain"),
        ("*/*", "text/plain"),
    ],
)
def test_any_accept_header_gets_one_of_the_two_promised_formats(accept: str, sent: str) -> None:
    """prometheus_client's own reading raised on a quoted or malformed version (a 500) and
    echoed versions it was never asked to support."""
    body, content_type = metrics.exposition(accept, Scraped(SHARED, ApiFigures(0, 0, 0)))
    promised = {
        "application/openmetrics-text": "application/openmetrics-text; version=1.0.0",
        "text/plain": "text/plain; version=0.0.4; charset=utf-8",
    }
    assert content_type.startswith(promised[sent])
    assert b"parley_workers" in body


def test_without_redis_its_figures_are_left_out() -> None:
    body, _ = metrics.exposition(PROMETHEUS, Scraped(None, ApiFigures(0, 0, 0)))
    names = {f.name for f in text_string_to_metric_families(body.decode())}
    assert set(RECORDED) | {"parley_subscriptions", "parley_held_documents"} <= names
    assert not {"parley_episodes", "parley_queue_jobs", "parley_workers"} & names


RECORD = """
from types import SimpleNamespace
from parley.core import metrics
metrics.model_answered("m", SimpleNamespace(prompt_tokens=3, completion_tokens=4))
metrics.TurnClock().lap(0)
metrics.process_stopped()
"""
SCRAPE = """
from parley.core import metrics
body, _ = metrics.exposition("", metrics.Scraped(None, metrics.ApiFigures(0, 0, 0)))
print(body.decode())
"""


def python(code: str, directory: Path) -> str:
    """`code` run by a new interpreter in multiprocess mode on `directory`: its output."""
    env = {**os.environ, metrics.MULTIPROCESS_DIR: str(directory)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_in_multiprocess_mode_a_scrape_adds_up_every_process(tmp_path: Path) -> None:
    directory = tmp_path / "made by the first process"
    python(RECORD, directory)
    python(RECORD, directory)  # ended, marked dead: its counts stay
    found = samples(python(SCRAPE, directory))
    assert found[("parley_model_calls_total", (("model", "m"),))] == 2
    assert found[("parley_model_tokens_total", (("kind", "completion"), ("model", "m")))] == 8
    assert found[("parley_turn_seconds_count", ())] == 2
    assert ("process_cpu_seconds_total", ()) not in found  # no single process's own


async def test_a_worker_serves_its_metrics_on_a_port_of_its_own() -> None:
    port = free_port()
    server, thread = metrics.serve(port, "127.0.0.1")
    try:
        metrics.took_over()
        async with httpx.AsyncClient() as http:
            response = await http.get(f"http://127.0.0.1:{port}/metrics")
            quoted = await http.get(
                f"http://127.0.0.1:{port}/metrics",
                headers={"accept": 'application/openmetrics-text;version="1.0.0"'},
            )
    finally:
        server.shutdown()
        thread.join(5)
    found = samples(response.text)
    assert found[("parley_lease_takeovers_total", ())] == value("parley_lease_takeovers_total")
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert quoted.status_code == 200
    assert quoted.headers["content-type"].startswith("application/openmetrics-text; version=1.0.0")
