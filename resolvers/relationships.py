"""Relationships between two agents: Sotopia RelationshipProfile records, one per pair."""

from dataclasses import dataclass
from typing import Any, Unpack

import redis.asyncio as redis
from pydantic import model_validator

from parley.core.errors import (
    BadArgument,
    ErrorCode,
    UserError,
    not_found,
    searchable_tag,
    validated,
)
from parley.core.limits import LongText, RecordId, ShortText
from parley.resolvers.fields import Exposed, WithId, WriteModel
from parley.resolvers.keyset import by_id
from parley.resolvers.names import agent_name
from parley.resolvers.pagination import Page, PageArgs, fetch_hits
from parley.resolvers.search import Hit, search_all, tag_terms
from parley.storage import relationships as relationship_writes
from parley.storage.models import AgentProfile, RelationshipProfile, RelationshipType
from parley.storage.records import get_or_none, update_fields
from parley.storage.vocabulary import RelationshipRefusal

RELATIONSHIP = Exposed(
    RelationshipProfile,
    {"relationship": RelationshipType, "background_story": LongText | None, "tag": ShortText},
)
RelationshipFields = RELATIONSHIP.validator("RelationshipFields", WriteModel)
RELATIONSHIPS = by_id("relationships")


class Pair(WithId):
    """The two agents of a new relationship (stored as agent_1_id and agent_2_id)."""

    agent_id: RecordId
    other_agent_id: RecordId

    @model_validator(mode="after")
    def distinct_agents(self) -> "Pair":
        if self.agent_id == self.other_agent_id:
            raise ValueError("a relationship needs two different agents")
        return self


NewRelationship = RELATIONSHIP.validator("NewRelationship", Pair)


def pair_query(agent_id: str, other_id: str) -> Any:
    a, b = RelationshipProfile.agent_1_id, RelationshipProfile.agent_2_id
    agent_id, other_id = searchable_tag(agent_id), searchable_tag(other_id)
    return ((a == agent_id) & (b == other_id)) | ((a == other_id) & (b == agent_id))


def agent_query(agent_id: str) -> Any:
    """Relationships of one agent, in either seat."""
    agent_id = searchable_tag(agent_id)
    return (RelationshipProfile.agent_1_id == agent_id) | (
        RelationshipProfile.agent_2_id == agent_id
    )


async def get_relationship(pk: str) -> RelationshipProfile | None:
    return await get_or_none(RelationshipProfile, pk)


async def relationship_between(agent_id: str, other_id: str) -> RelationshipProfile | None:
    found = await RelationshipProfile.find(pair_query(agent_id, other_id)).page(0, 1)
    return found[0] if found else None


async def list_relationships(
    *,
    agent_id: str | None = None,
    pair: list[str] | None = None,
    relationship: RelationshipType | None = None,
    tag: str | None = None,
    **page: Unpack[PageArgs],
) -> Page[Hit[RelationshipProfile]]:
    terms = tag_terms(RelationshipProfile, tag=tag)
    if agent_id:
        terms.append(agent_query(agent_id))
    if pair:
        terms.append(pair_query(pair[0], pair[1]))
    if relationship is not None:
        terms.append(RelationshipProfile.relationship == int(relationship))
    return await fetch_hits(RelationshipProfile.find(*terms), RELATIONSHIPS, **page)


async def relationships_of(agent_id: str) -> list[RelationshipProfile]:
    """The stored agent's relationships (none for an id no search can name: one that a record
    written outside Parley holds)."""
    try:
        query = RelationshipProfile.find(agent_query(agent_id))
    except BadArgument:
        return []
    return await search_all(query, RELATIONSHIPS)


@dataclass(frozen=True)
class Refused:
    """Why a new relationship was not written."""

    reason: RelationshipRefusal
    """AGENT, PAIR or ID."""
    detail: str = ""
    """The id of the agent that is not stored, or of the relationship that holds the pair."""


async def write_relationship(client: redis.Redis, record: RelationshipProfile) -> Refused | None:
    """Store a new relationship while both its agents are, and its pair and id are free, at
    once (storage/relationships.py); None when it is stored."""
    refusal, detail = await relationship_writes.write_new(client, record)
    if refusal == RelationshipRefusal.OK:
        return None
    return Refused(refusal, detail)


async def create_relationship(
    client: redis.Redis, fields: dict[str, Any]
) -> tuple[RelationshipProfile | None, list[UserError]]:
    """Create the pair's relationship (write_relationship: concurrent duplicates are a
    conflict, and an agent deleted meanwhile is not found)."""
    valid, errors = validated(NewRelationship, fields)
    if valid is None:
        return None, errors
    ends = ((valid.agent_id, "agentId"), (valid.other_agent_id, "otherAgentId"))
    found = [await get_or_none(AgentProfile, pk) for pk, _ in ends]
    errors = [
        not_found("agent", pk, field)
        for (pk, field), a in zip(ends, found, strict=True)
        if a is None
    ]
    if errors:
        return None, errors
    first, second = (agent_name(a) for a in found if a is not None)
    if first == second:
        message = (
            f"both agents are named {first!r}: a relationship joins two agents who may meet in "
            "an episode, and they need different names"
        )
        return None, [UserError(["input", "otherAgentId"], message, ErrorCode.INVALID)]
    existing = await relationship_between(valid.agent_id, valid.other_agent_id)
    if existing is not None:
        return None, [conflict(existing)]
    record = RelationshipProfile(
        pk=valid.pk,
        agent_1_id=valid.agent_id,
        agent_2_id=valid.other_agent_id,
        **valid.model_dump(include=set(RelationshipFields.model_fields)),
    )
    refused = await write_relationship(client, record)
    if refused is None:
        return record, []
    if refused.reason == "agent":
        field = "agentId" if refused.detail == valid.agent_id else "otherAgentId"
        return None, [not_found("agent", refused.detail, field)]
    if refused.reason == "pair":
        return None, [conflict(await get_relationship(refused.detail))]
    return None, [UserError(["input", "id"], f"id {record.pk!r} is taken", ErrorCode.CONFLICT)]


def conflict(existing: RelationshipProfile | None) -> UserError:
    which = f" ({existing.pk})" if existing is not None else ""
    return UserError(
        ["input", "otherAgentId"],
        f"these agents already have a relationship{which}",
        ErrorCode.CONFLICT,
    )


async def update_relationship(
    client: redis.Redis, pk: str, changes: dict[str, Any]
) -> tuple[RelationshipProfile | None, list[UserError]]:
    """Change a relationship (the fields given: records.update_fields)."""
    return await update_fields(
        client, RelationshipProfile, pk, "relationship", RelationshipFields, changes
    )


async def delete_relationship(client: redis.Redis, pk: str) -> list[UserError]:
    record = await get_relationship(pk)
    if record is None:
        return [not_found("relationship", pk)]
    await relationship_writes.delete(client, [record])
    return []
