"""The export: its profile cache keeps what a batch needs however full it is; what an exported
episode leaves behind."""

import json
import uuid
from typing import Any

import pytest
import redis.asyncio as redis
from ulid import ULID

from parley.resolvers import exporter
from parley.resolvers import sotopia_format as fmt
from parley.resolvers.experiment_design import Design
from parley.resolvers.importer import import_lines
from parley.resolvers.sotopia_format import episode_line
from parley.storage import keys
from parley.storage.experiments import ExperimentStore
from parley.storage.models import AgentProfile, ExperimentSlot


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


def an_experiment(name: str, slots: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A stored experiment's document and plan, as the export reads them."""
    design = Design(
        scenarios={"ids": ["s1"]},
        agents={"pairs": [["a1", "a2"]]},
        models={"seats": [["m", "m"]]},
        repeats=100,
    )
    doc = {
        "pk": str(ULID()),
        "name": name,
        "tag": name,
        "design": design.model_dump(mode="json"),
        "slot_count": slots,
        "created_at": 1_700_000_000.0,
        "started_at": None,
    }
    plan = [
        ExperimentSlot(
            scenario_id="s1", agent_ids=["a1", "a2"], agent_models=["m", "m"], repeat=n
        ).model_dump(mode="json")
        for n in range(slots)
    ]
    return doc, plan


async def test_a_large_experiment_travels_in_lines_of_slots_then_its_record(
    redis_client: redis.Redis,
) -> None:
    """Its slots go in parts a server's body limit takes; the record, last, is stored only
    once every slot is in; a name and tag another experiment holds are refused, its slots
    dropped."""
    name = f"travel-{uuid.uuid4().hex[:6]}"
    doc, plan = an_experiment(name, 2_500)
    filled = {n: f"episode-{n}" for n in range(0, 2_500, 7)}
    lines = fmt.experiment_lines(doc, plan, filled)
    assert [len(x.get("slots", [])) for x in lines] == [1000, 1000, 500, 0]
    assert all(len(json.dumps(x)) < 500_000 for x in lines)
    texts = [json.dumps(x) for x in lines]

    alone = await import_lines(redis_client, texts[-1:])  # no slot is in yet
    assert (
        alone.invalid == 1
        and "slots are not all in the lines before it" in alone.problems[0].reason
    )
    shuffled = [texts[1], texts[0], texts[2], texts[3]]  # parts in any order, the record last
    report = await import_lines(redis_client, shuffled)
    assert (report.invalid, report.created) == (0, {"experiments": 1})
    store = ExperimentStore(redis_client)
    pk = str(doc["pk"])
    stored = await store.get(pk)
    assert stored is not None and (stored.name, stored.slot_count) == (name, 2_500)
    assert [s.model_dump(mode="json") for s in await store.plan(pk)] == plan
    assert await store.slots(pk) == filled
    assert (await import_lines(redis_client, texts)).skipped == {"experiments": 1}

    namesake, _ = an_experiment(name, 2_500)
    again = [json.dumps(x) for x in fmt.experiment_lines(namesake, plan, {})]
    refused = await import_lines(redis_client, again)
    assert refused.invalid == 1
    assert refused.problems[0].reason == (
        f"an experiment named {name!r} with tag {name!r} is stored already ({pk})"
    )
    assert await redis_client.exists(keys.experiment_plan(str(namesake["pk"]))) == 0
