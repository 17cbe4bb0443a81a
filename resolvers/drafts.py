"""Drafts of a world: asked of a model, checked against the limits of the create mutations,
returned unsaved; and the saving of an edited draft, all of it or nothing.

A draft's relationships name its agents by their position in the draft. Problems are reported
per field: `draft.agents.0.firstName` for what a model drafted, `input.agents.0.firstName` for
what a client asks to save.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import redis.asyncio as redis
from aredis_om.model.encoders import jsonable_encoder
from pydantic import BaseModel, Field, ValidationError, model_validator

from parley.core.errors import ErrorCode, UserError, field_path, plain_problems, validated
from parley.core.limits import LIST_MAX, TEXT_MAX, RecordId, ShortText
from parley.engine.drafting import DraftSpec, WorldDraft, draft_world
from parley.engine.errors import LLMError, UnknownModelError
from parley.engine.llm import LLMRouter, ModelCatalog
from parley.engine.models import LOCAL_MODEL
from parley.engine.stats import GenerationStats
from parley.resolvers.agents import NewAgent, get_agents
from parley.resolvers.fields import WriteModel
from parley.resolvers.names import agent_name
from parley.resolvers.plausible import (
    Problem,
    agent_problems,
    relationship_problems,
    scenario_problems,
)
from parley.resolvers.relationships import RELATIONSHIP
from parley.resolvers.scenarios import NewScenario
from parley.storage import keys
from parley.storage.drafts import save_all
from parley.storage.models import AgentProfile, EnvironmentProfile, Record, RelationshipProfile
from parley.storage.models import RelationshipType as Level

Prompt = Annotated[str, Field(min_length=1, max_length=TEXT_MAX)]
WORLD_AGENTS = 6
"""Most agents one draftWorld asks for (every pair gets a relationship)."""
PART_COUNT = 10
"""Most agents or scenarios one draftAgents / draftScenarios asks for (larger: a draft job)."""
SAVE_SCENARIOS = 500
"""Most scenarios one saveDraft stores (a draft job's result, say)."""


class DraftRequest(WriteModel):
    """What every draft is asked with: a prompt, and the model to ask."""

    prompt: Prompt
    model: ShortText = LOCAL_MODEL


class DraftWorldFields(DraftRequest):
    agents: Annotated[int, Field(ge=2, le=WORLD_AGENTS)] = 2
    scenarios: Annotated[int, Field(ge=1, le=PART_COUNT)] = 1
    relationship: Level | None = None


class DraftAgentsFields(DraftRequest):
    count: Annotated[int, Field(ge=1, le=PART_COUNT)]


class DraftScenariosFields(DraftRequest):
    count: Annotated[int, Field(ge=1, le=PART_COUNT)]
    agent_ids: Annotated[list[RecordId], Field(min_length=2, max_length=LIST_MAX)] | None = None
    relationship: Level | None = None


class IndexPair(WriteModel):
    """The two agents of a drafted relationship, by position in the draft's agents."""

    agent_index: Annotated[int, Field(ge=0)]
    other_agent_index: Annotated[int, Field(ge=0)]

    @model_validator(mode="after")
    def distinct_agents(self) -> "IndexPair":
        if self.agent_index == self.other_agent_index:
            raise ValueError("a relationship needs two different agents")
        return self


DraftRelationship = RELATIONSHIP.validator("DraftRelationship", IndexPair)


@dataclass
class Drafted:
    """A draft as the model gave it and what breaks the limits (per field; empty when valid)."""

    draft: WorldDraft
    errors: list[UserError]
    stats: GenerationStats


@dataclass
class Saved:
    agent_ids: list[str]
    scenario_ids: list[str]
    relationship_ids: list[str]


def _invalid(prefix: str, problems: list[Problem]) -> list[UserError]:
    return [UserError(field_path([prefix], path), m, ErrorCode.INVALID) for path, m in problems]


def _problems(err: ValidationError, at: list[Any]) -> list[Problem]:
    return [([str(p) for p in [*at, *loc]], message) for loc, message in plain_problems(err)]


@dataclass
class Checked:
    agents: list[BaseModel]
    scenarios: list[BaseModel]
    relationships: list[BaseModel]


def check_parts(
    agents: list[dict[str, Any]],
    scenarios: list[dict[str, Any]],
    relationships: list[dict[str, Any]],
    seats: int | None = None,
) -> tuple[Checked, list[Problem]]:
    """Each part against the create mutations' validation and for plausibility (resolvers/
    plausible.py); relationships against the agents of the same draft (in range, one per
    pair)."""
    problems: list[Problem] = []
    checked = Checked([], [], [])
    for kind, items, model in (
        ("agents", agents, NewAgent),
        ("scenarios", scenarios, NewScenario),
        ("relationships", relationships, DraftRelationship),
    ):
        for i, item in enumerate(items):
            try:
                getattr(checked, kind).append(model(**item))
            except ValidationError as err:
                problems += _problems(err, [kind, i])
    if seats is not None:
        for i, scenario in enumerate(scenarios):
            goals = scenario.get("agent_goals") or []
            if len(goals) != seats:
                problems.append(
                    (["scenarios", str(i), "agent_goals"], f"needs {seats} goals, one per seat")
                )
    pairs: set[frozenset[int]] = set()
    for i, item in enumerate(relationships):
        ends = [item.get("agent_index"), item.get("other_agent_index")]
        for name, end in zip(("agent_index", "other_agent_index"), ends, strict=True):
            if isinstance(end, int) and not 0 <= end < len(agents):
                message = f"no agent at position {end} (the draft has {len(agents)})"
                problems.append((["relationships", str(i), name], message))
        pair = frozenset(e for e in ends if isinstance(e, int))
        if len(pair) == 2 and pair in pairs:
            message = "these agents already have a relationship in this draft"
            problems.append((["relationships", str(i), "other_agent_index"], message))
        pairs.add(pair)
    given = [a.get("pk") for a in agents if a.get("pk")]
    for i, agent in enumerate(agents):
        if agent.get("pk") and given.count(agent["pk"]) > 1:
            problems.append((["agents", str(i), "pk"], "the same id is given twice"))
    reported = {tuple(path) for path, _ in problems}
    plausible = (
        agent_problems(agents) + scenario_problems(scenarios) + relationship_problems(relationships)
    )
    problems += [p for p in plausible if tuple(p[0]) not in reported]
    return checked, problems


def draft_check(seats: int | None) -> Any:
    def check(draft: WorldDraft) -> list[Problem]:
        dumped = draft.model_dump()
        return check_parts(dumped["agents"], dumped["scenarios"], dumped["relationships"], seats)[1]

    return check


INPUT: Sequence[str] = ("input",)
"""Where a mutation that takes one `input` argument names its fields; mutations that take their
arguments at the top name them by the argument alone (`()`)."""


def model_errors(models: ModelCatalog, model: str, at: Sequence[str] = INPUT) -> list[UserError]:
    try:
        models.resolve(model)
    except UnknownModelError as err:
        return [UserError([*at, "model"], str(err), ErrorCode.INVALID)]
    return []


def _request[F: DraftRequest](
    models: ModelCatalog, schema: type[F], fields: dict[str, Any], at: Sequence[str] = INPUT
) -> tuple[F | None, list[UserError]]:
    """`fields` as `schema`, asking a model `models` knows; or why not."""
    valid, errors = validated(schema, fields, at)
    if valid is not None and (errors := model_errors(models, valid.model, at)):
        return None, errors
    return valid, errors


async def _ask(
    llm: LLMRouter, model: str, spec: DraftSpec, seats: int | None, at: Sequence[str] = INPUT
) -> tuple[Drafted | None, list[UserError]]:
    try:
        outcome = await draft_world(llm, model, spec, draft_check(seats))
    except LLMError as err:
        message = f"the model gave no usable draft: {err}"
        return None, [UserError([*at, "model"], message, ErrorCode.INVALID)]
    return Drafted(outcome.draft, _invalid("draft", outcome.problems), outcome.stats), []


async def draft_world_from(
    llm: LLMRouter, fields: dict[str, Any]
) -> tuple[Drafted | None, list[UserError]]:
    """Agents, scenarios with a goal per agent, and every pair's relationship."""
    valid, errors = _request(llm, DraftWorldFields, fields)
    if valid is None:
        return None, errors
    spec = DraftSpec(
        prompt=valid.prompt,
        agents=valid.agents,
        scenarios=valid.scenarios,
        seats=valid.agents,
        relationship=valid.relationship,
        relationships=True,
    )
    return await _ask(llm, valid.model, spec, valid.agents)


async def draft_agents(
    llm: LLMRouter, fields: dict[str, Any]
) -> tuple[Drafted | None, list[UserError]]:
    """Agent profiles; the mutation takes its arguments at the top."""
    valid, errors = _request(llm, DraftAgentsFields, fields, ())
    if valid is None:
        return None, errors
    spec = DraftSpec(prompt=valid.prompt, agents=valid.count)
    return await _ask(llm, valid.model, spec, None, ())


def cast_line(agent: AgentProfile) -> str:
    """How a stored agent who takes a seat is described to the model."""
    parts = [agent_name(agent)]
    if agent.age:
        parts.append(f"{agent.age} years old")
    if agent.occupation:
        parts.append(agent.occupation)
    if agent.public_info:
        parts.append(agent.public_info)
    return ", ".join(parts)


async def cast_of(
    client: redis.Redis, agent_ids: list[str], at: Sequence[str] = INPUT
) -> tuple[list[str], list[UserError]]:
    found = await get_agents(client, agent_ids)
    errors = [
        UserError([*at, "agentIds", str(i)], f"no agent with id {pk!r}", ErrorCode.NOT_FOUND)
        for i, (pk, agent) in enumerate(zip(agent_ids, found, strict=True))
        if agent is None
    ]
    return [cast_line(a) for a in found if a is not None], errors


async def checked_cast(
    client: redis.Redis,
    models: ModelCatalog,
    model: str,
    agent_ids: list[str] | None,
    at: Sequence[str] = INPUT,
) -> tuple[list[str], list[UserError]]:
    """The stored agents who take the seats (none when not given), and what is wrong with the
    model or the agents."""
    errors = model_errors(models, model, at)
    if agent_ids is None:
        return [], errors
    cast, missing = await cast_of(client, agent_ids, at)
    return cast, errors + missing


async def draft_scenarios(
    client: redis.Redis, llm: LLMRouter, fields: dict[str, Any]
) -> tuple[Drafted | None, list[UserError]]:
    """Scenarios for the given agents (a goal each, in their order), or for two seats; the
    mutation takes its arguments at the top."""
    valid, errors = validated(DraftScenariosFields, fields, ())
    if valid is None:
        return None, errors
    cast, errors = await checked_cast(client, llm, valid.model, valid.agent_ids, ())
    if errors:
        return None, errors
    seats = len(cast) if cast else 2
    spec = DraftSpec(
        prompt=valid.prompt,
        scenarios=valid.count,
        seats=seats,
        cast=cast,
        relationship=valid.relationship,
    )
    return await _ask(llm, valid.model, spec, seats, ())


class SaveFields(BaseModel, extra="forbid"):
    agents: Annotated[list[dict[str, Any]], Field(max_length=LIST_MAX)] = []
    scenarios: Annotated[list[dict[str, Any]], Field(max_length=SAVE_SCENARIOS)] = []
    relationships: Annotated[list[dict[str, Any]], Field(max_length=SAVE_SCENARIOS)] = []


def _key(record: Record) -> str:
    return str(type(record).make_primary_key(record.pk))


def _document(record: Record) -> dict[str, Any]:
    document: dict[str, Any] = jsonable_encoder(record.model_dump())
    return document


async def save_draft(
    client: redis.Redis, fields: dict[str, Any]
) -> tuple[Saved | None, list[UserError]]:
    """Store every agent, scenario and relationship of a draft in one script, or nothing when
    any part is invalid or any id is taken."""
    valid, errors = validated(SaveFields, fields)
    if valid is None:
        return None, errors
    if not (valid.agents or valid.scenarios):
        return None, [UserError(["input"], "the draft has nothing to save", ErrorCode.INVALID)]
    checked, problems = check_parts(valid.agents, valid.scenarios, valid.relationships)
    if problems:
        return None, _invalid("input", problems)
    agents = [
        AgentProfile(**a.model_dump(exclude={"pk"}), pk=getattr(a, "pk", None))
        for a in checked.agents
    ]
    scenarios = [
        EnvironmentProfile(**s.model_dump(exclude={"pk"}), pk=getattr(s, "pk", None))
        for s in checked.scenarios
    ]
    relationships = []
    for r in checked.relationships:
        values = r.model_dump()
        first = agents[values.pop("agent_index")]
        second = agents[values.pop("other_agent_index")]
        relationships.append(
            RelationshipProfile(agent_1_id=str(first.pk), agent_2_id=str(second.pk), **values)
        )
    writes: list[tuple[str, str | dict[str, Any], list[str]]] = []
    for kind, records in (("agents", agents), ("scenarios", scenarios)):
        for i, record in enumerate(records):
            writes.append((_key(record), _document(record), ["input", kind, str(i), "id"]))
    for i, rel in enumerate(relationships):
        where = ["input", "relationships", str(i), "otherAgentIndex"]
        writes.append((_key(rel), _document(rel), where))
        writes.append((keys.relationship_pair(rel.agent_1_id, rel.agent_2_id), str(rel.pk), where))
    taken = await save_all(client, [(key, value) for key, value, _ in writes])
    if taken:
        _, _, where = writes[taken - 1]
        message = "this id is taken" if where[-1] == "id" else "these agents have a relationship"
        return None, [UserError(where, message, ErrorCode.CONFLICT)]
    return Saved(
        agent_ids=[str(a.pk) for a in agents],
        scenario_ids=[str(s.pk) for s in scenarios],
        relationship_ids=[str(r.pk) for r in relationships],
    ), []
