"""Experiments over GraphQL: types, inputs, and the root fields Query, Mutation and
Subscription take from here. Each resolver hands its input to lifecycle/experiments.py."""

import dataclasses
import enum
import json
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Annotated, Any

import strawberry

from parley.graph.connection import AFTER, FIRST, Connection, list_field, one_field, to_connection
from parley.graph.context import Info
from parley.graph.enums import Aggregate, EpisodeStatus, SortOrder, TurnOrder
from parley.graph.episode_types import Episode, an_id, optional_id, when
from parley.graph.errors import UserInputError
from parley.graph.experiment_costs import CostEstimate, PrecisionInput
from parley.graph.fields import shows, stored, wrapped
from parley.graph.forks import ForkMessageInput, SeatGoalInput, SeatModelInput
from parley.graph.inputs import AGGREGATE, JUDGES, JudgeInput
from parley.graph.payloads import user_errors
from parley.graph.rejudge import Rejudging
from parley.graph.types import UserError, primary_key
from parley.lifecycle import estimate, rejudge, replay
from parley.lifecycle import experiments as service
from parley.lifecycle.experiment_arms import arm_results
from parley.lifecycle.experiment_follow import UnknownExperiment, follow_experiment
from parley.lifecycle.experiments import Progress
from parley.lifecycle.pacing import Stop
from parley.lifecycle.start import get_many
from parley.resolvers.experiment_design import Sampling
from parley.resolvers.pagination import numbered
from parley.storage import models
from parley.storage.experiments import ExperimentStore

if TYPE_CHECKING:
    from parley.graph.experiment_arms import ExperimentArm
    from parley.graph.studies import RatingStudy

IN_PLAN = "Along the slot number: ASCENDING (design order, the default) or DESCENDING."

strawberry.enum(Sampling, name="AgentSampling", description="How agent pairs are drawn.")


@strawberry.input(description="Which scenarios: ids, or a tag and/or codename to select them.")
class ScenarioSelectionInput:
    ids: list[strawberry.ID] | None = strawberry.field(default=None, description="In this order.")
    tag: str | None = strawberry.field(default=None, description="Scenarios with this tag.")
    codename: str | None = strawberry.field(default=None, description="With this codename.")


@strawberry.input(description="Which agents sit in the two seats: explicit pairs, or sampled.")
class AgentSelectionInput:
    pairs: list[list[strawberry.ID]] | None = strawberry.field(
        default=None, description="Pairs in seat order; each meets in every scenario."
    )
    sample: Sampling | None = strawberry.field(
        default=None,
        description="UNIFORM: any two agents; RELATIONSHIP: stored relationships of the "
        "scenario's kind (Sotopia's samplers).",
    )
    seed: int = strawberry.field(default=0, description="The same seed draws the same pairs.")
    pairs_per_scenario: int = strawberry.field(default=1, description="Pairs drawn, 1..100.")
    tag: str | None = strawberry.field(
        default=None,
        description="Draw only among agents with this tag (RELATIONSHIP: relationships of two).",
    )


@strawberry.input(description="Which models play: each compared against a partner, or per seat.")
class ModelSelectionInput:
    compare: list[str] | None = strawberry.field(
        default=None, description="Models to compare, each against `partner` in both seats."
    )
    partner: str | None = strawberry.field(default=None, description="The fixed partner model.")
    seats: list[list[str]] | None = strawberry.field(
        default=None, description="Explicit (seat 1, seat 2) model assignments."
    )


@strawberry.input(
    description="An intervention arm: each control slot's episode, once completed, is forked at "
    "`atTurn` with this change (at least one of inject, seatModels, goals)."
)
class ArmInput:
    name: str = strawberry.field(description="Unique among the arms; not `control`.")
    at_turn: int = strawberry.field(
        description="The first turn played with the change, 1 to maxTurns - 1: the arm keeps "
        "its control's turns before it."
    )
    inject: ForkMessageInput | None = strawberry.field(
        default=None,
        description="An environment message delivered at that turn (`to`: agent names every "
        "slot has; empty: everyone).",
    )
    seat_models: list[SeatModelInput] | None = strawberry.field(
        default=None, description="Seats (0 or 1) given another model from that turn on."
    )
    goals: list[SeatGoalInput] | None = strawberry.field(
        default=None, description="Seats (0 or 1) given another goal."
    )


@strawberry.input(description="What an experiment runs; it expands into episode slots.")
class ExperimentDesignInput:
    scenarios: ScenarioSelectionInput = strawberry.field(description="Which scenarios.")
    agents: AgentSelectionInput = strawberry.field(description="Which agents, per seat.")
    models: ModelSelectionInput = strawberry.field(description="Which models, per seat.")
    repeats: int = strawberry.field(default=1, description="Episodes per combination, 1..100.")
    max_turns: int = strawberry.field(default=20, description="Turn limit, 1..100.")
    turn_order: TurnOrder = strawberry.field(
        default=TurnOrder.ROUND_ROBIN, description="Who acts when."
    )
    judge_model: str | None = strawberry.field(
        default=None, description="Model of the judge (default: the embedded model)."
    )
    judges: list[JudgeInput] | None = strawberry.field(default=None, description=JUDGES)
    judge_aggregate: Aggregate = strawberry.field(default=Aggregate.MEAN, description=AGGREGATE)
    evaluation_dimension_list_id: strawberry.ID | None = strawberry.field(
        default=None, description="Custom dimensions (default: Sotopia's seven)."
    )
    cache: bool = strawberry.field(
        default=False,
        description="Answer a request identical to one any ledger of model calls holds with "
        "its recorded answer, asking no model: run again, it pays only for what was not asked.",
    )
    arms: list[ArmInput] | None = strawberry.field(
        default=None,
        description="Interventions, at most 10, each compared with the control (the slots' own "
        "episodes) over the same slots: arm i fills slots B * (i + 1) + n, B control slots.",
    )
    budget: float | None = strawberry.field(
        default=None,
        description="US dollars: no episode is queued once what was spent plus what the "
        "episodes in flight may cost would exceed it (every model priced in the models file; "
        "the embedded model costs 0). Not with arms.",
    )
    precision: PrecisionInput | None = strawberry.field(
        default=None,
        description="Queue the repeats one round at a time, and no more once each compared "
        "model's overall score is known this precisely (repeats >= 2; not with arms).",
    )


@strawberry.input(description="A new experiment: a name, unique with its tag, and a design.")
class CreateExperimentInput:
    name: str = strawberry.field(description="Name, unique with the tag.")
    tag: str = strawberry.field(default="", description="Tag every episode of it carries.")
    design: ExperimentDesignInput = strawberry.field(description="What it runs.")


@strawberry.input(description="Which experiment.")
class ExperimentIdInput:
    id: strawberry.ID = strawberry.field(description="The experiment.")


@strawberry.input(description="Narrows an experiment list.")
class ExperimentFilter:
    name: str | None = strawberry.field(default=None, description="Name (letter case ignored).")
    tag: str | None = strawberry.field(default=None, description="Tag (letter case ignored).")


def plain(value: object) -> Any:
    """An input as the service validates it: dicts of set fields, enums as values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {}
        for item in dataclasses.fields(value):
            field = getattr(value, item.name)
            if field is not None and field is not strawberry.UNSET:
                out[item.name] = plain(field)
        return out
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, enum.Enum):
        return value.value
    return value


@strawberry.type(description="How far an experiment has got.")
@shows(Progress, held_as="progress")
class ExperimentProgress:
    progress: strawberry.Private[Progress]

    total = stored("Episode slots the design expanded into.")
    pending = stored("Slots with no episode yet.")

    @strawberry.field(description="Episodes now filling the slots, by status.")
    def counts(self) -> list["StatusCount"]:
        return [
            StatusCount(status=status, count=self.progress.counts.get(status, 0))
            for status in models.EpisodeStatus
        ]

    @strawberry.field(description="Slot episodes that ended completed.")
    def completed(self) -> int:
        return self.progress.counts.get(models.EpisodeStatus.COMPLETED, 0)

    unjudged = stored(
        "Slot episodes that completed without scores (counted in `completed` too): their judge "
        "failed, each says why in `judgeError`; re-judging them with the design's judge makes "
        "that judgement their scores."
    )

    @strawberry.field(description="Slot episodes that failed (a new start retries them).")
    def failed(self) -> int:
        return self.progress.counts.get(models.EpisodeStatus.FAILED, 0)

    @strawberry.field(description="Slot episodes that were cancelled (a new start retries them).")
    def cancelled(self) -> int:
        return self.progress.counts.get(models.EpisodeStatus.CANCELLED, 0)

    unfinished = stored("Slots not yet ended: pending, or an episode not yet at its end.")

    @strawberry.field(
        description="Episodes completed per minute since the latest start; failed and cancelled "
        "ones are not counted (they often end at once). 0 while none has completed."
    )
    def episodes_per_minute(self) -> float:
        return round(self.progress.episodes_per_minute, 3)

    @strawberry.field(
        description="Estimated seconds until every slot has ended, at that rate; null while no "
        "episode has completed, 0 once every slot has ended."
    )
    def seconds_left(self) -> float | None:
        left = self.progress.seconds_left
        return None if left is None else round(left, 1)

    not_reached = stored(
        "Arm slots whose control episode ended before the arm's turn: never forked, they count "
        "as ended."
    )
    arms_waiting = stored(
        "Arm slots whose control failed or was cancelled: a new start retries the control, then "
        "forks them."
    )
    held = stored(
        "Slots never queued because the experiment stopped (`stopped`): they count as ended."
    )

    @strawberry.field(
        description="Why the experiment queues no more episodes (its budget, or its precision "
        "reached); null while it is not stopped."
    )
    def stopped(self) -> Stop | None:
        return None if self.progress.stopped is None else Stop(self.progress.stopped)

    finished = stored(
        "Every slot's episode has ended (arm slots not reached and held slots count as ended)."
    )
    all_completed = stored("Every slot's episode completed (but arm slots not reached).")


@strawberry.type(description="How many episodes have one status.")
class StatusCount:
    status: EpisodeStatus = strawberry.field(description="The status.")
    count: int = strawberry.field(description="Episodes with it.")


@strawberry.type(description="One episode the design asks for, and the episode filling it.")
@shows(models.ExperimentSlot, held_as="slot")
class ExperimentSlot:
    number: int = strawberry.field(description="Position in the expanded design, from 0.")
    slot: strawberry.Private[models.ExperimentSlot]
    record: strawberry.Private[models.EpisodeLog | None]

    scenario_id = stored("The scenario.", an_id)

    @strawberry.field(description="The agents in seat order.")
    def agent_ids(self) -> list[strawberry.ID]:
        return [strawberry.ID(a) for a in self.slot.agent_ids]

    agent_models = stored("The model of each seat.")
    repeat = stored("Which repeat of its combination, from 0.")
    model = stored("The compared model (designs against a partner; else empty).")
    seat = stored("The seat of the compared model, from 0; null with seats.")
    arm = stored("The intervention arm it plays; empty for a control slot.")
    control_slot = stored("For an arm's slot: the control slot whose episode it forks.")

    @strawberry.field(description="The episode now filling the slot; null before a start.")
    def episode(self) -> Episode | None:
        return wrapped(Episode, self.record)


@strawberry.type(description="How a replayed experiment's episodes compare with the source's.")
@shows(replay.ExperimentCheck, held_as="check")
class ExperimentReplayCheck:
    check: strawberry.Private[replay.ExperimentCheck]

    matched = stored(
        "Null while a slot's replay has not ended (and none differs); then whether every one "
        "matched its source."
    )
    checked = stored("Slots whose replay has ended.")
    mismatched = stored("Slots whose replay does not match its source.")
    first_divergence = stored("The first slot that does not match: its number, episode and why.")


@strawberry.type(description="A named batch of episodes expanded from a design.")
@shows(models.Experiment)
class Experiment:
    record: strawberry.Private[models.Experiment]

    id = primary_key("Its id.")

    name = stored("Name, unique with the tag.")
    tag = stored("Tag every episode of it carries.")

    @strawberry.field(description="The design as stored (snake_case keys), as a JSON string.")
    def design(self) -> str:
        return json.dumps(self.record.design)

    created_at = stored("When it was created.", when)
    started_at = stored("When it was last started or resumed.", when)
    slot_count = stored("How many episode slots the design expanded into.")
    replay_of = stored(
        "The experiment whose episodes this one replays slot by slot; null for one that is no "
        "replay.",
        optional_id,
    )

    @strawberry.field(
        description="How its replays compare with the source's episodes; null for an "
        "experiment that is no replay."
    )
    async def replay(self, info: Info) -> ExperimentReplayCheck | None:
        check = await replay.experiment_check(info.context.services, self.record)
        return None if check is None else ExperimentReplayCheck(check=check)

    @strawberry.field(description="The slots in design order, each with its current episode.")
    async def slots(
        self,
        info: Info,
        first: Annotated[int | None, strawberry.argument(description=FIRST)] = None,
        after: Annotated[str | None, strawberry.argument(description=AFTER)] = None,
        order: Annotated[SortOrder, strawberry.argument(description=IN_PLAN)] = SortOrder.ASCENDING,
    ) -> Connection[ExperimentSlot]:
        page = numbered(self.record.slot_count, first, after, order)
        store = ExperimentStore(info.context.services.client)
        pk = str(self.record.pk)
        filled = await store.slots(pk)
        low = min(page.items, default=0)
        chosen = await store.plan(pk, low, max(page.items) + 1) if page.items else []
        # The page's episodes in one read, not one per slot.
        ids = [filled[n] for n in page.items if n in filled]
        episodes = {str(e.pk): e for e in await get_many(store.client, ids)}
        items = [
            ExperimentSlot(number=n, slot=chosen[n - low], record=episodes.get(filled.get(n, "")))
            for n in page.items
        ]
        return to_connection(page.with_items(items), lambda item: item)

    @strawberry.field(
        description="Each intervention arm against the control, in design order; empty for an "
        "experiment without arms."
    )
    async def arms(
        self, info: Info
    ) -> list[Annotated["ExperimentArm", strawberry.lazy("parley.graph.experiment_arms")]]:
        from parley.graph.experiment_arms import (
            ExperimentArm,  # imported here: a cycle through results
        )

        found = await arm_results(info.context.services, self.record)
        return [ExperimentArm(result=result) for result in found]

    @strawberry.field(
        description="The design's budget in US dollars; null without one (what its episodes "
        "spent: `usageTotals(filter: {experimentId})`)."
    )
    def budget(self) -> float | None:
        value = self.record.design.get("budget")
        return float(value) if isinstance(value, int | float) else None

    @strawberry.field(
        description="What its slots will take (calls, tokens, dollars) from comparable recorded "
        "episodes, with 95% ranges."
    )
    async def estimate(self, info: Info) -> CostEstimate:
        found = await estimate.of_experiment(info.context.services, self.record)
        return CostEstimate(found=found)

    @strawberry.field(description="Counts by status, rate and an estimate of the time left.")
    async def progress(self, info: Info) -> ExperimentProgress:
        measured = await service.progress(info.context.services, self.record)
        return ExperimentProgress(progress=measured)

    @strawberry.field(
        description="The re-judgings made of its episodes (`rejudgeEpisodes` with its "
        "experimentId), oldest first: each an evaluation its results can use."
    )
    async def rejudgings(self, info: Info) -> list[Rejudging]:
        found = await rejudge.of_experiment(info.context.services.client, str(self.record.pk))
        return [Rejudging(record=record) for record in found]

    @strawberry.field(
        description="The rating studies made of its episodes (`episodes: {experimentId}`), "
        "oldest first: each an evaluation its results can use, and people to agree with."
    )
    async def rating_studies(
        self, info: Info
    ) -> list[Annotated["RatingStudy", strawberry.lazy("parley.graph.studies")]]:
        from parley.graph.studies import RatingStudy  # imported here: it imports this module

        found = await info.context.services.studies.of_experiment(str(self.record.pk))
        return [RatingStudy(record=record) for record in found]


@strawberry.type(description="Result of createExperiment.")
class ExperimentPayload:
    experiment: Experiment | None = strawberry.field(description="Null on failure.")
    user_errors: list[UserError] = strawberry.field(description="Why nothing was done.")


@strawberry.type(description="Result of startExperiment or cancelExperiment.")
class ExperimentRunPayload:
    experiment: Experiment | None = strawberry.field(description="Null on failure.")
    changed: int = strawberry.field(
        description="Slots this call queued an episode for (start), or episodes it cancelled."
    )
    user_errors: list[UserError] = strawberry.field(description="Why nothing (more) was done.")


@strawberry.type
class ExperimentQuery:
    experiment = one_field(
        Experiment, lambda info, pk: service.get_experiment(info.context.services, pk), "experiment"
    )

    experiments = list_field(
        Experiment,
        lambda record: Experiment(record=record),
        ExperimentFilter,
        service.list_experiments,
        newest_first=True,
    )


@strawberry.type
class ExperimentMutation:
    @strawberry.mutation(
        description="Create an experiment from a design (nothing runs yet). The same name, tag "
        "and design again returns the stored experiment; another design is a CONFLICT."
    )
    async def create_experiment(
        self, info: Info, input: CreateExperimentInput
    ) -> ExperimentPayload:
        record, errors = await service.create_experiment(info.context.services, plain(input))
        return ExperimentPayload(
            experiment=wrapped(Experiment, record), user_errors=user_errors(errors)
        )

    @strawberry.mutation(
        description="Queue an episode for each slot with none, or with a failed or cancelled "
        "one: starting again resumes, never duplicates."
    )
    async def start_experiment(self, info: Info, input: ExperimentIdInput) -> ExperimentRunPayload:
        record, queued, errors = await service.start_experiment(info.context.services, input.id)
        return ExperimentRunPayload(
            experiment=wrapped(Experiment, record), changed=queued, user_errors=user_errors(errors)
        )

    @strawberry.mutation(
        description="Queue a calibration run: the first two slots of each kind (models and "
        "turn limit) with no comparable recorded episode, so that `estimate` covers every slot. "
        "They are the experiment's own slots: a start does not play them again."
    )
    async def calibrate_experiment(
        self, info: Info, input: ExperimentIdInput
    ) -> ExperimentRunPayload:
        services = info.context.services
        record, queued, errors = await service.calibrate_experiment(services, input.id)
        return ExperimentRunPayload(
            experiment=wrapped(Experiment, record), changed=queued, user_errors=user_errors(errors)
        )

    @strawberry.mutation(
        description="Replay a finished experiment from its ledgers of model calls: a new "
        "experiment (its `replayOf` the source) whose slots are the source's, each queued as a "
        "replay of the source's episode in it; `replay` on it says whether they matched."
    )
    async def replay_experiment(self, info: Info, input: ExperimentIdInput) -> ExperimentRunPayload:
        services = info.context.services
        record, errors = await replay.replay_experiment(services, input.id)
        queued = 0
        if record is not None:
            record, queued, errors = await service.start_experiment(services, str(record.pk))
        return ExperimentRunPayload(
            experiment=wrapped(Experiment, record), changed=queued, user_errors=user_errors(errors)
        )

    @strawberry.mutation(description="Cancel the experiment's queued and running episodes.")
    async def cancel_experiment(self, info: Info, input: ExperimentIdInput) -> ExperimentRunPayload:
        record, done, errors = await service.cancel_experiment(info.context.services, input.id)
        return ExperimentRunPayload(
            experiment=wrapped(Experiment, record), changed=done, user_errors=user_errors(errors)
        )


@strawberry.type
class ExperimentSubscription:
    @strawberry.subscription(
        description="An experiment's progress now, then each time one of its episodes changes "
        "status; ends once every slot's episode has ended."
    )
    async def experiment_progress(
        self, info: Info, id: strawberry.ID
    ) -> AsyncGenerator[ExperimentProgress]:
        try:
            async for item in follow_experiment(info.context.services, str(id)):
                yield ExperimentProgress(progress=item)
        except UnknownExperiment:
            raise UserInputError(f"no experiment with id {id!r}") from None
