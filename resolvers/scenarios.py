"""Scenarios: Sotopia EnvironmentProfile records."""

from typing import Annotated, Any, Unpack

import redis.asyncio as redis
from pydantic import Field

from parley.core.errors import UserError, not_found, validated
from parley.core.limits import LIST_MAX, LongText, RequiredText, ShortText
from parley.resolvers.fields import Exposed, WithId, WriteModel
from parley.resolvers.games import GameMetadata, game_errors
from parley.resolvers.keyset import by_id
from parley.resolvers.name_search import containing
from parley.resolvers.pagination import Page, PageArgs, fetch_hits
from parley.resolvers.search import Hit, tag_terms
from parley.storage.models import EnvironmentProfile, RelationshipType
from parley.storage.records import get_many, get_or_none, insert, remove, update_fields

Goals = Annotated[list[RequiredText], Field(min_length=2, max_length=LIST_MAX)]


SCENARIO = Exposed(
    EnvironmentProfile,
    {
        "scenario": RequiredText,
        "agent_goals": Goals,
        "codename": ShortText,
        "source": ShortText,
        "relationship": RelationshipType,
        "age_constraint": LongText | None,
        "occupation_constraint": LongText | None,
        "tag": ShortText,
        "game_metadata": GameMetadata,
    },
    must_give=frozenset({"agent_goals"}),
)
ScenarioFields = SCENARIO.validator("ScenarioFields", WriteModel)
NewScenario = SCENARIO.validator("NewScenario", WithId)
SCENARIOS = by_id("scenarios")


async def get_scenario(pk: str) -> EnvironmentProfile | None:
    return await get_or_none(EnvironmentProfile, pk)


async def list_scenarios(
    *,
    tag: str | None = None,
    codename: str | None = None,
    codename_contains: str | None = None,
    **page: Unpack[PageArgs],
) -> Page[Hit[EnvironmentProfile]]:
    terms = tag_terms(EnvironmentProfile, tag=tag, codename=codename)
    if codename_contains:
        terms += containing([EnvironmentProfile.codename], codename_contains)
    return await fetch_hits(EnvironmentProfile.find(*terms), SCENARIOS, **page)


async def create_scenario(
    fields: dict[str, Any],
) -> tuple[EnvironmentProfile | None, list[UserError]]:
    valid, errors = validated(NewScenario, fields)
    if valid is None:
        return None, errors
    checked = valid.model_dump(include={"game_metadata", "agent_goals"})
    problems = game_errors(checked["game_metadata"], len(checked["agent_goals"]))
    if problems:
        return None, problems
    scenario = EnvironmentProfile(**valid.model_dump(exclude={"pk"}), pk=valid.pk)
    return await insert(scenario)


async def update_scenario(
    client: redis.Redis, pk: str, changes: dict[str, Any]
) -> tuple[EnvironmentProfile | None, list[UserError]]:
    """Change a scenario (the fields given: records.update_fields); its game, if it is one,
    checked against its goals as they will be."""

    async def game_fits(scenario: EnvironmentProfile) -> list[UserError]:
        metadata = changes.get("game_metadata", scenario.game_metadata)
        goals = changes.get("agent_goals", scenario.agent_goals)
        if isinstance(metadata, dict) and isinstance(goals, list):
            return game_errors(metadata, len(goals))
        return []

    return await update_fields(
        client, EnvironmentProfile, pk, "scenario", ScenarioFields, changes, game_fits
    )


async def delete_scenario(pk: str) -> list[UserError]:
    if await get_scenario(pk) is None:
        return [not_found("scenario", pk)]
    await remove(EnvironmentProfile, pk)
    return []


async def get_scenarios(client: redis.Redis, pks: list[str]) -> list[EnvironmentProfile | None]:
    """Several scenarios in one round trip, in the order asked, None where missing."""
    return await get_many(client, EnvironmentProfile, pks)
