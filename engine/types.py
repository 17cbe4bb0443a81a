"""Plain data the engine runs on; the worker builds these from stored records."""

from __future__ import annotations

from enum import IntEnum, StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from parley.engine.stats import GenerationStats
from parley.engine.usage import Usage


class ActionType(StrEnum):
    """What an agent does on its turn (Sotopia's action types)."""

    NONE = "none"
    SPEAK = "speak"
    NON_VERBAL_COMMUNICATION = "non-verbal communication"
    ACTION = "action"
    LEAVE = "leave"


ACTION_TYPES: tuple[ActionType, ...] = tuple(ActionType)


class TurnOrder(StrEnum):
    """Who acts when: one agent after another, everyone at once, or a seeded random agent."""

    ROUND_ROBIN = "round-robin"
    SIMULTANEOUS = "simultaneous"
    RANDOM = "random"


class RelationshipType(IntEnum):
    """How well two agents know each other: Sotopia's levels, stored as their integer codes."""

    STRANGER = 0
    KNOW_BY_NAME = 1
    ACQUAINTANCE = 2
    FRIEND = 3
    ROMANTIC_RELATIONSHIP = 4
    FAMILY_MEMBER = 5


MBTI_TYPES = tuple(a + b + c + d for a in "EI" for b in "SN" for c in "TF" for d in "JP")
"""The sixteen Myers-Briggs types."""


class AgentFields(BaseModel):
    """Sotopia's AgentProfile fields: a profile as stored, or as a model drafts it."""

    first_name: str = ""
    last_name: str = ""
    age: int = 0
    occupation: str = ""
    gender: str = ""
    gender_pronoun: str = ""
    public_info: str = ""
    big_five: str = ""
    moral_values: list[str] = Field(default_factory=list)
    schwartz_personal_values: list[str] = Field(default_factory=list)
    personality_and_values: str = ""
    decision_making_style: str = ""
    secret: str = ""
    mbti: str = ""


class AgentSpec(AgentFields):
    """An agent profile the engine plays."""

    pk: str = ""
    first_name: str

    @property
    def name(self) -> str:
        return f"{self.first_name} {self.last_name}".strip()


class ScenarioSpec(BaseModel):
    """A scenario (Sotopia's EnvironmentProfile): one goal per seat."""

    pk: str = ""
    codename: str = ""
    scenario: str
    agent_goals: list[str] = Field(default_factory=list)
    relationship: RelationshipType = RelationshipType.STRANGER
    game_metadata: dict[str, Any] | None = None
    """A social game's rules (engine.games) when it holds Parley's; else kept, not played."""


class RelationshipSpec(BaseModel):
    agent_1_id: str
    agent_2_id: str
    relationship: RelationshipType
    background_story: str | None = None

    def joins(self, a: str, b: str) -> bool:
        return {self.agent_1_id, self.agent_2_id} == {a, b}


OVERALL_SCORE = "overall_score"
"""The key of a reward's dimensions (Sotopia's) that holds the overall score: no dimension's."""


class DimensionSpec(BaseModel):
    """An evaluation dimension: the judge gives an integer in [range_low, range_high]."""

    name: str
    description: str
    range_low: int
    range_high: int

    @model_validator(mode="after")
    def _check_range(self) -> DimensionSpec:
        if self.range_low > self.range_high:
            raise ValueError(f"dimension {self.name!r}: range_low > range_high")
        return self


SOTOPIA_DIMENSIONS: list[DimensionSpec] = [
    DimensionSpec(
        name="believability",
        description=(
            "Acts like a natural, realistic person true to its profile (no confusion about "
            "who it is, no parroting)."
        ),
        range_low=0,
        range_high=10,
    ),
    DimensionSpec(
        name="relationship",
        description=(
            "The relationship after versus before, social status and reputation included: "
            "negative harmed, 0 unchanged, positive improved."
        ),
        range_low=-5,
        range_high=5,
    ),
    DimensionSpec(
        name="knowledge",
        description="New, important information the agent gained.",
        range_low=0,
        range_high=10,
    ),
    DimensionSpec(
        name="secret",
        description="Kept its secrets and secret intentions: -10 a critical leak, 0 none.",
        range_low=-10,
        range_high=0,
    ),
    DimensionSpec(
        name="social_rules",
        description="Broke moral rules or laws: 0 never, lower for worse violations.",
        range_low=-10,
        range_high=0,
    ),
    DimensionSpec(
        name="financial_and_material_benefits",
        description=(
            "Money, goods, jobs or opportunities gained (positive) or lost (negative), short "
            "and long term."
        ),
        range_low=-5,
        range_high=5,
    ),
    DimensionSpec(
        name="goal",
        description="Restate the agent's social goal, then how far it was reached: 0 to fully.",
        range_low=0,
        range_high=10,
    ),
]


class Aggregate(StrEnum):
    """How a judge panel's scores make one per agent and dimension."""

    MEAN = "MEAN"
    MEDIAN = "MEDIAN"


class JudgeSpec(BaseModel):
    """One judge of a panel: a model, asked `repeats` times."""

    model: str
    repeats: int = Field(default=1, ge=1)


class Panel(BaseModel):
    """The judges of an evaluation and how their scores are aggregated; a model alone is the
    panel of one judge."""

    judges: list[JudgeSpec] = Field(min_length=1)
    aggregate: Aggregate = Aggregate.MEAN

    @classmethod
    def of(cls, model: str) -> Panel:
        return cls(judges=[JudgeSpec(model=model)])

    @classmethod
    def stored(cls, label: str, judges: list[JudgeSpec], aggregate: Aggregate) -> Panel:
        """A record's panel: its judges, or the judge its `label` names in a record stored
        without them (by Sotopia, or before panels)."""
        return cls(judges=judges, aggregate=aggregate) if judges else cls.of(label)

    def runs(self) -> list[tuple[str, int]]:
        """(model, repeat) of every judge run, in the panel's order."""
        return [(j.model, repeat) for j in self.judges for repeat in range(j.repeats)]

    def label(self) -> str:
        """The panel where one judge model's name is stored (Sotopia's `models[0]`, results'
        judge): the model itself for a panel of one run, else every judge with its repeats, in
        the order of their names (the same judges in any order are the same panel), and the
        aggregate, e.g. `panel(MEDIAN): a x2, b`."""
        runs = self.runs()
        if len(runs) == 1:
            return runs[0][0]
        judges = ", ".join(
            j.model if j.repeats == 1 else f"{j.model} x{j.repeats}"
            for j in sorted(self.judges, key=lambda j: j.model)
        )
        return f"panel({self.aggregate.value}): {judges}"


class JudgeErrorCode(StrEnum):
    """Why a judge gave no valid scores."""

    UNKNOWN_MODEL = "UNKNOWN_MODEL"
    """The model is not known (or not usable) here any more."""
    TIMEOUT = "TIMEOUT"
    """Its requests kept timing out (a busy or slow endpoint)."""
    UNAVAILABLE = "UNAVAILABLE"
    """Its endpoint kept failing or refused the request."""
    INVALID_OUTPUT = "INVALID_OUTPUT"
    """Its answers never gave a usable score, re-asked included."""


Reward = tuple[float, dict[str, float]]
"""One agent's scores as Sotopia stores them: [overall, {dimension: score, overall_score}]."""


class JudgeRun(BaseModel):
    """One judge run of a panel: its scores per agent, or why it gave none."""

    model: str
    repeat: int = 0
    """Which of the model's repeats, from 0."""
    rewards: list[Reward] = Field(default_factory=list)
    reasoning: str = ""
    error: str | None = None
    code: JudgeErrorCode | None = None
    """Why it failed, when it did."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated_tokens: int = 0
    """How many of its tokens were estimated (the provider sent no count for them)."""

    @property
    def counted(self) -> bool:
        """Whether its scores count in the panel's aggregate."""
        return self.error is None

    @property
    def key(self) -> tuple[str, int]:
        return (self.model, self.repeat)


class EpisodeSetup(BaseModel):
    """Everything one episode needs.

    A partner's visible profile depends on the relationship of the pair: the
    RelationshipSpec joining the two agents if one is given, otherwise the
    scenario's relationship (Sotopia samples agent pairs whose relationship
    matches the scenario's, so the scenario value is the natural default).
    """

    scenario: ScenarioSpec
    agents: list[AgentSpec] = Field(min_length=2)
    relationships: list[RelationshipSpec] = Field(default_factory=list)
    agent_models: list[str]
    judge_model: str
    max_turns: int = Field(default=20, ge=1)
    max_stale_turns: int = Field(default=2, ge=0)
    turn_order: TurnOrder = TurnOrder.ROUND_ROBIN
    dimensions: list[DimensionSpec] = Field(default_factory=lambda: list(SOTOPIA_DIMENSIONS))
    seed: int | None = None
    human_seats: list[int] = Field(default_factory=list)
    """Seats a person plays: the episode suspends when one has to act and no action is given."""
    stand_ins: list[tuple[int, int]] = Field(default_factory=list)
    """(seat, turn) pairs of human seats whose model (`agent_models`) acts in that turn."""
    panel: Panel | None = None
    """The judges, when more than `judge_model` alone judges (then its first judge's model)."""

    @model_validator(mode="after")
    def _check(self) -> EpisodeSetup:
        if len(self.agent_models) != len(self.agents):
            raise ValueError("agent_models needs one model per agent")
        names = [a.name for a in self.agents]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ValueError(
                f"two agents are named {twice[0]!r}: each agent of an episode needs a name of its "
                "own (transcripts address agents by name)"
            )
        if not self.dimensions:
            raise ValueError("at least one evaluation dimension is needed")
        dims = [d.name for d in self.dimensions]
        if len(set(dims)) != len(dims) or OVERALL_SCORE in dims:
            raise ValueError(f"dimension names must be distinct and not {OVERALL_SCORE!r}")
        return self

    def judges(self) -> Panel:
        """The panel that judges the episode (`judge_model` alone unless `panel` is set)."""
        return self.panel or Panel.of(self.judge_model)

    def relationship_between(self, i: int, j: int) -> RelationshipType:
        a, b = self.agents[i].pk, self.agents[j].pk
        for rel in self.relationships:
            if rel.joins(a, b):
                return rel.relationship
        return self.scenario.relationship

    def goal_of(self, i: int) -> str:
        goals = self.scenario.agent_goals
        if i < len(goals):
            return goals[i]
        return f"Participate effectively in this {len(self.agents)}-agent interaction"


class AgentAction(BaseModel):
    action_type: ActionType
    argument: str = ""
    to: list[str] = Field(default_factory=list)
    """Private recipients by name; empty when everyone sees the action."""


class Injection(BaseModel):
    """An environment message the agents in `to` (all when empty) see from the turn it is
    delivered in."""

    text: str
    to: list[str] = Field(default_factory=list)


class Turn(AgentAction):
    """One agent's action in one turn: the engine's output, stored and served as it is."""

    turn: int
    agent_index: int
    agent_name: str
    phase: str | None = None
    """The game's phase the action was played in; None outside a social game."""


Triple = tuple[str, str, str]


class TurnEvent(BaseModel):
    """A turn handed to the caller as it happens, with Sotopia's messages of that turn so far."""

    turn: Turn
    messages: list[Triple]
    """The Sotopia triples of this turn so far (observations, then actions)."""
    usage: Usage = Field(default_factory=dict)
    """Tokens by model the conversation has spent so far, this turn's included."""


TerminationKind = Literal["max_turns", "too_few_agents", "stale", "game_over"]


class Transcript(BaseModel):
    agent_names: list[str]
    messages: list[list[Triple]]
    """Sotopia EpisodeLog.messages: turn 0 starts with background observations."""
    actions: list[Turn]
    """Every action chosen by an agent on its turn, in order."""
    turns: int
    termination: list[TerminationKind]
    termination_reason: str
    stats: GenerationStats


class Suspended(BaseModel):
    """An episode that stopped before `turn` to wait: for the human `seats` that have to act in
    it, or because it was asked to pause. What it played is stored already; playing it again
    with its history goes on from here."""

    reason: Literal["waiting", "paused"]
    turn: int
    seats: list[int] = Field(default_factory=list)
    messages: list[list[Triple]]
    """Sotopia's messages so far, the observations of `turn` included."""
    stats: GenerationStats


class DimensionScore(BaseModel):
    score: int
    reasoning: str = ""


class AgentEvaluation(BaseModel):
    agent_name: str
    scores: dict[str, DimensionScore]
    overall: float
    comment: str = ""
    """The judge's reasoning about the agent as a whole (beside any per-dimension reasoning)."""

    def reward(self) -> tuple[float, dict[str, float]]:
        detail = {name: float(s.score) for name, s in self.scores.items()}
        detail[OVERALL_SCORE] = self.overall
        return (self.overall, detail)


class Evaluation(BaseModel):
    agents: list[AgentEvaluation]
    reasoning: str
    rewards_prompt: str
    stats: GenerationStats

    def rewards(self) -> list[tuple[float, dict[str, float]]]:
        return [a.reward() for a in self.agents]


class EpisodeLogParts(BaseModel):
    """The fields of Sotopia's EpisodeLog that the engine produces."""

    messages: list[list[Triple]]
    reasoning: str
    rewards: list[tuple[float, dict[str, float]] | float]
    """Per agent; a bare 0.0 (Sotopia's shape) for an agent the judge gave no scores."""
    rewards_prompt: str
