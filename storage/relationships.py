"""Writing a new relationship while both its agents are stored and its pair is free, at once
(storage/lua/write_relationship.lua)."""

from typing import NamedTuple

import redis.asyncio as redis

from parley.storage import keys
from parley.storage.models import AgentProfile, RelationshipProfile
from parley.storage.scripts import Script
from parley.storage.vocabulary import RelationshipRefusal


class RelationshipKeys(NamedTuple):
    first_agent: str
    second_agent: str
    pair: str
    relationship: str
    first_made: str
    second_made: str


class RelationshipArgs(NamedTuple):
    id: str
    document: str


WRITE_RELATIONSHIP = Script("write_relationship", RelationshipKeys, RelationshipArgs)


async def write_new(
    client: redis.Redis, record: RelationshipProfile
) -> tuple[RelationshipRefusal, str]:
    """Store a new relationship: (OK, ""), or why not with the agent's id that is not stored
    (AGENT), the pair's holder (PAIR) or "" (ID: the id is taken)."""
    ends = (record.agent_1_id, record.agent_2_id)
    refusal, detail = await WRITE_RELATIONSHIP(
        client,
        RelationshipKeys(
            first_agent=AgentProfile.make_primary_key(record.agent_1_id),
            second_agent=AgentProfile.make_primary_key(record.agent_2_id),
            pair=keys.relationship_pair(*ends),
            relationship=RelationshipProfile.make_primary_key(str(record.pk)),
            first_made=keys.relationships_made(record.agent_1_id),
            second_made=keys.relationships_made(record.agent_2_id),
        ),
        RelationshipArgs(str(record.pk), record.model_dump_json()),
    )
    outcome = RelationshipRefusal(refusal)
    if outcome == RelationshipRefusal.AGENT:
        return outcome, ends[int(detail) - 1]
    return outcome, str(detail)
