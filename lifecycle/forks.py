"""Forks: a new episode that shares the first k turns of a finished one and goes on with a
change (other models in some seats, an environment message at turn k, other goals or profile
fields).

A fork is stored QUEUED with its parent's first k turns (and their Sotopia messages and the
environment messages delivered in them) already in place, so the worker plays it exactly as
it resumes an episode whose worker was lost: those turns are replayed without a model call and
the conversation goes on from turn k. The fork names its parent and turn; its own setup is
the parent's with the change applied. People's seats are not forked: every seat a person
played must be given a model, so no seat credential, and nothing a person may still do, is
carried over.
"""

import logging
import time
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, Field
from ulid import ULID

from parley.core import tracing
from parley.core.errors import ErrorCode, UserError, not_found, validated
from parley.core.limits import MAX_AGENTS, RecordId, ShortText
from parley.engine.errors import UnknownModelError
from parley.engine.types import Injection
from parley.lifecycle import logs
from parley.lifecycle.services import Services
from parley.resolvers.agents import agent_names
from parley.resolvers.fork_fields import GoalFields, InjectionFields, ProfileFields, SeatModelFields
from parley.storage.episode_store import initial_history
from parley.storage.models import (
    AgentProfile,
    CustomEvaluationDimensionList,
    EnvironmentProfile,
    EpisodeLog,
    EpisodeStatus,
    ForkChange,
    SeatGoal,
    SeatModel,
    SeatProfile,
    StoredInjection,
)
from parley.storage.records import get_or_none, storable
from parley.storage.times import stored_time

log = logging.getLogger(__name__)


class ForkFields(BaseModel, extra="forbid"):
    """What `forkEpisode` takes."""

    episode_id: RecordId
    at_turn: Annotated[int, Field(ge=0)]
    seat_models: Annotated[list[SeatModelFields], Field(max_length=MAX_AGENTS)] = []
    inject_message: InjectionFields | None = None
    goals: Annotated[list[GoalFields], Field(max_length=MAX_AGENTS)] = []
    profiles: Annotated[list[ProfileFields], Field(max_length=MAX_AGENTS)] = []
    tag: ShortText | None = None
    idempotency_key: ShortText | None = None
    experiment_id: ShortText = ""
    """Set for an experiment's arm (lifecycle/experiment_arms.py), never by a client's fork:
    with `arm` and `experiment_slot`, the slot the fork fills."""
    arm: ShortText = ""
    experiment_slot: Annotated[int, Field(ge=0)] | None = None


def turns_played(episode: EpisodeLog) -> int:
    """How many turns an episode stored (the turns a fork of it may begin with)."""
    return len({turn.turn for turn in episode.turns})


def _seat_errors(
    seats: list[int], seated: int, field: str, what: str, prefix: tuple[str, ...]
) -> list[UserError]:
    errors: list[UserError] = []
    for i, seat in enumerate(seats):
        path = [*prefix, field, str(i), "seat"]
        if seat >= seated:
            message = f"seat {seat} does not exist: seats are numbered 0 to {seated - 1}"
            errors.append(UserError(path, message, ErrorCode.INVALID))
        elif seat in seats[:i]:
            errors.append(UserError(path, f"{what} seat {seat} once", ErrorCode.INVALID))
    return errors


def change_errors(
    parent: EpisodeLog, fields: ForkFields, services: Services, names: list[str]
) -> list[UserError]:
    """Why this change cannot be made to `parent` (the parent's state is checked by `check`)."""
    prefix = ("input",)
    seated = len(parent.agents)
    errors: list[UserError] = []
    if fields.at_turn > (played := turns_played(parent)):
        message = f"the episode played {played} turns: fork it at turn 0 to {played}"
        errors.append(UserError([*prefix, "atTurn"], message, ErrorCode.INVALID))
    seats = [change.seat for change in fields.seat_models]
    errors += _seat_errors(seats, seated, "seatModels", "give a model to", prefix)
    goals = [goal.seat for goal in fields.goals]
    errors += _seat_errors(goals, seated, "goals", "give a goal to", prefix)
    edited = [profile.seat for profile in fields.profiles]
    errors += _seat_errors(edited, seated, "profiles", "edit the profile of", prefix)
    for i, profile in enumerate(fields.profiles):
        if not profile.model_dump(exclude={"seat"}, exclude_none=True):
            message = "give at least one profile field to change"
            errors.append(UserError([*prefix, "profiles", str(i)], message, ErrorCode.INVALID))
    for i, change in enumerate(fields.seat_models):
        try:
            services.models.resolve(change.model)
        except UnknownModelError as err:
            path = [*prefix, "seatModels", str(i), "model"]
            errors.append(UserError(path, str(err), ErrorCode.INVALID))
    errors += kept_model_errors(parent, seats, services)
    for person in parent.human_seats:
        if person.seat not in seats:
            message = (
                f"seat {person.seat} was a person's: give it a model (a fork has no people's seats)"
            )
            errors.append(UserError([*prefix, "seatModels"], message, ErrorCode.INVALID))
    for i, name in enumerate(fields.inject_message.to if fields.inject_message else []):
        if name not in names:
            message = f"{name!r} is not an agent of this episode"
            path = [*prefix, "injectMessage", "to", str(i)]
            errors.append(UserError(path, message, ErrorCode.INVALID))
    return errors


def kept_model_errors(
    parent: EpisodeLog, changed: list[int], services: Services
) -> list[UserError]:
    """A model the fork keeps from its parent (a seat's not changed, a judge's) that is no
    longer configured here: the fork could not run."""
    errors: list[UserError] = []
    people = {person.seat for person in parent.human_seats}
    models = list(parent.models or [])
    for seat in range(len(parent.agents)):
        if seat in changed or seat in people:
            continue
        name = models[1 + seat] if 1 + seat < len(models) else ""
        try:
            services.models.resolve(name)
        except UnknownModelError as err:
            message = f"seat {seat} keeps its parent's model, which is gone ({err}): give it one"
            errors.append(UserError(["input", "seatModels"], message, ErrorCode.INVALID))
    for judge in dict.fromkeys(j.model for j in parent.panel().judges):
        try:
            services.models.resolve(judge)
        except UnknownModelError as err:
            message = f"the episode's judge is gone ({err}), and a fork keeps its parent's judges"
            errors.append(UserError(["input", "episodeId"], message, ErrorCode.INVALID))
    return errors


def forked(parent: EpisodeLog, fields: ForkFields) -> EpisodeLog:
    """The new episode: the parent's setup with the change, its first `at_turn` turns."""
    now = time.time()
    k = fields.at_turn
    models = list(parent.models or [])
    models += [""] * (1 + len(parent.agents) - len(models))
    for change in fields.seat_models:
        models[1 + change.seat] = change.model
    kept = [turn.model_copy(update={"sequence": 1}) for turn in parent.turns if turn.turn < k]
    delivered = [
        injection.model_copy(update={"sequence": 1})
        for injection in parent.injections
        if injection.turn is not None and injection.turn < k
    ]
    message = fields.inject_message
    what = ForkChange(
        seat_models=[SeatModel(seat=c.seat, model=c.model) for c in fields.seat_models],
        injection=Injection.model_validate(message.model_dump()) if message else None,
        goals=[SeatGoal(seat=g.seat, goal=g.goal) for g in fields.goals],
        profiles=[SeatProfile.model_validate(p.model_dump()) for p in fields.profiles],
    )
    if message is not None:  # delivered in the first turn the fork plays (StoredControl)
        new = StoredInjection(text=message.text, to=message.to, at=stored_time(now), sequence=1)
        delivered.append(new)
    return EpisodeLog(
        pk=str(ULID()),
        environment=parent.environment,
        agents=parent.agents,
        tag=parent.tag if fields.tag is None else fields.tag,
        models=models,
        judges=parent.judges,
        judge_aggregate=parent.judge_aggregate,
        agent_classes=["LLMAgent"] * len(parent.agents),
        messages=parent.messages[:k],
        turns=kept,
        progress=k,
        injections=delivered,
        status=EpisodeStatus.QUEUED,
        status_history=initial_history(now),
        sequence=1,
        max_turns=parent.max_turns,
        turn_order=parent.turn_order,
        evaluation_dimension_list_id=parent.evaluation_dimension_list_id,
        idempotency_key=fields.idempotency_key,
        redelivery=parent.redelivery,
        experiment_id=fields.experiment_id,
        experiment_slot=fields.experiment_slot,
        arm=fields.arm,
        parent_id=str(parent.pk),
        forked_at_turn=k,
        fork_change=what,
        created_at=now,
    )


def required_keys(parent: EpisodeLog) -> list[str]:
    """The keys that must still exist when the fork is written: its parent and the records its
    setup names."""
    list_id = parent.evaluation_dimension_list_id
    return [
        EpisodeLog.make_primary_key(str(parent.pk)),
        EnvironmentProfile.make_primary_key(parent.environment),
        *(AgentProfile.make_primary_key(pk) for pk in parent.agents),
        *([CustomEvaluationDimensionList.make_primary_key(list_id)] if list_id else []),
    ]


@dataclass(frozen=True)
class Forked:
    episode: EpisodeLog | None
    errors: list[UserError]


async def fork(services: Services, fields: dict[str, Any]) -> Forked:
    """`fork_episode` of a request as its fields (forkEpisode's input, snake case)."""
    valid, errors = validated(ForkFields, fields)
    if valid is None:
        return Forked(None, errors)
    return await fork_episode(services, valid)


async def fork_episode(services: Services, valid: ForkFields) -> Forked:
    """Check the request against the stored parent, then store the fork QUEUED, announce it
    and queue its job in one script (the parent and the records it names checked there once
    more). An idempotency key used before gives back that earlier fork."""
    if not storable(valid.episode_id):
        return Forked(None, [not_found("episode", valid.episode_id, "episodeId")])
    parent = await get_or_none(EpisodeLog, valid.episode_id)
    if parent is None:
        return Forked(None, [not_found("episode", valid.episode_id, "episodeId")])
    if not parent.status.terminal:
        message = (
            f"the episode is {parent.status.value}: only a finished one (completed, failed or "
            "cancelled) can be forked"
        )
        return Forked(None, [UserError(["input", "episodeId"], message, ErrorCode.CONFLICT)])
    names = await agent_names(services.client, parent.agents)
    errors = change_errors(parent, valid, services, names)
    if errors:
        return Forked(None, errors)
    episode = forked(parent, valid)
    about = {"parley.episode.parent": str(parent.pk), "parley.fork.at_turn": valid.at_turn}
    with tracing.new_traces("parley.fork", [str(episode.pk)], about, parent.traceparent) as traced:
        (episode.traceparent,) = traced
        created = await services.store.create_if_present(
            [episode], services.jobs.stream, required_keys(parent)
        )
    if created.missing:
        message = "the episode, its scenario, an agent or its dimension list is gone"
        return Forked(None, [UserError(["input", "episodeId"], message, ErrorCode.NOT_FOUND)])
    (pk,) = created.ids
    if pk != episode.pk:
        return Forked(await get_or_none(EpisodeLog, pk), [])
    with logs.about(episode=pk):
        log.info("queued: a fork of %s at turn %d", parent.pk, valid.at_turn)
    return Forked(episode, [])
