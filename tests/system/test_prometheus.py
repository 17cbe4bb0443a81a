"""Prometheus metrics through real processes: `parley serve --no-worker` and a `parley worker`
sharing PROMETHEUS_MULTIPROC_DIR on a Redis of their own, an episode played against a fake LLM
of the test's own (one request failing once), a subscriber following it, then scrapes parsed
with prometheus_client's parser: every metric shows what the run did."""

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bench.support.fake_llm import FakeLLM, Rule
from bench.support.polling import eventually
from bench.support.processes import Process, api_process, parley_env
from bench.support.simulation import EVENTS, collect, episode, wait_for
from parley.storage.embedded import free_port
from parley.storage.models import EpisodeStatus
from tests.graph.test_scrape import EVERY_METRIC
from tests.support.server import GraphQLClient
from tests.support.spare_redis import spare_redis
from tests.support.world import start_episode

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]
PROMETHEUS = "text/plain;version=0.0.4"
LIST = "{ episodes(first: 5) { edges { node { id status tag } } } }"


@pytest.fixture
async def own_redis(tmp_path: Path) -> AsyncIterator[str]:
    """A Redis of the test's own: every episode, job and worker counted is this test's."""
    async with spare_redis(tmp_path / "redis") as (url, _):
        yield url


@pytest.fixture
def env(own_redis: str, tmp_path: Path) -> dict[str, str]:
    directory = tmp_path / "prometheus"
    directory.mkdir()
    settings = parley_env(own_redis, tmp_path / "data", lease_seconds="2", seed="false")
    return {**settings, "PROMETHEUS_MULTIPROC_DIR": str(directory)}


async def scrape(url: str) -> tuple[set[str], Samples]:
    """The metric families of a Prometheus scrape of `url`, and every sample by name and
    labels."""
    async with httpx.AsyncClient(timeout=30) as http:
        response = await http.get(f"{url}/metrics", headers={"accept": PROMETHEUS})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    families = list(text_string_to_metric_families(response.text))
    found = {
        (s.name, tuple(sorted(s.labels.items()))): s.value for f in families for s in f.samples
    }
    return {f.name for f in families}, found


def by_status(found: Samples) -> dict[str, float]:
    return {s.value: found[("parley_episodes", (("status", s.value),))] for s in EpisodeStatus}


def queue(found: Samples) -> tuple[float, float, float]:
    """Waiting and running jobs, and the lag."""
    return (
        found[("parley_queue_jobs", (("state", "waiting"),))],
        found[("parley_queue_jobs", (("state", "running"),))],
        found[("parley_queue_lag_seconds", ())],
    )


async def test_a_scrape_shows_every_metric_with_what_the_run_did(
    env: dict[str, str], tmp_path: Path, own_fake_llm: FakeLLM
) -> None:
    fake, model = own_fake_llm, own_fake_llm.model_name()
    fake.add_rule(Rule(kind="action", status=500))  # one failed request, retried
    metrics_port = free_port()
    with api_process(env, tmp_path / "api.log", "--no-worker") as api:
        async with httpx.AsyncClient(base_url=api.url, timeout=30) as http:
            gql = GraphQLClient(http)
            episode_id = await start_episode(gql, model, "Scraped")
            subscribed = asyncio.Event()
            following = asyncio.create_task(collect(api.url, EVENTS, episode_id, subscribed))
            await asyncio.wait_for(subscribed.wait(), 10)
            _, queued = await scrape(api.url)
            worker = Process(["worker", "--metrics-port", str(metrics_port)], env, tmp_path / "w")
            try:
                events = await asyncio.wait_for(following, 60)
                await wait_for(api.url, episode_id, lambda e: e["status"] == "COMPLETED")
                _, settled = await eventually(
                    lambda: scrape(api.url), lambda s: queue(s[1]) == (0, 0, 0)
                )
                _, own = await scrape(f"http://127.0.0.1:{metrics_port}")
            finally:
                worker.stop()
            for _ in range(2):  # the first reads the episode from Redis, the second holds it
                await gql.data(LIST)
            played = await episode(api.url, episode_id)
            _, gone = await eventually(
                lambda: scrape(api.url), lambda s: s[1][("parley_workers", ())] == 0, timeout=10
            )
            names, found = await scrape(api.url)

    # Before the worker: the episode queued and its job waiting; one subscriber; no worker.
    assert by_status(queued) == {**dict.fromkeys(by_status(queued), 0), "QUEUED": 1}
    waiting, running, lag = queue(queued)
    assert (waiting, running) == (1, 0) and lag > 0
    assert queued[("parley_subscriptions", ())] == 1
    assert queued[("parley_workers", ())] == 0
    assert settled[("parley_workers", ())] == 1  # the worker, alive
    assert gone[("parley_workers", ())] == 0  # a lease after it stopped

    # After: every metric, its values what the run did, the stopped worker's counts kept.
    assert names >= EVERY_METRIC
    assert by_status(found) == {**dict.fromkeys(by_status(found), 0), "COMPLETED": 1}
    assert queue(found) == (0, 0, 0)
    requests = fake.requests
    assert found[("parley_model_calls_total", (("model", model),))] == len(requests) > 0
    assert found[("parley_model_errors_total", (("code", "server"), ("model", model)))] == 1
    for kind in ("prompt", "completion"):
        reported = sum(r.usage[f"{kind}_tokens"] for r in requests if r.usage is not None)
        assert found[("parley_model_tokens_total", (("kind", kind), ("model", model)))] == reported
    assert found[("parley_turn_seconds_count", ())] == len(played["turns"]) == 2
    assert found[("parley_judge_seconds_count", (("model", model),))] == 1
    assert found[("parley_lease_takeovers_total", ())] == 0
    assert found[("parley_subscription_deliveries_total", ())] == len(events) - 1  # no snapshot
    assert found[("parley_subscriptions", ())] == 0  # its stream ended with the episode
    assert found[("parley_held_documents_total", (("result", "hit"),))] >= 1
    assert found[("parley_held_documents_total", (("result", "miss"),))] >= 1

    # The worker's own port shows what the worker recorded (here: every process's, one
    # directory).
    assert own[("parley_model_calls_total", (("model", model),))] == len(requests)
    assert ("parley_episodes", (("status", "COMPLETED"),)) not in own  # Redis's: the API's
