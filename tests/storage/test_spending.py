"""What stored episodes spent, read through the episode index against the real Redis."""

import uuid
from typing import Any

import redis.asyncio as redis

from parley.storage.models import EpisodeLog, EpisodeStatus, ModelUsage
from parley.storage.spending import costs, recorded_usage


def episode(
    scenario: str, status: EpisodeStatus = EpisodeStatus.COMPLETED, **fields: object
) -> EpisodeLog:
    values: dict[str, object] = {
        "environment": scenario,
        "agents": ["a1", "a2"],
        "models": ["judge", "m", "m"],
        "status": status,
        "max_turns": 4,
        "generation_stats": {"requests": 6.0},
        "usage": [
            ModelUsage(model="m", prompt_tokens=100, completion_tokens=20),
            ModelUsage(model="judge", prompt_tokens=50, completion_tokens=5),
        ],
        "cost": 0.25,
    }
    return EpisodeLog(**{**values, **fields})


async def test_completed_episodes_of_the_scenarios_are_read_with_what_they_spent(
    redis_client: redis.Redis,
) -> None:
    scenario, other = f"scn-{uuid.uuid4().hex}", f"scn-{uuid.uuid4().hex}"
    kept = episode(scenario)
    for record in (
        kept,
        episode(scenario, EpisodeStatus.FAILED),
        episode(scenario, EpisodeStatus.RUNNING),
        episode(other),
    ):
        await record.save()
    [found] = await recorded_usage(redis_client, [scenario])
    assert found.scenario_id == scenario
    assert found.models == ("judge", "m", "m") and found.max_turns == 4
    assert found.requests == 6
    assert found.tokens == {"m": (100, 20), "judge": (50, 5)}
    both = await recorded_usage(redis_client, [scenario, other])
    assert sorted(u.scenario_id for u in both) == sorted([scenario, other])


async def test_a_record_sotopia_wrote_reads_as_spending_nothing_at_no_turn_limit(
    redis_client: redis.Redis,
) -> None:
    scenario = f"scn-{uuid.uuid4().hex}"
    plain = EpisodeLog(environment=scenario, agents=["a1", "a2"], models=["gpt-4", "x", "y"])
    await plain.save()
    [found] = await recorded_usage(redis_client, [scenario])
    # no turn limit: it matches no design's slots (every design has one)
    assert (found.max_turns, found.requests, found.tokens) == (0, 0, {})


async def test_the_newest_are_read_up_to_the_limit(redis_client: redis.Redis) -> None:
    scenario = f"scn-{uuid.uuid4().hex}"
    for at in range(5):
        await episode(scenario, created_at=float(at), max_turns=at + 1).save()
    found = await recorded_usage(redis_client, [scenario], limit=3)
    assert [u.max_turns for u in found] == [5, 4, 3]
    assert await recorded_usage(redis_client, []) == []


async def test_costs_so_far_of_episodes(redis_client: redis.Redis) -> None:
    priced, unpriced = episode("s", cost=0.5), episode("s", cost=None)
    await priced.save()
    await unpriced.save()
    found = await costs(redis_client, [str(priced.pk), str(unpriced.pk), "gone"])
    assert found == [0.5, 0.0, 0.0]


async def test_counts_out_of_any_plausible_range_and_forks_are_left_out(
    redis_client: redis.Redis,
) -> None:
    scenario = f"scn-{uuid.uuid4().hex}"
    kept = episode(scenario)
    await kept.save()
    key = EpisodeLog.make_primary_key
    hostile: list[dict[str, Any]] = [
        {"generation_stats": {"requests": 1e160}},
        {"generation_stats": {"requests": -3}},
        {"generation_stats": {"requests": 2.5}},
        {"usage": [{"model": "m", "prompt_tokens": 1e200, "completion_tokens": 1}]},
        {"usage": [{"model": "m", "prompt_tokens": -(10**9), "completion_tokens": 1}]},
        {"usage": [{"model": "m", "prompt_tokens": True, "completion_tokens": 1}]},
        {"max_turns": "four"},
        {"parent_id": "a-parent"},  # a fork: it played only the turns after its parent's
    ]
    for changed in hostile:
        record = episode(scenario)
        document = {**record.model_dump(mode="json"), **changed}
        await redis_client.json().set(key(str(record.pk)), "$", document)
    found = await recorded_usage(redis_client, [scenario])
    assert [u.requests for u in found] == [6]
