"""Agents: Sotopia AgentProfile records."""

from typing import Any, Unpack

import redis.asyncio as redis

from parley.core.errors import ErrorCode, UserError, not_found, searchable_tag, validated
from parley.core.limits import Age, LongText, Name, ShortText, Tags
from parley.resolvers.fields import Exposed, WithId, WriteModel
from parley.resolvers.keyset import by_id
from parley.resolvers.name_search import containing
from parley.resolvers.names import agent_name
from parley.resolvers.pagination import Page, PageArgs, fetch_hits
from parley.resolvers.relationships import relationships_of
from parley.resolvers.search import Hit, tag_terms
from parley.storage import relationships as relationship_writes
from parley.storage.models import AgentProfile, RelationshipProfile
from parley.storage.records import get_many, get_or_none, insert, storable, update_fields

AGENT = Exposed(
    AgentProfile,
    {
        "first_name": Name,
        "last_name": Name,
        "age": Age,
        "occupation": ShortText,
        "gender": ShortText,
        "gender_pronoun": ShortText,
        "public_info": LongText,
        "big_five": LongText,
        "moral_values": Tags,
        "schwartz_personal_values": Tags,
        "personality_and_values": LongText,
        "decision_making_style": LongText,
        "secret": LongText,
        "mbti": ShortText,
        "model_id": ShortText,
        "tag": ShortText,
    },
)
AgentFields = AGENT.validator("AgentFields", WriteModel)
AGENTS = by_id("agents")
NewAgent = AGENT.validator("NewAgent", WithId)


async def get_agent(pk: str) -> AgentProfile | None:
    return await get_or_none(AgentProfile, pk)


async def list_agents(
    *,
    tag: str | None = None,
    gender: str | None = None,
    occupation: str | None = None,
    name: str | None = None,
    name_contains: str | None = None,
    **page: Unpack[PageArgs],
) -> Page[Hit[AgentProfile]]:
    terms = tag_terms(AgentProfile, tag=tag, gender=gender, occupation=occupation)
    if name:
        parts = [searchable_tag(part) for part in name.split()]
        if len(parts) == 2:
            terms.append(
                (AgentProfile.first_name == parts[0]) & (AgentProfile.last_name == parts[1])
            )
        else:
            name = searchable_tag(name)
            terms.append((AgentProfile.first_name == name) | (AgentProfile.last_name == name))
    if name_contains:
        terms += containing([AgentProfile.first_name, AgentProfile.last_name], name_contains)
    return await fetch_hits(AgentProfile.find(*terms), AGENTS, **page)


async def create_agent(fields: dict[str, Any]) -> tuple[AgentProfile | None, list[UserError]]:
    valid, errors = validated(NewAgent, fields)
    if valid is None:
        return None, errors
    agent = AgentProfile(**valid.model_dump(exclude={"pk"}), pk=valid.pk)
    return await insert(agent)


async def update_agent(
    client: redis.Redis, pk: str, changes: dict[str, Any]
) -> tuple[AgentProfile | None, list[UserError]]:
    """Change an agent (the fields given: records.update_fields); a new name is refused when an
    agent it has a relationship with goes by that name (the two would be drawn as a pair whose
    transcript cannot tell them apart)."""

    async def partner_named(agent: AgentProfile) -> list[UserError]:
        renamed = {"first_name", "last_name"} & set(changes)
        return await _partner_named(agent, changes) if renamed else []

    return await update_fields(
        client, AgentProfile, pk, "agent", AgentFields, changes, partner_named
    )


async def _partner_named(agent: AgentProfile, changes: dict[str, Any]) -> list[UserError]:
    first, last = (changes.get(n, getattr(agent, n)) for n in ("first_name", "last_name"))
    if not isinstance(first, str) or not isinstance(last, str):
        return []  # the validation says what is wrong with them
    name = f"{first.strip()} {last.strip()}".strip()
    for relationship in await relationships_of(str(agent.pk)):
        ends = (relationship.agent_1_id, relationship.agent_2_id)
        other = ends[1] if ends[0] == agent.pk else ends[0]
        partner = await get_agent(other)
        if partner is not None and agent_name(partner) == name:
            message = (
                f"agent {other!r}, with whom this agent has a relationship, is named {name!r}: "
                "two agents who may meet in an episode need different names"
            )
            field = "firstName" if "first_name" in changes else "lastName"
            return [UserError(["input", field], message, ErrorCode.CONFLICT)]
    return []


async def delete_agent(
    client: redis.Redis, pk: str, cascade: bool
) -> tuple[list[str], list[UserError]]:
    """Delete an agent; refuse while relationships reference it unless `cascade` is set.
    Exact while relationships are made at the same time (storage/relationships.py). Returns
    the ids of the relationships deleted with it."""
    if not storable(pk):
        return [], [not_found("agent", pk)]

    async def linked() -> tuple[list[RelationshipProfile], list[UserError]]:
        found = await relationships_of(pk)
        if found and not cascade:
            message = (
                f"{len(found)} relationship(s) reference this agent; pass cascade to delete them"
            )
            return [], [UserError(["input", "id"], message, ErrorCode.IN_USE)]
        return found, []

    return await relationship_writes.delete_agent(client, pk, linked)


async def get_agents(client: redis.Redis, pks: list[str]) -> list[AgentProfile | None]:
    """Several agents in one round trip, in the order asked, None where missing."""
    return await get_many(client, AgentProfile, pks)


async def agent_names(client: redis.Redis, pks: list[str]) -> list[str]:
    """The agents' names in the order asked, in one round trip ("" for an agent that is gone)."""
    return [agent_name(a) if a else "" for a in await get_agents(client, pks)]
