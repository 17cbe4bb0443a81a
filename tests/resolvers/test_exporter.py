"""The export: its profile cache keeps what a batch needs however full it is; what an exported
episode leaves behind."""

import uuid

import pytest
import redis.asyncio as redis

from resolvers import exporter
from resolvers.sotopia_format import episode_line
from storage.models import AgentProfile


async def test_a_batch_keeps_the_profiles_it_needs_when_the_cache_is_full(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(exporter, "CACHED_PROFILES", 2)
    a, b, c = (AgentProfile(first_name=f"Cache{uuid.uuid4().hex[:6]}", last_name=n) for n in "abc")
    for agent in (a, b, c):
        await agent.save()
    try:
        profiles = exporter.Profiles(redis_client)
        await profiles.load([(AgentProfile, str(a.pk))])
        await profiles.load([(AgentProfile, str(c.pk))])
        await profiles.load([(AgentProfile, str(a.pk)), (AgentProfile, str(b.pk))])
        for agent in (a, b):  # the oldest entry (a) is wanted again: c goes instead
            found = profiles.get(AgentProfile, str(agent.pk))
            assert found is not None and found["last_name"] == agent.last_name
        assert profiles.get(AgentProfile, str(c.pk)) is None
    finally:
        for agent in (a, b, c):
            await AgentProfile.delete(str(agent.pk))


def test_an_exported_human_seat_carries_no_token() -> None:
    doc = {
        "pk": "E1",
        "environment": "S1",
        "agents": ["A1", "A2"],
        "human_seats": [{"seat": 1, "token_hash": "ab" * 32}],
        "status": "WAITING",
    }
    line = episode_line(doc, None, [None, None])
    assert line["parley"]["human_seats"] == [{"seat": 1, "token_hash": ""}]
    assert line["parley"]["status"] == "WAITING"
    assert doc["human_seats"] == [{"seat": 1, "token_hash": "ab" * 32}]  # the record untouched
