"""GraphQL types of episodes: runs, turns, rewards, and the events of a run."""

import asyncio
from datetime import datetime
from typing import Annotated, Any

import strawberry

from parley.engine.models import ModelInfo
from parley.engine.types import JudgeRun as StoredRun
from parley.engine.types import JudgeSpec
from parley.graph.connection import AFTER, FIRST, Connection, to_connection
from parley.graph.context import Info
from parley.graph.enums import (
    CallPurpose,
    EpisodeStatus,
    EvaluationStatus,
)
from parley.graph.errors import UserInputError
from parley.graph.fields import shows, stored, wrapped
from parley.graph.fork_types import ForkChange
from parley.graph.game_types import EpisodeGame, episode_game_type
from parley.graph.listed import Listed
from parley.graph.model_call_types import ModelCall, model_call
from parley.graph.projection import Reads, reading
from parley.graph.seat_types import (
    DimensionScore,
    EnvironmentMessage,
    HumanSeat,
    Perspective,
    Waiting,
    YourTurn,
    dimension_scores,
    moment,
)
from parley.graph.types import Agent, Relationship, Scenario, load_agent, primary_key
from parley.graph.usage_types import ModelUsage
from parley.resolvers import (
    episodes,
    games,
    panels,
    perspective,
    relationships,
    transcript,
)
from parley.resolvers import (
    model_calls as ledger_reads,
)
from parley.resolvers.names import agent_name
from parley.storage import models
from parley.storage.events import EpisodeEvent as StoredEvent

RUNS_READ = (
    "judge_runs", "status", "rewards", "reasoning", "judge_error", "models", "judges",
    "judge_aggregate", "agents",
)  # fmt: skip
"""What an episode's judge runs are read from (one stored before panels: its own fields)."""


def when(seconds: float | None) -> datetime | None:
    return moment(seconds) if seconds else None


def an_id(value: str) -> strawberry.ID:
    return strawberry.ID(value)


def optional_id(value: str | None) -> strawberry.ID | None:
    return None if value is None else an_id(value)


@strawberry.type(description="One status change of an episode.")
@shows(models.StatusChange, held_as="change")
class StatusChange:
    change: strawberry.Private[models.StatusChange]

    status = stored("The status entered.")
    at = stored("When.", moment)
    sequence = stored("The episode's event sequence number.")
    attempt = stored("Which run of the episode (1 = first).")
    reason = stored("Why: for FAILED, CANCELLED, and a RUNNING that begins a new attempt.")
    resumed_from_turn = stored(
        "On the RUNNING of a resumed attempt: how many turns it kept from before.",
        source="resumed_from",
    )


@strawberry.type(description="One agent's action in one turn.")
@shows(models.StoredTurn)
class Turn:
    record: strawberry.Private[models.StoredTurn]

    turn = stored("Turn number, from 0.")
    agent_index = stored("Seat of the agent that acted (index into agents).")
    speaker = stored("Display name of the agent that acted.", source="agent_name")
    action_type = stored("What kind of action.")
    argument = stored("What was said or done.")
    to = stored("Private recipients by name; empty when everyone saw it.")
    phase = stored("The social game's phase it was played in; null outside one.")
    sequence = stored("The episode's event sequence number of this turn.")
    at = stored("When it was stored.", when)


async def reward_agent(root: "Reward", info: Info) -> Agent | None:
    return await load_agent(info, root.agent_id) if root.agent_id else None


@strawberry.type(description="The judge's scores for one agent.")
class Reward:
    agent_id: strawberry.Private[str | None]
    agent_index: int = strawberry.field(description="Seat of the agent.")
    agent: Agent | None = strawberry.field(
        resolver=reward_agent, description="The agent; null if deleted."
    )
    overall: float | None = strawberry.field(
        description="Unweighted mean of the dimensions; null when the judge failed (Sotopia 0.0)."
    )
    dimensions: list[DimensionScore] = strawberry.field(description="Per-dimension scores.")


def rewards_of(
    rewards: list[tuple[float, dict[str, float]] | float], agents: list[str]
) -> list[Reward]:
    out = []
    for i, reward in enumerate(rewards):
        pk = agents[i] if i < len(agents) else None
        if isinstance(reward, float | int):
            out.append(Reward(agent_index=i, agent_id=pk, overall=None, dimensions=[]))
            continue
        overall, detail = reward
        dims = dimension_scores(detail)
        out.append(Reward(agent_index=i, agent_id=pk, overall=overall, dimensions=dims))
    return out


@strawberry.type(description="One judge of a panel: a model, asked `repeats` times.")
@shows(JudgeSpec)
class Judge:
    record: strawberry.Private[JudgeSpec]

    model = stored("The judge model.")
    repeats = stored("How many times it judges the episode, each a judge run of its own.")


@strawberry.type(
    description="One judge run of an evaluation: a judge's scores per agent, or why it gave "
    "none (then it is left out of the aggregate)."
)
@shows(StoredRun)
class JudgeRun:
    record: strawberry.Private[StoredRun]
    agents: strawberry.Private[list[str]]

    model = stored("The judge model.")
    repeat = stored("Which of the model's repeats, from 0.")

    @strawberry.field(description="COMPLETED with scores, or FAILED (see error and code).")
    def status(self) -> EvaluationStatus:
        return EvaluationStatus.COMPLETED if self.record.counted else EvaluationStatus.FAILED

    @strawberry.field(description="Its scores per agent; empty when it FAILED.")
    def rewards(self) -> list[Reward]:
        return rewards_of(list(self.record.rewards), self.agents)

    reasoning = stored("Its reasoning (Sotopia's comment string).")
    error = stored("Why it gave no valid scores, if it did not.")
    code = stored("Why it gave no valid scores, as a code.")
    prompt_tokens = stored("Prompt tokens it spent.")
    completion_tokens = stored("Completion tokens it spent.")
    estimated_tokens = stored("How many of its tokens are estimates (no count from the provider).")


def _panel_judges(root: Any) -> list[Judge]:
    return [Judge(record=judge) for judge in root.record.panel().judges]


def panel_judges(metadata: dict[str, Any] | None = None) -> Any:
    """The `judges` field of a type whose `record` names a judge panel (`panel()`)."""
    return strawberry.field(
        resolver=_panel_judges,
        description="The judges: the judge model alone, or a panel.",
        metadata=metadata,
    )


@strawberry.type(
    description="How a replay compares with its source: turn by turn, then its scores and outcome."
)
@shows(models.ReplayCheck)
class ReplayCheck:
    record: strawberry.Private[models.ReplayCheck]

    matched = stored("Whether its transcript, scores and outcome are the source's.")
    code = stored("Why it does not match; null when it does.")
    turns_matched = stored("Turns equal to the source's before the first that differs.")
    divergence = stored(
        "The first difference, in words (for REPLAY_MISSING_CALL: the seat, turn or judge and "
        "the request's hash)."
    )


def judge_runs(runs: list[StoredRun], agents: list[str]) -> list[JudgeRun]:
    return [JudgeRun(record=run, agents=agents) for run in runs]


@strawberry.type(description="A later judgement of a finished episode (one re-judging's).")
@shows(models.Evaluation)
class Evaluation:
    record: strawberry.Private[models.Evaluation]
    agents: strawberry.Private[list[str]]

    id = stored("The re-judging's id (shared by the episodes it judged).", an_id)

    judge_model = stored("The judge model; for a panel of more than one run, its label.")
    judges = panel_judges()

    judge_aggregate = stored("How the judge runs' scores make `rewards`.")

    evaluation_dimension_list_id = stored(
        "The dimensions judged; null for Sotopia's seven.", optional_id
    )

    status = stored("Where this evaluation is.")

    @strawberry.field(
        description="The scores per agent, once COMPLETED: the aggregate of the judge runs "
        "that gave scores."
    )
    def rewards(self) -> list[Reward]:
        return rewards_of(self.record.rewards, self.agents)

    @strawberry.field(description="Each judge run so far, in the panel's order.")
    def judge_runs(self) -> list[JudgeRun]:
        return judge_runs(panels.evaluation_runs(self.record), self.agents)

    @strawberry.field(description="Judge runs whose scores `rewards` aggregates.")
    def judge_runs_counted(self) -> int:
        return sum(run.counted for run in panels.evaluation_runs(self.record))

    @strawberry.field(description="Judge runs that gave no valid scores (left out).")
    def judge_runs_failed(self) -> int:
        return sum(not run.counted for run in panels.evaluation_runs(self.record))

    reasoning = stored("The judges' reasoning.")
    error = stored("Why it FAILED, if it did (every judge run failed).")
    created_at = stored("When it was queued.", when)
    finished_at = stored("When it ended.", when)


@strawberry.type(description="Progress through the turn limit.")
class Progress:
    turn: int = strawberry.field(description="Turns done.")
    max_turns: int = strawberry.field(description="The turn limit.")


@strawberry.type(description="One simulation run (Sotopia EpisodeLog) and its live state.")
@shows(models.EpisodeLog)
class Episode:
    """Each field is declared once, here: `stored(...)` reads the record's field of its name
    (graph/fields.py `shows`); any other says what it reads (`reading`), which makes
    `EPISODE_READS`, and whether it reads beyond the record (it awaits) decides which answers
    are kept (graph/projection.py `own_types`)."""

    record: strawberry.Private[models.EpisodeLog]

    id = primary_key()

    status = stored("Current status.")

    @strawberry.field(
        description="Every status change, oldest first.", metadata=reading("status_history")
    )
    def status_history(self) -> list[StatusChange]:
        return [StatusChange(change=c) for c in self.record.status_history]

    attempt = stored("Which run this is: 0 while queued, then 1, 2 after a restart.")
    sequence = stored("The last event sequence number of this episode.")

    @strawberry.field(
        description="Turns done out of the limit.", metadata=reading("progress", "max_turns")
    )
    def progress(self) -> Progress:
        return Progress(turn=self.record.progress, max_turns=self.record.max_turns)

    @strawberry.field(description="Id of the scenario.", metadata=reading("environment"))
    def scenario_id(self) -> strawberry.ID:
        return strawberry.ID(self.record.environment)

    @strawberry.field(
        description="The scenario; null if it was deleted.", metadata=reading("environment")
    )
    async def scenario(self, info: Info) -> Scenario | None:
        record = await info.context.scenarios.load(self.record.environment)
        return wrapped(Scenario, record)

    @strawberry.field(
        description="Its social game's state (omniscient); null outside a game.",
        metadata=reading("environment", "agents", "turns", "messages"),
    )
    async def game(self, info: Info) -> EpisodeGame | None:
        scenario = await info.context.scenarios.load(self.record.environment)
        found = await info.context.agents.load_many(self.record.agents)
        names = [agent_name(a) if a else "" for a in found]
        state = games.episode_game(self.record, scenario, names)
        return episode_game_type(state) if state else None

    @strawberry.field(description="Ids of the agents, in seat order.", metadata=reading("agents"))
    def agent_ids(self) -> list[strawberry.ID]:
        return [strawberry.ID(a) for a in self.record.agents]

    @strawberry.field(
        description="The agents in seat order; null where one was deleted.",
        metadata=reading("agents"),
    )
    async def agents(self, info: Info) -> list[Agent | None]:
        found = await info.context.agents.load_many(self.record.agents)
        return [Agent(record=r) if r is not None else None for r in found]

    @strawberry.field(
        description="Stored relationships among this episode's agents.",
        metadata=reading("agents"),
    )
    async def relationships(self) -> list[Relationship]:
        ids = set(self.record.agents)
        found = {}
        for pk in self.record.agents:
            for r in await relationships.relationships_of(pk):
                if {r.agent_1_id, r.agent_2_id} <= ids:
                    found[r.pk] = r
        return [Relationship(record=r) for r in found.values()]

    @strawberry.field(description="Model of each agent, in seat order.", metadata=reading("models"))
    def agent_models(self) -> list[str]:
        return list((self.record.models or [])[1:])

    @strawberry.field(
        description="Sotopia's agent class of each seat, in seat order (empty when not recorded).",
        metadata=reading("agent_classes"),
    )
    def agent_classes(self) -> list[str]:
        return list(self.record.agent_classes or [])

    @strawberry.field(
        description="Model of the judge; for a panel of more than one judge run, its label "
        "(as results group by it).",
        metadata=reading("models"),
    )
    def judge_model(self) -> str | None:
        models = self.record.models or []
        return models[0] if models else None

    judges = panel_judges(reading("models", "judges", "judge_aggregate"))

    judge_aggregate = stored("How the judge runs' scores make `rewards`.")

    turn_order = stored("How turns are ordered.")

    @strawberry.field(
        description="Evaluation dimension list; null means Sotopia's seven.",
        metadata=reading("evaluation_dimension_list_id"),
    )
    def evaluation_dimension_list_id(self) -> strawberry.ID | None:
        list_id = self.record.evaluation_dimension_list_id
        return strawberry.ID(list_id) if list_id else None

    tag = stored("Free-form label for batches.")

    @strawberry.field(
        description="Each agent's actions, in order.", metadata=reading("turns", "messages")
    )
    def turns(self) -> list[Turn]:
        # An episode Sotopia wrote stores no turns of its own: they are read from `messages`.
        return [Turn(record=t) for t in transcript.episode_turns(self.record)]

    @strawberry.field(
        description="Sotopia's transcript: per turn, (sender, receiver, text) triples.",
        metadata=reading("messages"),
    )
    def messages(self) -> list[list[list[str]]]:
        return [[list(m) for m in turn] for turn in self.record.messages]

    @strawberry.field(
        description="The judge's scores per agent, once COMPLETED (a panel's: the aggregate "
        "of its judge runs that gave scores).",
        metadata=reading("rewards", "agents"),
    )
    def rewards(self) -> list[Reward]:
        return rewards_of(self.record.rewards, self.record.agents)

    @strawberry.field(
        description="Each judge run so far, in the panel's order (stored as each ends).",
        metadata=reading(*RUNS_READ),
    )
    def judge_runs(self) -> list[JudgeRun]:
        return judge_runs(panels.episode_runs(self.record), self.record.agents)

    @strawberry.field(
        description="Judge runs whose scores `rewards` aggregates.", metadata=reading(*RUNS_READ)
    )
    def judge_runs_counted(self) -> int:
        return sum(run.counted for run in panels.episode_runs(self.record))

    @strawberry.field(
        description="Judge runs that gave no valid scores (left out of `rewards`).",
        metadata=reading(*RUNS_READ),
    )
    def judge_runs_failed(self) -> int:
        return sum(not run.counted for run in panels.episode_runs(self.record))

    @strawberry.field(
        description="Later judgements (re-judgings), oldest first; `rewards` stays the "
        "original, unless the episode had none and one of these, by its own judge on its own "
        "dimensions, gave them.",
        metadata=reading("evaluations", "agents"),
    )
    def evaluations(self) -> list["Evaluation"]:
        return [Evaluation(record=e, agents=self.record.agents) for e in self.record.evaluations]

    reasoning = stored("The judge's reasoning.")
    error = stored("Why the episode failed, if it did.")
    judge_error = stored(
        "Why the judge gave no scores, for an episode that COMPLETED without "
        "them: its conversation is kept, and re-judging it with its own judge and dimensions "
        "(rejudgeEpisodes) makes that judgement its scores."
    )
    termination_reason = stored("Why the conversation ended.")
    replay_of = stored(
        "The episode this one replays from its ledger of model calls (asking no model); "
        "null for an episode that is no replay.",
        optional_id,
    )

    @strawberry.field(
        description="How this replay compares with its source, turn by turn, then its scores "
        "and outcome; null until a replay ends (and for an episode that is no replay).",
        metadata=reading("replay"),
    )
    def replay(self) -> ReplayCheck | None:
        check = self.record.replay
        return None if check is None else ReplayCheck(record=check)

    cache = stored(
        "Whether a request identical to one any ledger holds was answered from it (an "
        "experiment's cache mode)."
    )
    generation_stats = stored("Model requests, retries, repairs and fallbacks it took.")

    @strawberry.field(
        description="Tokens per model, the agents' and the judge's, over every attempt "
        "(a resumed attempt adds to what the earlier one stored with its turns).",
        metadata=reading("usage"),
    )
    def usage(self) -> list[ModelUsage]:
        return [ModelUsage(record=row) for row in self.record.usage]

    cost = stored(
        "US dollars, the models' costs summed; null unless the models file gives "
        "prices for every model it used."
    )

    @strawberry.field(
        description="The seats people play, and whether each has been claimed.",
        metadata=reading("human_seats"),
    )
    def human_seats(self) -> list[HumanSeat]:
        return [HumanSeat(seat=s.seat, claimed=bool(s.token_hash)) for s in self.record.human_seats]

    seat_deadline_seconds = stored("Seconds a human seat has for its turn.")
    on_seat_timeout = stored("What happens to a human seat that does not act in time.")
    stand_in_model = stored("The model that acts for a timed-out seat under STAND_IN.")

    @strawberry.field(
        description="While WAITING: the turn and seats awaited, and the deadline.",
        metadata=reading("waiting"),
    )
    def waiting(self) -> Waiting | None:
        waiting = self.record.waiting  # stored only while WAITING (storage/episode_store.py)
        return Waiting.of(waiting) if waiting else None

    pause_at = stored(
        "Set while a pause or step is asked of a running episode: it pauses before "
        "this turn (0: its next one)."
    )

    @strawberry.field(
        description="Environment messages added with injectEvent, in order.",
        metadata=reading("injections"),
    )
    def environment_messages(self) -> list[EnvironmentMessage]:
        return [EnvironmentMessage.of(i) for i in self.record.injections]

    @strawberry.field(
        description="The episode as the agent in `seat` saw it (its own goal and secret, its "
        "partners as their relationship shows them, the turns it could see); null when the seat "
        "does not exist or its records are gone.",
        metadata=reading(
            "agents",
            "environment",
            "models",
            "judges",
            "judge_aggregate",
            "max_turns",
            "turn_order",
            "evaluation_dimension_list_id",
            "human_seats",
            "stand_in_model",
            "stand_ins",
            "turns",
            "messages",
            "injections",
            "fork_change",
            "status",
            "waiting",
            "rewards",
        ),
    )
    async def perspective(self, seat: int) -> Perspective | None:
        found, errors = await perspective.perspective(self.record, seat)
        if errors:
            raise UserInputError(errors[0].message)
        return Perspective(view=found) if found else None

    @strawberry.field(
        description="The requests sent to models for this episode (its ledger), in the order "
        "they ended: each as sent, with its answer, tokens, latency and error. Kept for "
        "PARLEY_MODEL_CALL_RETENTION_DAYS after the last one; an API token's only (they "
        "show every agent's prompts, secrets included).",
        metadata=reading("pk"),
    )
    async def model_calls(
        self,
        info: Info,
        first: Annotated[int | None, strawberry.argument(description=FIRST)] = None,
        after: Annotated[str | None, strawberry.argument(description=AFTER)] = None,
        turn: Annotated[
            int | None, strawberry.argument(description="Only the calls made in this turn.")
        ] = None,
        purpose: Annotated[
            CallPurpose | None, strawberry.argument(description="Only calls for this purpose.")
        ] = None,
    ) -> Connection[ModelCall]:
        page = await ledger_reads.model_calls(
            info.context.services.client, str(self.record.pk), first, after, turn, purpose
        )
        return to_connection(page, model_call)

    @strawberry.field(
        description="The episode this one is a fork of; null for an episode that is not a fork, "
        "or whose parent was deleted (`parentId` still names it).",
        metadata=reading("parent_id"),
    )
    async def parent(self) -> "Episode | None":
        if not self.record.parent_id:
            return None
        return wrapped(Episode, await episodes.get_episode(self.record.parent_id))

    @strawberry.field(
        description="Id of the episode this one is a fork of; null when not a fork.",
        metadata=reading("parent_id"),
    )
    def parent_id(self) -> strawberry.ID | None:
        return strawberry.ID(self.record.parent_id) if self.record.parent_id else None

    forked_at_turn = stored(
        "For a fork: how many of its parent's turns it began with (its turns 0 to "
        "forkedAtTurn - 1 are its parent's, unchanged); null when not a fork."
    )

    @strawberry.field(
        description="For a fork: what it changed from its parent; null when not a fork.",
        metadata=reading("fork_change"),
    )
    def fork_change(self) -> ForkChange | None:
        change = self.record.fork_change
        return ForkChange.of(change) if change else None

    @strawberry.field(
        description="The episodes forked from this one (forkEpisode), oldest first.",
        metadata=reading("pk"),
    )
    async def forks(self) -> list["Episode"]:
        return [Episode(record=e) for e in await episodes.forks_of(str(self.record.pk))]

    @strawberry.field(
        description="The whole family of this episode: its root (the first ancestor still "
        "stored) and every fork under it, each after its parent (depth first, oldest fork "
        "first); build the tree from each one's parentId. Just this episode when it has "
        "neither parent nor forks.",
        metadata=reading("pk"),
    )
    async def family(self) -> list["Episode"]:
        return [Episode(record=e) for e in await episodes.family(str(self.record.pk))]

    created_at = stored("When it was queued.", when)
    started_at = stored("When its current run started.", when)
    finished_at = stored("When it reached its end.", when)


class ListedEpisode(Listed[models.EpisodeLog], Episode):  # type: ignore[override]
    pass


EPISODE_READS = Reads.of_type(Episode)
"""The record fields each field of an episode reads (graph/projection.py)."""


@strawberry.type(description="Something that happened to an episode, in sequence order.")
@shows(StoredEvent, held_as="event")
class EpisodeEvent:
    event: strawberry.Private[StoredEvent]
    cursor: str = strawberry.field(
        description="Where this event sits in its stream: pass it as `after` to resume after it."
    )
    seat: strawberry.Private[int | None] = None
    """Set in a stream of what one seat sees (`episodeEvents(as: …)`)."""
    seat_view: strawberry.Private[asyncio.Task[perspective.View | None] | None] = None
    """The seat's view as stored now, read once for the fields that need it."""

    async def view_now(self) -> perspective.View | None:
        """The seat's view of the episode as stored now (`yourTurn` and `perspective` share it)."""
        assert self.seat is not None
        if self.seat_view is None:
            self.seat_view = asyncio.ensure_future(_seat_view(self.event.episode_id, self.seat))
        return await self.seat_view

    kind = stored("SNAPSHOT first, then STATUS and TURN (see EpisodeEventKind).", source="type")

    episode_id = stored("The episode.", an_id)

    sequence = stored("Per-episode sequence number; higher is later.")

    occurred_at = stored("When it happened.", moment, source="at")

    @strawberry.field(description="Status after the event.")
    def status(self) -> EpisodeStatus:
        return self.event.status or EpisodeStatus.RUNNING

    previous_status = stored("Status before a STATUS event.")
    attempt = stored("Run number.")
    reason = stored("Why: for FAILED, CANCELLED, a new attempt, CURSOR_EXPIRED.")

    resumed_from_turn = stored(
        "On the RUNNING of a resumed attempt: how many turns it kept from before.",
        source="resumed_from",
    )

    @strawberry.field(description="The turn, for TURN events.")
    def turn(self) -> Turn | None:
        return wrapped(Turn, self.event.turn)

    @strawberry.field(description="The environment's message, for INJECTION events.")
    def environment_message(self) -> EnvironmentMessage | None:
        injection = self.event.injection
        return EnvironmentMessage.of(injection) if injection else None

    @strawberry.field(description="On a WAITING: whose turn it is and until when.")
    def waiting(self) -> Waiting | None:
        return Waiting.of(self.event.waiting) if self.event.waiting else None

    @strawberry.field(
        description="In a seat's stream (`as`): set on the WAITING that waits for this seat."
    )
    async def your_turn(self) -> YourTurn | None:
        if self.seat is None:
            return None
        turn = perspective.your_turn(self.event.waiting, self.seat)
        if turn is None:
            return None
        now = await self.view_now()
        if now is not None and now.your_turn is not None and now.your_turn.turn == turn.turn:
            turn = now.your_turn  # still that turn: with a game's phase's action types
        return YourTurn.of(turn)

    @strawberry.field(
        description="The episode as stored now (read when asked for); null in a seat's stream, "
        "which shows only what that agent sees (read `perspective`)."
    )
    async def episode(self) -> Episode | None:
        if self.seat is not None:
            return None
        record = await episodes.get_episode(self.event.episode_id)
        return wrapped(Episode, record)

    @strawberry.field(description="In a seat's stream: the episode as that agent sees it now.")
    async def perspective(self) -> Perspective | None:
        if self.seat is None:
            return None
        found = await self.view_now()
        return Perspective(view=found) if found else None


async def _seat_view(episode_id: str, seat: int) -> perspective.View | None:
    record = await episodes.get_episode(episode_id)
    if record is None:
        return None
    found, _ = await perspective.perspective(record, seat)
    return found


@strawberry.type(description="A model simulations can name.")
@shows(ModelInfo)
class Model:
    record: strawberry.Private[ModelInfo]

    name = stored("The name to pass in agentModels or judgeModel.")

    @strawberry.field(description="local, custom, config or openai.")
    def provider(self) -> str:
        return self.record.provider

    base_url = stored("Endpoint base URL; null for the embedded model until started.")
    supports_json_schema = stored(
        "Whether the endpoint takes JSON-schema constrained output.", source="json_schema"
    )
    max_concurrency = stored("Requests sent to it at once, at most.")
    available = stored("Whether it can be used now.")
    reason = stored("Why it cannot be used, when it cannot.")
