"""usageTotals over real HTTP: tokens and cost summed in Redis by tag, experiment and status."""

import time
from typing import Any

import pytest
import redis.asyncio as redis

from parley.storage.models import EpisodeLog, EpisodeStatus, ModelUsage
from tests.support.server import GraphQLClient

TOTALS = """
query($filter: UsageFilter) {
  usageTotals(filter: $filter) {
    episodes promptTokens completionTokens estimatedTokens cost pricedEpisodes
  }
}"""
EPISODE_USAGE = """
query($id: ID!) { episode(id: $id) { cost usage { model promptTokens estimated cost } } }"""


async def stored(
    tag: str,
    experiment: str = "",
    status: EpisodeStatus = EpisodeStatus.COMPLETED,
    usage: tuple[int, int, int] | None = None,
    cost: float | None = None,
) -> EpisodeLog:
    episode = EpisodeLog(environment="s", agents=["a", "b"], tag=tag, experiment_id=experiment)
    episode.status = status
    if usage is not None:
        prompt, completion, estimated = usage
        episode.usage = [
            ModelUsage(
                model="m",
                prompt_tokens=prompt,
                completion_tokens=completion,
                estimated=estimated > 0,
                estimated_tokens=estimated,
                cost=cost,
            )
        ]
        episode.prompt_tokens, episode.completion_tokens = prompt, completion
        episode.estimated_tokens, episode.cost = estimated, cost
    await episode.save()
    return episode


async def totals(gql: GraphQLClient, **filter: Any) -> dict[str, Any]:
    found: dict[str, Any] = (await gql.data(TOTALS, {"filter": filter}))["usageTotals"]
    return found


@pytest.fixture
async def world(redis_client: redis.Redis) -> tuple[str, str]:
    """Two experiments under one tag; a Sotopia-written episode (no usage) beside them."""
    tag, experiment = f"usage-{time.time_ns()}", f"exp-{time.time_ns()}"
    await stored(tag, experiment, usage=(1000, 200, 0), cost=0.5)
    await stored(tag, experiment, usage=(3000, 400, 3400), cost=None)
    await stored(tag, experiment, EpisodeStatus.FAILED, usage=(50, 5, 0), cost=0.25)
    await stored(tag, f"{experiment}-other", usage=(7, 3, 0), cost=0.125)
    await stored(tag)
    return tag, experiment


async def test_totals_by_tag_and_by_experiment(gql: GraphQLClient, world: tuple[str, str]) -> None:
    tag, experiment = world
    assert await totals(gql, tag=tag) == {
        "episodes": 5,
        "promptTokens": 4057,
        "completionTokens": 608,
        "estimatedTokens": 3400,
        "cost": 0.875,
        "pricedEpisodes": 3,
    }
    assert await totals(gql, experimentId=experiment) == {
        "episodes": 3,
        "promptTokens": 4050,
        "completionTokens": 605,
        "estimatedTokens": 3400,
        "cost": 0.75,
        "pricedEpisodes": 2,
    }
    completed = await totals(gql, tag=tag, experimentId=experiment, status="COMPLETED")
    assert (completed["episodes"], completed["promptTokens"], completed["cost"]) == (2, 4000, 0.5)


async def test_nothing_matched_or_nothing_priced(
    gql: GraphQLClient, world: tuple[str, str]
) -> None:
    tag, _ = world
    assert await totals(gql, tag=f"{tag}-none") == {
        "episodes": 0,
        "promptTokens": 0,
        "completionTokens": 0,
        "estimatedTokens": 0,
        "cost": None,
        "pricedEpisodes": 0,
    }
    lone = f"{tag}-unpriced"
    await stored(lone, "", usage=(10, 2, 0), cost=None)
    unpriced = await totals(gql, tag=lone)
    assert (unpriced["episodes"], unpriced["promptTokens"]) == (1, 10)
    assert unpriced["cost"] is None and unpriced["pricedEpisodes"] == 0


async def test_an_episode_shows_its_usage_rows(gql: GraphQLClient, redis_client: Any) -> None:
    episode = await stored("usage-rows", usage=(10, 2, 10), cost=None)
    found = (await gql.data(EPISODE_USAGE, {"id": episode.pk}))["episode"]
    assert found == {
        "cost": None,
        "usage": [{"model": "m", "promptTokens": 10, "estimated": True, "cost": None}],
    }
    bare = await stored("usage-rows")  # as Sotopia writes it: no usage at all
    assert (await gql.data(EPISODE_USAGE, {"id": bare.pk}))["episode"] == {
        "cost": None,
        "usage": [],
    }


async def test_a_filter_redisearch_cannot_express_is_refused(gql: GraphQLClient) -> None:
    messages = await gql.errors(TOTALS, {"filter": {"tag": "|"}})
    assert any("cannot be '|'" in m for m in messages)
