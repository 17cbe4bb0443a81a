"""Drafting a world from a sentence: agent profiles, scenarios with a goal per seat, and the
relationships between the agents, asked of a model as one JSON object.

The answer is read loosely here (shapes and Sotopia's relationship names); the limits the stored
records obey are the caller's `check`, whose errors go back to the model in the one re-ask.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from pydantic import BaseModel, Field, ValidationError, field_validator

from parley.core.wording import problems, where
from parley.engine.errors import LLMOutputError
from parley.engine.generation import ask
from parley.engine.llm import ChatRequest, LLMRouter
from parley.engine.parsing import InvalidOutput, extract_json
from parley.engine.stats import GenerationStats
from parley.engine.types import MBTI_TYPES, AgentFields, RelationshipType

DRAFT_SCHEMA_NAME = "world_draft"
RELATIONSHIP_NAMES = {level.name.lower(): level for level in RelationshipType}
"""Sotopia's relationship levels by the names the model is asked to use."""
SHORT = 60
"""Longest name or label the model is asked for (the stored limit is longer)."""
TEXT = 400
"""Longest prose field the model is asked for."""


class AgentDraft(AgentFields):
    """An agent profile as drafted."""


class ScenarioDraft(BaseModel):
    """A scenario as drafted: Sotopia EnvironmentProfile's fields, one goal per seat."""

    codename: str = ""
    scenario: str = ""
    agent_goals: list[str] = Field(default_factory=list)
    relationship: RelationshipType = RelationshipType.STRANGER

    @field_validator("relationship", mode="before")
    @classmethod
    def _level(cls, value: Any) -> Any:
        return relationship_level(value)


class RelationshipDraft(BaseModel):
    """How two drafted agents relate; the agents are named by their position in the draft
    (a model's answer gives them by the relationship's place in the list)."""

    agent_index: int = 0
    other_agent_index: int = 1
    relationship: RelationshipType = RelationshipType.STRANGER
    background_story: str = ""

    @field_validator("relationship", mode="before")
    @classmethod
    def _level(cls, value: Any) -> Any:
        return relationship_level(value)


class WorldDraft(BaseModel):
    agents: list[AgentDraft] = Field(default_factory=list)
    scenarios: list[ScenarioDraft] = Field(default_factory=list)
    relationships: list[RelationshipDraft] = Field(default_factory=list)


def relationship_level(value: Any) -> Any:
    """A relationship given by Sotopia's name (any case, spaces or underscores) or its code."""
    if isinstance(value, str):
        name = value.strip().lower().replace(" ", "_").replace("-", "_")
        if name in RELATIONSHIP_NAMES:
            return RELATIONSHIP_NAMES[name]
        if name.isdigit():
            return int(name)
    return value


@dataclass(frozen=True)
class DraftSpec:
    """What to draft."""

    prompt: str
    agents: int = 0
    """Agent profiles to draft."""
    scenarios: int = 0
    seats: int = 2
    """Goals per scenario: the number of agents who meet in it."""
    cast: list[str] = field(default_factory=list)
    """Who takes the seats when they are agents already stored (one line each, seat order)."""
    relationship: RelationshipType | None = None
    """The relationship every scenario and drafted relationship must have, if given."""
    relationships: bool = False
    """Also draft the relationship of every pair of drafted agents."""

    def pairs(self) -> int:
        return len(self.pair_list())

    def pair_list(self) -> list[tuple[int, int]]:
        """The pairs of drafted agents whose relationships are asked for, in the asked order."""
        return list(combinations(range(self.agents), 2)) if self.relationships else []


Check = Callable[[WorldDraft], list[tuple[list[str], str]]]
"""The caller's validation of a draft: (path in the draft, message) for each problem."""


class DraftRejected(InvalidOutput):
    """A draft that parsed but failed the caller's checks; the message is what the re-ask says."""

    def __init__(self, draft: WorldDraft, problems: list[tuple[list[str], str]]) -> None:
        self.draft = draft
        self.problems = problems
        shown = "; ".join(f"{'.'.join(path)}: {message}" for path, message in problems[:20])
        super().__init__(f"the draft breaks these rules: {shown}")


@dataclass
class DraftOutcome:
    """A draft and what is still wrong with it after the re-ask (nothing, when valid)."""

    draft: WorldDraft
    problems: list[tuple[list[str], str]]
    stats: GenerationStats


def _text(limit: int, description: str, required: bool = False) -> dict[str, Any]:
    text = {"type": "string", "maxLength": limit, "description": description}
    return {**text, "minLength": 1} if required else text


def _words(description: str) -> dict[str, Any]:
    return {"type": "array", "items": _text(SHORT, "one value"), "maxItems": 3,
            "description": description}  # fmt: skip


def agent_schema() -> dict[str, Any]:
    props = {
        "first_name": _text(SHORT, "given name", required=True),
        "last_name": _text(SHORT, "family name", required=True),
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "occupation": _text(SHORT, "occupation"),
        "gender": {"type": "string", "enum": ["Man", "Woman", "Nonbinary"]},
        "gender_pronoun": _text(SHORT, "pronouns, e.g. she/her"),
        "public_info": _text(TEXT, "what anyone may know about this person"),
        "big_five": _text(TEXT, "Big Five traits, e.g. 'Openness: high; ...'"),
        "moral_values": _words("moral foundations held, e.g. Care, Fairness"),
        "schwartz_personal_values": _words("Schwartz values, e.g. Benevolence, Power"),
        "personality_and_values": _text(TEXT, "personality and values in prose"),
        "decision_making_style": _text(SHORT, "e.g. Analytical, Directive, Conceptual"),
        "secret": _text(TEXT, "something this person hides from the others"),
        "mbti": {"type": "string", "enum": list(MBTI_TYPES), "description": "Myers-Briggs type"},
    }
    return {"type": "object", "properties": props, "required": list(props),
            "additionalProperties": False}  # fmt: skip


def scenario_schema(seats: int) -> dict[str, Any]:
    props = {
        "codename": _text(SHORT, "short snake_case name"),
        "scenario": _text(TEXT, "the situation as every participant sees it", required=True),
        "agent_goals": {
            "type": "array",
            "items": _text(TEXT, "one participant's private goal", required=True),
            "minItems": seats,
            "maxItems": seats,
        },
        "relationship": {"type": "string", "enum": list(RELATIONSHIP_NAMES)},
    }
    return {"type": "object", "properties": props, "required": list(props),
            "additionalProperties": False}  # fmt: skip


def relationship_schema() -> dict[str, Any]:
    """One pair's relationship; which pair it is follows from its place in the list."""
    props = {
        "relationship": {"type": "string", "enum": list(RELATIONSHIP_NAMES)},
        "background_story": _text(TEXT, "how they came to know each other"),
    }
    return {"type": "object", "properties": props, "required": list(props),
            "additionalProperties": False}  # fmt: skip


def _exactly(count: int, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": item, "minItems": count, "maxItems": count}


def draft_schema(spec: DraftSpec) -> dict[str, Any]:
    props: dict[str, Any] = {}
    if spec.agents:
        props["agents"] = _exactly(spec.agents, agent_schema())
    if spec.scenarios:
        props["scenarios"] = _exactly(spec.scenarios, scenario_schema(spec.seats))
    if spec.pairs():
        props["relationships"] = _exactly(spec.pairs(), relationship_schema())
    return {"type": "object", "properties": props, "required": list(props),
            "additionalProperties": False}  # fmt: skip


SYSTEM = (
    "You design characters and situations for social simulations, in which people with "
    "private goals talk to each other. You answer with a single JSON object and nothing else."
)


def draft_messages(spec: DraftSpec) -> list[dict[str, str]]:
    asks = []
    if spec.agents:
        asks.append(
            f'- {spec.agents} distinct characters (key "agents"), each with a full profile: '
            "name, age, occupation, gender and pronouns, what is publicly known about them, "
            "their Big Five traits, moral and Schwartz values, personality, how they make "
            "decisions, an MBTI type, and a secret they keep."
        )
    if spec.scenarios:
        who = (
            "these people, in this seat order:\n"
            + "\n".join(f"  {i + 1}. {line}" for i, line in enumerate(spec.cast))
            if spec.cast
            else f"{spec.seats} people"
        )
        asks.append(
            f'- {spec.scenarios} different scenarios (key "scenarios") for {who}. '
            "Describe each situation without names (say 'two coworkers', not who they are), "
            f"give exactly {spec.seats} goals, one per seat in order, each a goal that seat "
            "pursues privately and that pulls against the others'. Inside a goal, put facts "
            "only that seat knows in <extra_info>...</extra_info>, a hint on what the goal "
            "means in <clarification_hint>...</clarification_hint>, and advice on how to "
            "reach it in <strategy_hint>...</strategy_hint>, where they help. Give the "
            "relationship the scenario assumes between the participants."
        )
    if spec.pairs():
        order = ", ".join(f"{a + 1} and {b + 1}" for a, b in spec.pair_list())
        asks.append(
            f'- how each pair of those characters relates (key "relationships"), in this '
            f"order of characters: {order}; each with a short background story of how the two "
            "know each other."
        )
    levels = ", ".join(RELATIONSHIP_NAMES)
    rules = f"Relationships are one of: {levels}."
    if spec.relationship is not None:
        rules += f" Use {spec.relationship.name.lower()} for every relationship."
    user = (
        f"The situation to build on: {spec.prompt.strip()}\n\nCreate:\n"
        + "\n".join(asks)
        + f"\n\n{rules} Keep every text short and concrete."
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def draft_request(spec: DraftSpec) -> ChatRequest:
    budget = 200 + 450 * spec.agents + 350 * spec.scenarios * max(1, spec.seats // 2)
    budget += 150 * spec.pairs()
    return ChatRequest(
        messages=draft_messages(spec),
        max_tokens=budget,
        temperature=0.7,
        schema=draft_schema(spec),
        schema_name=DRAFT_SCHEMA_NAME,
    )


def _first_error(err: ValidationError) -> str:
    loc, message = problems(err)[0]
    return f"{where(loc)}: {message}" if loc else message


def parse_draft(text: str, spec: DraftSpec) -> WorldDraft:
    """The draft in an answer, with as many of each part as asked; raises InvalidOutput."""
    data = extract_json(text)
    if not isinstance(data, dict):
        raise InvalidOutput("the answer must be a JSON object")
    try:
        draft = WorldDraft.model_validate(data)
    except ValidationError as err:
        raise InvalidOutput(
            f"the draft does not have the asked shape: {_first_error(err)}"
        ) from err
    wanted = {"agents": spec.agents, "scenarios": spec.scenarios, "relationships": spec.pairs()}
    for key, count in wanted.items():
        got = len(getattr(draft, key))
        if got != count:
            raise InvalidOutput(f'"{key}" must hold exactly {count} items, not {got}')
    for relation, (a, b) in zip(draft.relationships, spec.pair_list(), strict=True):
        relation.agent_index, relation.other_agent_index = a, b
    if spec.relationship is not None:
        for scenario in draft.scenarios:
            scenario.relationship = spec.relationship
        for relation in draft.relationships:
            relation.relationship = spec.relationship
    return draft


async def draft_world(
    llm: LLMRouter, model: str, spec: DraftSpec, check: Check | None = None
) -> DraftOutcome:
    """Ask for a draft; an answer that does not parse, or that `check` rejects, is asked again
    once with what is wrong. Raises LLMOutputError when the second answer does not parse;
    a second answer that parses but is still rejected is returned with its problems."""
    stats = GenerationStats()

    def parse(text: str) -> WorldDraft:
        draft = parse_draft(text, spec)
        problems = check(draft) if check else []
        if problems:
            raise DraftRejected(draft, problems)
        return draft

    try:
        draft = await ask(llm, model, draft_request(spec), parse, stats)
    except LLMOutputError as exc:
        if isinstance(exc.__cause__, DraftRejected):
            rejected = exc.__cause__
            return DraftOutcome(rejected.draft, rejected.problems, stats)
        raise
    return DraftOutcome(draft, [], stats)
