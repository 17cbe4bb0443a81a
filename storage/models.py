"""Sotopia's records as redis-om JSON models, at Sotopia's keys, under Parley's own indexes.

Keys are `:<sotopia module>.<Class>:<pk>` exactly as Sotopia writes them; index names are
`parley:<Class>:index`, so Sotopia's index migrator and Parley's never rewrite each other's
indexes. Only fields Parley queries are indexed. Unknown keys in stored documents are kept
(`extra="allow"`), so a Parley save never drops what another writer added.
"""

from enum import IntEnum, StrEnum
from typing import Any

from aredis_om import Field, JsonModel
from pydantic import BaseModel, ConfigDict

SOTOPIA_PROFILES = "sotopia.database.persistent_profile"
SOTOPIA_LOGS = "sotopia.database.logs"
SOTOPIA_DIMENSIONS = "sotopia.database.evaluation_dimensions"


class RelationshipType(IntEnum):
    """Sotopia's relationship levels, stored as their integer codes."""

    STRANGER = 0
    KNOW_BY_NAME = 1
    ACQUAINTANCE = 2
    FRIEND = 3
    ROMANTIC_RELATIONSHIP = 4
    FAMILY_MEMBER = 5


class Record(JsonModel):
    """Base for every stored record; subclasses set their Sotopia key prefix and index name."""

    model_config = ConfigDict(extra="allow", from_attributes=True)

    class Meta:
        global_key_prefix = ""


class AgentProfile(Record, index=True):
    first_name: str = Field(index=True)
    last_name: str = Field(index=True)
    age: int = 0
    occupation: str = Field(default="", index=True)
    gender: str = Field(default="", index=True)
    gender_pronoun: str = ""
    public_info: str = ""
    big_five: str = ""
    moral_values: list[str] = []
    schwartz_personal_values: list[str] = []
    personality_and_values: str = ""
    decision_making_style: str = ""
    secret: str = ""
    model_id: str = ""
    mbti: str = ""
    tag: str = Field(default="", index=True)

    class Meta:
        global_key_prefix = ""
        model_key_prefix = f"{SOTOPIA_PROFILES}.AgentProfile"
        index_name = "parley:AgentProfile:index"


class EnvironmentProfile(Record, index=True):
    """A scenario: the situation, one goal per seat, and the relationship it assumes."""

    codename: str = Field(default="", index=True)
    source: str = ""
    scenario: str
    agent_goals: list[str] = []
    relationship: int = 0
    age_constraint: str | None = None
    occupation_constraint: str | None = None
    agent_constraint: list[list[str]] | None = None
    game_metadata: dict[str, Any] | None = None
    tag: str = Field(default="", index=True)

    class Meta:
        global_key_prefix = ""
        model_key_prefix = f"{SOTOPIA_PROFILES}.EnvironmentProfile"
        index_name = "parley:EnvironmentProfile:index"


class RelationshipProfile(Record, index=True):
    agent_1_id: str = Field(index=True)
    agent_2_id: str = Field(index=True)
    relationship: int = Field(index=True)
    background_story: str | None = None
    tag: str = Field(default="", index=True)

    class Meta:
        global_key_prefix = ""
        model_key_prefix = f"{SOTOPIA_PROFILES}.RelationshipProfile"
        index_name = "parley:RelationshipProfile:index"


def relationship_pair_key(agent_id: str, other_id: str) -> str:
    """Key that reserves an unordered pair of agents for one relationship."""
    first, second = sorted((agent_id, other_id))
    return f"parley:relationship-pair:{first}:{second}"


class CustomEvaluationDimension(Record, index=True):
    name: str = Field(index=True)
    description: str = ""
    range_high: int
    range_low: int

    class Meta:
        global_key_prefix = ""
        model_key_prefix = f"{SOTOPIA_DIMENSIONS}.CustomEvaluationDimension"
        index_name = "parley:CustomEvaluationDimension:index"


class CustomEvaluationDimensionList(Record, index=True):
    name: str = Field(index=True)
    dimension_pks: list[str] = []

    class Meta:
        global_key_prefix = ""
        model_key_prefix = f"{SOTOPIA_DIMENSIONS}.CustomEvaluationDimensionList"
        index_name = "parley:CustomEvaluationDimensionList:index"


class EpisodeStatus(StrEnum):
    """Where an episode is in its life; the last three are terminal."""

    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    EVALUATING = "EVALUATING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL


TERMINAL = frozenset({EpisodeStatus.COMPLETED, EpisodeStatus.FAILED, EpisodeStatus.CANCELLED})


class StatusChange(BaseModel):
    status: EpisodeStatus
    at: float
    sequence: int
    attempt: int = 0
    reason: str | None = None


class StoredTurn(BaseModel):
    """One agent's action, as the worker stored it (structured, beside Sotopia's messages)."""

    sequence: int
    turn: int
    agent_index: int
    agent_name: str
    action_type: str
    argument: str = ""
    to: list[str] = []
    at: float = 0.0


class EpisodeLog(Record, index=True):
    """Sotopia's EpisodeLog, plus the run state Parley adds as extra keys.

    A record Sotopia wrote has none of the additions and loads as a COMPLETED episode.
    """

    environment: str = Field(index=True)
    agents: list[str] = Field(index=True)
    tag: str | None = Field(default="", index=True)
    models: list[str] | None = []
    agent_classes: list[str] | None = []
    messages: list[list[tuple[str, str, str]]] = []
    reasoning: str = ""
    rewards: list[tuple[float, dict[str, float]] | float] = []
    rewards_prompt: str = ""

    status: EpisodeStatus = Field(default=EpisodeStatus.COMPLETED, index=True)
    status_history: list[StatusChange] = []
    sequence: int = 0
    attempt: int = 0
    turns: list[StoredTurn] = []
    progress: int = 0
    max_turns: int = 0
    turn_order: str = "round-robin"
    evaluation_dimension_list_id: str | None = None
    error: str | None = None
    termination_reason: str | None = None
    generation_stats: dict[str, float] = {}
    idempotency_key: str | None = None
    created_at: float = Field(default=0.0, index=True, sortable=True)
    started_at: float | None = None
    finished_at: float | None = None

    class Meta:
        global_key_prefix = ""
        model_key_prefix = f"{SOTOPIA_LOGS}.EpisodeLog"
        index_name = "parley:EpisodeLog:index"


MODELS: tuple[type[Record], ...] = (
    EpisodeLog,
    AgentProfile,
    EnvironmentProfile,
    RelationshipProfile,
    CustomEvaluationDimension,
    CustomEvaluationDimensionList,
)
