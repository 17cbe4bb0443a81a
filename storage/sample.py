"""The demo data set shipped with Parley, loaded idempotently by primary key."""

import json
from importlib.resources import files
from typing import Any

import redis.asyncio as redis

from parley.storage import keys
from parley.storage.models import AgentProfile, EnvironmentProfile, Record, RelationshipProfile


def sample_data() -> dict[str, list[dict[str, Any]]]:
    text = files("parley.storage").joinpath("sample_data.json").read_text(encoding="utf-8")
    data: dict[str, list[dict[str, Any]]] = json.loads(text)
    return data


async def is_empty() -> bool:
    """True when there are no agents and no scenarios at all."""
    return not (await AgentProfile.find().count() or await EnvironmentProfile.find().count())


async def seed(client: redis.Redis) -> dict[str, int]:
    """Insert every sample record whose primary key is free; returns how many were added."""
    data = sample_data()
    added: dict[str, int] = {}
    groups: list[tuple[str, type[Record]]] = [
        ("agents", AgentProfile),
        ("scenarios", EnvironmentProfile),
        ("relationships", RelationshipProfile),
    ]
    for name, model in groups:
        count = 0
        for item in data[name]:
            record = model(**item)
            if await record.save(nx=True) is not None:
                count += 1
                if isinstance(record, RelationshipProfile):
                    pair = keys.relationship_pair(record.agent_1_id, record.agent_2_id)
                    await client.set(pair, str(record.pk), nx=True)
        added[name] = count
    return added
