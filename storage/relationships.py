"""Writing a new relationship while both its agents are stored and its pair is free, at once
(storage/lua/write_relationship.lua); deleting relationships, and an agent with its own."""

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, NamedTuple

import redis.asyncio as redis

from parley.core.errors import ErrorCode, UserError, not_found
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


async def delete(client: redis.Redis, records: Sequence[RelationshipProfile]) -> None:
    """Delete records and free their pair locks, at once."""
    if not records:
        return
    async with client.pipeline(transaction=True) as pipe:
        _queue_deletions(pipe, records)
        await pipe.execute()


def _queue_deletions(pipe: Any, records: Sequence[RelationshipProfile]) -> None:
    """Queue the deletion of each record and of its pair lock in a pipeline."""
    for record in records:
        pipe.delete(
            RelationshipProfile.make_primary_key(str(record.pk)),
            keys.relationship_pair(record.agent_1_id, record.agent_2_id),
        )


DELETE_ATTEMPTS = 20
"""Searches for an agent's relationships a deletion makes while they keep being made."""

Linked = Callable[[], Awaitable[tuple[list[RelationshipProfile], list[UserError]]]]
"""The relationships to delete with an agent, or why the agent is not to be deleted."""


async def delete_agent(
    client: redis.Redis, pk: str, linked: Linked
) -> tuple[list[str], list[UserError]]:
    """Delete an agent with the relationships `linked` finds (or refuses it for); the ids of
    the relationships deleted with it.

    Exact while relationships are made at the same time: the agent's record and its counter of
    relationships made (keys.relationships_made) are WATCHed before `linked` searches, and the
    deletion is one MULTI/EXEC. A relationship made before the WATCH is found (RediSearch
    indexes a record in the write that stores it); one made after bumps the counter, so EXEC
    fails and the search is made again; one made after EXEC finds the agent gone
    (WRITE_RELATIONSHIP).
    """
    key = AgentProfile.make_primary_key(pk)
    made = keys.relationships_made(pk)
    for _ in range(DELETE_ATTEMPTS):
        async with client.pipeline(transaction=True) as pipe:
            await pipe.watch(key, made)
            if not await pipe.exists(key):
                return [], [not_found("agent", pk)]
            relationships, errors = await linked()
            if errors:
                return [], errors
            pipe.multi()  # type: ignore[no-untyped-call]
            _queue_deletions(pipe, relationships)
            pipe.delete(key, made)
            try:
                await pipe.execute()
            except redis.WatchError:
                continue
            return [str(rel.pk) for rel in relationships], []
    message = "relationships of this agent kept being made while it was deleted: send it again"
    return [], [UserError(["input", "id"], message, ErrorCode.CONFLICT)]
