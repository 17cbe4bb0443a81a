"""Sotopia's records as redis-om JSON models, at Sotopia's keys, under Parley's own indexes.

Keys are `:<sotopia module>.<Class>:<pk>` exactly as Sotopia writes them; index names are
`parley:<Class>:index`, so Sotopia's index migrator and Parley's never rewrite each other's
indexes. Only fields Parley queries are indexed. Unknown keys in stored documents are kept
(`extra="allow"`), so a Parley save never drops what another writer added.
"""

from enum import StrEnum
from typing import Any

from aredis_om import Field, JsonModel
from pydantic import BaseModel, ConfigDict

from parley.engine.ledger import ReplayCode
from parley.engine.types import (
    Aggregate,
    DimensionSpec,
    Injection,
    JudgeRun,
    JudgeSpec,
    Panel,
    RelationshipType,
    Turn,
    TurnOrder,
)
from parley.storage import keys
from parley.storage.times import StoredTime

__all__ = ["RelationshipType", "TurnOrder"]


class Record(JsonModel):
    """Base for every stored record; subclasses set their Sotopia key prefix and index name (the
    global prefix, none, is this Meta's unless they set one)."""

    model_config = ConfigDict(extra="allow", from_attributes=True)

    class Meta:
        global_key_prefix = ""


def stored(default: Any = "", description: str = "", **options: Any) -> Any:
    """A stored field that is not indexed (`Field(index=True, ...)` for one that is searched)."""
    if isinstance(default, list):
        return Field(default_factory=list, index=False, description=description, **options)
    return Field(default=default, index=False, description=description, **options)


class ListedRecord(Record):
    """A record listed in pages, ordered by index fields that end with its primary key
    (resolvers/keyset.py). Its index keeps the primary key SORTABLE (UNF: the stored value as
    it is, the order RediSearch gives a field it is not keeping), so pages are sorted and
    filtered from the index alone; otherwise every page reads the key from every match's
    document: 1.9 against 0.65 ms a page among 1,000 agents. redis-om writes the primary key's
    index field itself, without options."""

    @classmethod
    def schema_for_fields(cls) -> list[str]:
        primary = "$.pk AS pk TAG SEPARATOR |"
        fields: list[str] = super().schema_for_fields()  # type: ignore[no-untyped-call]
        return [f"{field} SORTABLE UNF" if field == primary else field for field in fields]


class AgentProfile(ListedRecord, index=True):
    """A character that takes part in simulations (Sotopia AgentProfile)."""

    first_name: str = Field(index=True, description="Given name.")
    last_name: str = Field(index=True, description="Family name.")
    age: int = stored(0, "Age in years.")
    occupation: str = Field(default="", index=True, description="Occupation.")
    gender: str = Field(default="", index=True, description="Gender, e.g. Man, Woman, Nonbinary.")
    gender_pronoun: str = stored("", "Pronouns, e.g. she/her.")
    public_info: str = stored("", "What anyone may know about the agent.")
    big_five: str = stored("", "Big Five personality traits.")
    moral_values: list[str] = stored([], "Moral foundations the agent holds.")
    schwartz_personal_values: list[str] = stored([], "Schwartz personal values.")
    personality_and_values: str = stored("", "Personality and values in prose.")
    decision_making_style: str = stored("", "How the agent makes decisions.")
    secret: str = stored("", "What the agent hides; only the agent itself sees it in play.")
    model_id: str = stored("", "Model that plays this agent by default (Sotopia's model_id).")
    mbti: str = stored("", "Myers-Briggs type.")
    tag: str = Field(default="", index=True, description="Free-form label for grouping.")

    class Meta:
        model_key_prefix = f"{keys.SOTOPIA_PROFILES_MODULE}.AgentProfile"
        index_name = keys.index_name("AgentProfile")


class EnvironmentProfile(ListedRecord, index=True):
    """A scenario: the situation, one goal per seat, and the relationship it assumes."""

    codename: str = Field(default="", index=True, description="Short name of the scenario.")
    source: str = stored("", "Where the scenario comes from.")
    scenario: str = stored(..., "The situation, as every participant sees it.")
    agent_goals: list[str] = stored(
        [], "One private goal per seat, in seat order; may hold Sotopia's hint tags."
    )
    relationship: RelationshipType = stored(
        RelationshipType.STRANGER, "The relationship the scenario assumes between participants."
    )
    age_constraint: str | None = stored(None, "Sotopia's age constraint, e.g. '[(18, 25)]'.")
    occupation_constraint: str | None = stored(None, "Sotopia's occupation constraint.")
    agent_constraint: list[list[str]] | None = None
    game_metadata: dict[str, Any] | None = stored(
        None,
        "A social game's rules (Parley's format: teams, phases, endings), or another writer's "
        "game configuration, kept as it is. Not indexed.",
    )
    action_instruction: str | None = None
    """Sotopia's instruction on how to act, given with every turn (added after 0.1.5)."""
    tag: str = Field(default="", index=True, description="Free-form label for grouping.")

    class Meta:
        model_key_prefix = f"{keys.SOTOPIA_PROFILES_MODULE}.EnvironmentProfile"
        index_name = keys.index_name("EnvironmentProfile")


class RelationshipProfile(ListedRecord, index=True):
    """How two agents relate (Sotopia RelationshipProfile); Parley keeps one per pair."""

    agent_1_id: str = Field(index=True, description="The first agent (Sotopia's agent_1_id).")
    agent_2_id: str = Field(index=True, description="The second agent (Sotopia's agent_2_id).")
    relationship: RelationshipType = Field(index=True, description="The kind of relationship.")
    background_story: str | None = stored(None, "How the relationship came about.")
    tag: str = Field(default="", index=True, description="Free-form label for grouping.")

    class Meta:
        model_key_prefix = f"{keys.SOTOPIA_PROFILES_MODULE}.RelationshipProfile"
        index_name = keys.index_name("RelationshipProfile")


class CustomEvaluationDimension(Record, index=True):
    name: str = Field(index=True)
    description: str = ""
    range_high: int
    range_low: int

    class Meta:
        model_key_prefix = f"{keys.SOTOPIA_DIMENSIONS_MODULE}.CustomEvaluationDimension"
        index_name = keys.index_name("CustomEvaluationDimension")


class CustomEvaluationDimensionList(Record, index=True):
    name: str = Field(index=True)
    dimension_pks: list[str] = []

    class Meta:
        model_key_prefix = f"{keys.SOTOPIA_DIMENSIONS_MODULE}.CustomEvaluationDimensionList"
        index_name = keys.index_name("CustomEvaluationDimensionList")


class Redelivery(StrEnum):
    """What a new worker does with an episode whose worker was lost: go on from its stored turns,
    or play it again from the start."""

    RESUME = "resume"
    RESTART = "restart"


class EpisodeStatus(StrEnum):
    """Where an episode is in its life; the last three are terminal. WAITING (on a person) and
    PAUSED hold no worker: they are parked."""

    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    WAITING = "WAITING"
    PAUSED = "PAUSED"
    EVALUATING = "EVALUATING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL

    @property
    def parked(self) -> bool:
        return self in PARKED


TERMINAL = frozenset({EpisodeStatus.COMPLETED, EpisodeStatus.FAILED, EpisodeStatus.CANCELLED})
PARKED = frozenset({EpisodeStatus.WAITING, EpisodeStatus.PAUSED})
UNFINISHED: tuple[EpisodeStatus, ...] = tuple(s for s in EpisodeStatus if s not in TERMINAL)
"""Every status an episode has before its end, in the order of its life."""


class Waiting(BaseModel):
    """Whose turn an episode waits for, and until when."""

    turn: int
    seats: list[int]
    """The human seats that still have to act in `turn`."""
    deadline: float
    """Epoch seconds; then the episode's timeout policy acts for the seats left."""


class StatusChange(BaseModel):
    status: EpisodeStatus
    at: float
    sequence: int
    attempt: int = 0
    reason: str | None = None
    resumed_from: int | None = None
    """On the RUNNING of a resumed attempt: how many turns it kept from before."""
    waiting: Waiting | None = None
    """On a WAITING: whose turn it is and until when."""


class StoredTurn(Turn):
    """A turn as stored beside Sotopia's messages, with its event sequence number and time."""

    sequence: int
    at: float = 0.0


class SeatTimeout(StrEnum):
    """What happens to a human seat that does not act before its deadline."""

    LEAVE = "LEAVE"
    """The agent leaves the conversation (a `leave` action in its name)."""
    STAND_IN = "STAND_IN"
    """A model takes that turn in the agent's place (the episode's stand-in model)."""
    FAIL = "FAIL"
    """The episode fails, with the reason."""


class HumanSeat(BaseModel):
    """A seat a person plays: only the holder of its token may act for it."""

    seat: int
    token_hash: str = ""
    """SHA-256 of the seat's token, hex; empty while the seat is open to be claimed."""


class StoredInjection(Injection):
    """An environment message added to an episode (`injectEvent`), as stored."""

    at: float = 0.0
    sequence: int = 0
    turn: int | None = None
    """The turn from which the agents see it: set when the engine delivers it."""


class ModelUsage(BaseModel):
    """Tokens one model spent on an episode (its agents' turns and the judge), summed over calls."""

    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False
    """True when some call's counts were estimated because the provider sent no `usage`."""
    estimated_tokens: int = 0
    """How many of these tokens were estimated."""
    cost: float | None = None
    """In US dollars, when the models file gives this model's prices per million tokens."""


class EvaluationStatus(StrEnum):
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"


class Evaluation(BaseModel):
    """A later judgement of a finished episode, kept beside the original (`rewards`)."""

    id: str
    judge_model: str
    """The judge, or a panel's label (engine.types.Panel.label)."""
    evaluation_dimension_list_id: str | None = None
    status: EvaluationStatus = EvaluationStatus.QUEUED
    rewards: list[tuple[float, dict[str, float]] | float] = []
    """The aggregate of the judge runs that gave scores."""
    reasoning: str = ""
    error: str | None = None
    created_at: StoredTime = 0.0
    """Kept in its re-judging's hash too (storage/times.py)."""
    finished_at: StoredTime | None = None
    judges: list[JudgeSpec] = []
    """The panel's judges; empty in an evaluation stored before panels: `judge_model` alone."""
    judge_aggregate: Aggregate = Aggregate.MEAN
    judge_runs: list[JudgeRun] = []
    """Each judge run so far, with its scores or why it gave none."""

    def panel(self) -> Panel:
        return Panel.stored(self.judge_model, self.judges, self.judge_aggregate)


class ReplayCheck(BaseModel):
    """How a replay compares with its source, turn by turn, then scores and outcome."""

    matched: bool
    code: ReplayCode | None = None
    """Why it does not match (None when it does)."""
    turns_matched: int = 0
    """Turns equal to the source's before the first that differs (all of them when matched)."""
    divergence: str | None = None
    """The first difference, in words."""


class SeatModel(BaseModel):
    """The model a fork puts in one seat instead of its parent's."""

    seat: int
    model: str


class SeatGoal(BaseModel):
    """The goal a fork gives one seat instead of its scenario's."""

    seat: int
    goal: str


class SeatProfile(BaseModel):
    """Profile fields a fork gives one seat's agent instead of its stored ones (a name is
    not among them: the kept turns name their speakers)."""

    seat: int
    age: int | None = None
    occupation: str | None = None
    public_info: str | None = None
    personality_and_values: str | None = None
    decision_making_style: str | None = None
    big_five: str | None = None
    mbti: str | None = None
    secret: str | None = None

    def changes(self) -> dict[str, Any]:
        """The fields it sets."""
        return self.model_dump(exclude={"seat"}, exclude_none=True)


class ForkChange(BaseModel):
    """What a fork changes from its parent from its fork turn on."""

    seat_models: list[SeatModel] = []
    injection: Injection | None = None
    """An environment message delivered in the fork's first own turn."""
    goals: list[SeatGoal] = []
    """Goals that replace the scenario's for these seats (the agents see them from the start:
    the kept turns are the parent's, played with the old goals)."""
    profiles: list[SeatProfile] = []
    """Profile fields that replace the stored agents' for these seats (seen likewise)."""


class EpisodeLog(ListedRecord, index=True):
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
    turn_order: TurnOrder = TurnOrder.ROUND_ROBIN
    evaluation_dimension_list_id: str | None = None
    error: str | None = None
    judge_error: str | None = None
    """Why the judge gave no scores to an episode that COMPLETED without them (its rewards
    Sotopia's bare 0.0): its conversation stands, and re-judging it with its own judge and
    dimensions fills its scores."""
    termination_reason: str | None = None
    generation_stats: dict[str, float] = {}
    idempotency_key: str | None = None
    redelivery: Redelivery = Redelivery.RESUME
    owner: str | None = None
    """The worker running the current attempt."""
    handed_back: str | None = None
    """Set by a worker that stopped and handed the episode back (it was not lost)."""
    losses: int = 0
    """Workers that stopped renewing their lease on this episode (died, hung, cut off)."""
    experiment_id: str = Field(default="", index=True, description="The experiment it belongs to.")
    experiment_slot: int | None = None
    """The slot of its experiment it was started (or forked) for."""
    arm: str = ""
    """In an experiment with arms: "control" for a control slot's episode, else its arm."""
    usage: list[ModelUsage] = []
    prompt_tokens: int = Field(default=0, index=True, sortable=True, description="All models'.")
    completion_tokens: int = Field(default=0, index=True, sortable=True)
    estimated_tokens: int = Field(default=0, index=True, sortable=True)
    cost: float | None = Field(
        default=None,
        index=True,
        sortable=True,
        description="US dollars, when every model used has prices.",
    )
    evaluations: list[Evaluation] = []
    judges: list[JudgeSpec] = []
    """The judge panel; empty in a record Sotopia (or Parley before panels) wrote: the judge
    is `models[0]` alone. For a panel of more than one judge run, `models[0]` is its label."""
    judge_aggregate: Aggregate = Aggregate.MEAN
    judge_runs: list[JudgeRun] = []
    """Each judge run so far (stored as each ends, so a new attempt keeps them): its scores,
    which `rewards` aggregates, or why it gave none."""
    human_seats: list[HumanSeat] = []
    seat_deadline_seconds: float = 300.0
    """How long a human seat has for its turn."""
    on_seat_timeout: SeatTimeout = SeatTimeout.LEAVE
    stand_in_model: str | None = None
    """The model that acts for a human seat that timed out, under STAND_IN."""
    stand_ins: list[tuple[int, int]] = []
    """(seat, turn) pairs a stand-in model plays, after the seat's deadline passed."""
    waiting: Waiting | None = None
    """Set while WAITING: the turn and seats awaited, and the deadline."""
    pause_at: int | None = None
    """The engine pauses before this turn (0: before its next one); set by pause and step."""
    injections: list[StoredInjection] = []
    job: str | None = None
    """The entry id of the episode's current job: an older entry for it is stale."""
    replay_of: str | None = None
    """The episode this one replays from its ledger, asking no model."""
    replay: ReplayCheck | None = None
    """Set when a replay ends: whether it matched its source."""
    cache: bool = False
    """Answer a request identical to one any ledger holds with its recorded answer."""
    traceparent: str = ""
    """The W3C traceparent of the span that queued it (core/tracing.py), which every attempt's
    spans continue: one trace per episode ("" when it was queued without tracing)."""

    parent_id: str = Field(
        default="", index=True, description="The episode this one is a fork of ('' for none)."
    )
    forked_at_turn: int | None = None
    """For a fork: how many of its parent's turns it began with (they are its first turns)."""
    fork_change: ForkChange | None = None
    """For a fork: what it changed from its parent."""
    created_at: float = Field(default=0.0, index=True, sortable=True)
    started_at: float | None = None
    finished_at: float | None = None

    def panel(self) -> Panel:
        return Panel.stored((self.models or [""])[0], self.judges, self.judge_aggregate)

    class Meta:
        model_key_prefix = f"{keys.SOTOPIA_LOGS_MODULE}.EpisodeLog"
        index_name = keys.index_name("EpisodeLog")


class ExperimentSlot(BaseModel):
    """One episode an experiment's design asks for: who meets where, with which models."""

    scenario_id: str
    agent_ids: list[str]
    agent_models: list[str]
    repeat: int = 0
    model: str = ""
    """The model this slot measures (the compared one, in a design against a partner)."""
    seat: int | None = None
    """The seat of `model` in a design against a partner; None in one with explicit seats."""
    arm: str = ""
    """The intervention arm this slot plays ("" for a control slot: the design's own)."""
    control_slot: int | None = None
    """For an arm's slot: the control slot whose episode it forks."""


class Experiment(ListedRecord, index=True):
    """A named batch of episodes and its design. The slots the design expanded into, and which
    episode fills each, are kept beside it (`keys.experiment_plan`, `keys.experiment_slots`)."""

    name: str = Field(index=True, description="Name, unique with the tag.")
    tag: str = Field(default="", index=True, description="Tag its episodes carry.")
    design: dict[str, Any] = {}
    slot_count: int = 0
    stopped: str | None = None
    """Why a paced experiment queues no more episodes (lifecycle/pacing.py's `Stop`)."""
    cancelled_at: float | None = None
    """When it was last cancelled: a paced one queues no more until it is started again."""
    created_at: float = Field(default=0.0, index=True, sortable=True)
    started_at: float | None = None
    """When it was last started (or resumed)."""
    replay_of: str | None = None
    """The experiment whose episodes this one replays, slot by slot."""

    class Meta:
        global_key_prefix = keys.EXPERIMENTS[0]
        model_key_prefix = keys.EXPERIMENTS[1]
        index_name = keys.index_name("Experiment")


class AnnotationForEpisode(BaseModel):
    """A person's rating of an episode, stored as Sotopia stores one (`keys.annotation`), for
    Sotopia's aggregation to read: the scores in the shape of an episode's `rewards`."""

    pk: str
    episode: str
    """The episode rated."""
    annotator_id: str
    """The `Annotator` who rated it."""
    rewards: list[tuple[float, dict[str, float]] | float]
    reasoning: str


class Annotator(BaseModel):
    """A person who rates episodes, as Sotopia stores one (`keys.annotator`)."""

    pk: str
    name: str
    email: str = ""


class StudyItem(BaseModel):
    """One episode a rater rates: its number in the study's episode list, and the id of the
    AnnotationForEpisode its rating is saved as."""

    episode: int
    annotation: str


class StudyRater(BaseModel):
    """A person who rates a study's episodes, through a link that holds their token."""

    name: str
    annotator_id: str
    token_hash: str
    """SHA-256 of the rater's token, hex (the token is shown once)."""
    items: list[StudyItem]
    """The rater's episodes in the order the rater sees them (shuffled, seeded by the rater)."""


class ExpectedScore(BaseModel):
    """What a rater should give one agent of a gold episode on one dimension."""

    agent: int
    dimension: str
    score: float


class GoldEpisode(BaseModel):
    """An episode every rater rates, with the scores expected of them: a rater further off any
    of them than `tolerance` is flagged (never stopped)."""

    episode: int
    """Its number in the study's episode list."""
    expected: list[ExpectedScore]
    tolerance: float


class RatingStudy(ListedRecord, index=True):
    """Episodes that people rate on a rubric, blind, each by several raters. Where each rater
    is (their saved ratings, drafts and gold checks) is kept beside it (`keys.study_ratings`,
    `keys.study_progress`, `keys.study_drafts`, `keys.study_gold`); the ratings themselves are
    Sotopia's AnnotationForEpisode records."""

    name: str = Field(index=True, description="Name of the study.")
    episode_ids: list[str] = stored([], "The episodes rated, gold ones included.")
    gold: list[GoldEpisode] = stored([], "The gold episodes and their expected scores.")
    raters_per_episode: int = stored(1, "How many raters rate each episode (gold: every one).")
    evaluation_dimension_list_id: str | None = stored(None, "The rubric's list; None: Sotopia's.")
    rubric: list[DimensionSpec] = stored([], "The dimensions each agent is rated on.")
    shows_secrets: bool = stored(False, "Whether raters see the agents' secrets.")
    raters: list[StudyRater] = stored([], "The raters, by number.")
    created_at: float = Field(default=0.0, index=True, sortable=True)
    closed_at: float | None = stored(None, "When it was closed: its links open nothing since.")
    experiment_id: str | None = stored(None, "The experiment whose episodes it rates, if made so.")

    class Meta:
        global_key_prefix = keys.RATING_STUDIES[0]
        model_key_prefix = keys.RATING_STUDIES[1]
        index_name = keys.index_name("RatingStudy")


MODELS: tuple[type[Record], ...] = (
    EpisodeLog,
    AgentProfile,
    EnvironmentProfile,
    RelationshipProfile,
    CustomEvaluationDimension,
    CustomEvaluationDimensionList,
    Experiment,
    RatingStudy,
)
LISTED: tuple[type[ListedRecord], ...] = (
    EpisodeLog,
    AgentProfile,
    EnvironmentProfile,
    RelationshipProfile,
    Experiment,
    RatingStudy,
)
"""The records list queries page through (their stored JSON may be held: storage/tracking.py)."""
