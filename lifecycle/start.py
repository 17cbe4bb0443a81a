"""Starting an episode: validate its values and models, read its agents' names (one round trip:
two agents of one name cannot share an episode), then, in one Redis script (one more), check that
the records it names exist and store it QUEUED, announce it and queue its job; also cancelling
and deleting one."""

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

import redis.asyncio as redis
from pydantic import Field, model_validator
from ulid import ULID

from parley.core import tracing
from parley.core.errors import ErrorCode, UserError, not_found, validated
from parley.core.limits import MAX_AGENTS, RecordId, ShortText
from parley.engine.errors import UnknownModelError
from parley.engine.llm import ModelCatalog
from parley.engine.models import DEFAULT_MODEL
from parley.engine.types import TurnOrder
from parley.lifecycle import failpoints, logs
from parley.lifecycle.seats import new_token, token_hash
from parley.lifecycle.services import Services
from parley.resolvers.agents import agent_names
from parley.resolvers.dimensions import list_problem
from parley.resolvers.names import same_names
from parley.resolvers.panels import PanelFields
from parley.storage.episode_store import initial_history
from parley.storage.models import (
    AgentProfile,
    CustomEvaluationDimensionList,
    EnvironmentProfile,
    EpisodeLog,
    EpisodeStatus,
    Experiment,
    HumanSeat,
    Record,
    Redelivery,
    SeatTimeout,
)
from parley.storage.records import exist, get_or_none, storable

log = logging.getLogger(__name__)
MAX_BATCH = 1000
MAX_SEAT_DEADLINE = 7 * 24 * 3600.0
HUMAN = "human"
"""The model name Sotopia stores for a seat a person plays (its agent class: HumanAgent)."""


class SimulationFields(PanelFields, extra="forbid"):
    scenario_id: RecordId
    agent_ids: Annotated[list[RecordId], Field(min_length=2, max_length=MAX_AGENTS)]
    agent_models: Annotated[list[ShortText], Field(max_length=MAX_AGENTS)] = [DEFAULT_MODEL]
    max_turns: Annotated[int, Field(ge=1, le=100)] = 20
    turn_order: TurnOrder = TurnOrder.ROUND_ROBIN
    evaluation_dimension_list_id: RecordId | None = None
    tag: ShortText = ""
    idempotency_key: ShortText | None = None
    redelivery: Redelivery = Redelivery.RESUME
    experiment_id: ShortText = ""
    experiment_slot: Annotated[int, Field(ge=0)] | None = None
    """Set by an experiment's start, never by a client's: the slot the episode fills."""
    arm: ShortText = ""
    """Set by an experiment's start, never by a client's ("control" in one with arms)."""
    human_seats: Annotated[list[Annotated[int, Field(ge=0)]], Field(max_length=MAX_AGENTS)] = []
    claimable_seats: bool = False
    seat_deadline_seconds: Annotated[
        float, Field(ge=1, le=MAX_SEAT_DEADLINE, allow_inf_nan=False)
    ] = 300.0
    on_seat_timeout: SeatTimeout = SeatTimeout.LEAVE
    stand_in_model: ShortText | None = None
    replay_of: RecordId | None = None
    """Set by a replay (lifecycle/replay.py), never by a client's start."""
    cache: bool = False

    @model_validator(mode="after")
    def consistent(self) -> "SimulationFields":
        if len(set(self.agent_ids)) != len(self.agent_ids):
            raise ValueError("pick each agent once")
        if len(self.agent_models) not in (1, len(self.agent_ids)):
            raise ValueError("give one model for every agent, or one per agent")
        if len(set(self.human_seats)) != len(self.human_seats):
            raise ValueError("name each person's seat once")
        if any(seat >= len(self.agent_ids) for seat in self.human_seats):
            raise ValueError(f"seats are numbered 0 to {len(self.agent_ids) - 1}")
        return self

    def models_per_agent(self) -> list[str]:
        """The model of each seat; a person's seat is Sotopia's "human"."""
        models = self.agent_models
        if len(models) == 1:
            models = models * len(self.agent_ids)
        return [HUMAN if i in self.human_seats else m for i, m in enumerate(models)]

    def stand_in(self) -> str:
        """The model that acts for a person who timed out (under STAND_IN)."""
        return self.stand_in_model or self.first_judge()


Reference = tuple[type[Record], str]


def references(valid: SimulationFields) -> list[Reference]:
    """The stored records a request names: its scenario, its agents, its dimension list."""
    list_id = valid.evaluation_dimension_list_id
    refs: list[Reference] = [(EnvironmentProfile, valid.scenario_id)]
    refs += [(AgentProfile, pk) for pk in valid.agent_ids]
    refs += [(CustomEvaluationDimensionList, list_id)] if list_id else []
    return refs


def reference_errors(
    valid: SimulationFields, found: Sequence[bool], prefix: Sequence[str]
) -> list[UserError]:
    """NOT_FOUND for each of `references(valid)` that `found` says is not stored."""
    scenario_found, *agents_found = found
    errors: list[UserError] = []
    if not scenario_found:
        message = f"no scenario with id {valid.scenario_id!r}"
        errors.append(UserError([*prefix, "scenarioId"], message, ErrorCode.NOT_FOUND))
    for i, pk in enumerate(valid.agent_ids):
        if not agents_found[i]:
            message = f"no agent with id {pk!r}"
            errors.append(UserError([*prefix, "agentIds", str(i)], message, ErrorCode.NOT_FOUND))
    list_id = valid.evaluation_dimension_list_id
    if list_id and not agents_found[-1]:
        message = f"no evaluation dimension list with id {list_id!r}"
        field = [*prefix, "evaluationDimensionListId"]
        errors.append(UserError(field, message, ErrorCode.NOT_FOUND))
    return errors


def model_errors(
    valid: SimulationFields, models: ModelCatalog, prefix: Sequence[str]
) -> list[UserError]:
    errors: list[UserError] = []
    played = [i for i in range(len(valid.agent_ids)) if i not in valid.human_seats]
    if len(valid.agent_models) == 1:
        played = played[:1] and [0]  # one model for every seat a model plays
    named = [(["agentModels", str(i)], valid.agent_models[i]) for i in played]
    if valid.human_seats and valid.on_seat_timeout == SeatTimeout.STAND_IN:
        named.append((["standInModel"], valid.stand_in()))
    for path, name in named:
        try:
            models.resolve(name)
        except UnknownModelError as err:
            errors.append(UserError([*prefix, *path], str(err), ErrorCode.INVALID))
    return errors + valid.judge_errors(models, prefix)


async def names_of(client: redis.Redis, valids: Sequence[SimulationFields]) -> dict[str, str]:
    """The name of every agent the requests seat, in one round trip ("" for one not stored)."""
    pks = sorted({pk for valid in valids for pk in valid.agent_ids})
    return dict(zip(pks, await agent_names(client, pks), strict=True))


def name_errors(
    valid: SimulationFields, names: dict[str, str], prefix: Sequence[str]
) -> list[UserError]:
    """An error on each agent that goes by the name of an earlier one of the same request."""
    seated = [names.get(pk, "") for pk in valid.agent_ids]
    errors = []
    for first, later in same_names(seated):
        message = (
            f"agents {valid.agent_ids[first]!r} and {valid.agent_ids[later]!r} are both named "
            f"{seated[later]!r}: pick agents with different names (a transcript tells agents "
            "apart by name)"
        )
        errors.append(UserError([*prefix, "agentIds", str(later)], message, ErrorCode.INVALID))
    return errors


async def list_problems(valids: Sequence[SimulationFields]) -> dict[str, str]:
    """Why each dimension list the requests name cannot judge an episode (a list another writer
    stored may hold a name no results can carry), by list id, for those that cannot."""
    named = sorted({v.evaluation_dimension_list_id or "" for v in valids} - {""})
    return {pk: problem for pk in named if (problem := await list_problem(pk)) is not None}


def list_errors(
    valid: SimulationFields, problems: dict[str, str], prefix: Sequence[str]
) -> list[UserError]:
    problem = problems.get(valid.evaluation_dimension_list_id or "")
    if problem is None:
        return []
    return [UserError([*prefix, "evaluationDimensionListId"], problem, ErrorCode.INVALID)]


async def check(
    client: redis.Redis,
    fields: dict[str, Any],
    models: ModelCatalog,
    prefix: Sequence[str] = ("input",),
) -> tuple[SimulationFields | None, list[UserError]]:
    """Validate a request against the stored world; nothing is written."""
    valid, errors = validated(SimulationFields, fields, prefix)
    if valid is None:
        return None, errors
    found = await exist(client, references(valid))
    errors = reference_errors(valid, found, prefix) + model_errors(valid, models, prefix)
    errors += name_errors(valid, await names_of(client, [valid]), prefix)
    errors += list_errors(valid, await list_problems([valid]), prefix)
    return (None, errors) if errors else (valid, [])


def seat_tokens(valid: SimulationFields) -> dict[int, str]:
    """A new token per human seat (none while the seats are open to be claimed)."""
    return {} if valid.claimable_seats else {seat: new_token() for seat in valid.human_seats}


def new_episode(valid: SimulationFields, tokens: dict[int, str]) -> EpisodeLog:
    now = time.time()
    humans = set(valid.human_seats)
    panel = valid.panel()
    return EpisodeLog(
        pk=str(ULID()),
        environment=valid.scenario_id,
        agents=valid.agent_ids,
        tag=valid.tag,
        models=[panel.label(), *valid.models_per_agent()],
        judges=panel.judges,
        judge_aggregate=panel.aggregate,
        agent_classes=[
            "HumanAgent" if i in humans else "LLMAgent" for i in range(len(valid.agent_ids))
        ],
        status=EpisodeStatus.QUEUED,
        status_history=initial_history(now),
        sequence=1,
        max_turns=valid.max_turns,
        turn_order=valid.turn_order,
        evaluation_dimension_list_id=valid.evaluation_dimension_list_id,
        idempotency_key=valid.idempotency_key,
        redelivery=valid.redelivery,
        experiment_id=valid.experiment_id,
        experiment_slot=valid.experiment_slot,
        arm=valid.arm,
        human_seats=[
            HumanSeat(seat=seat, token_hash=token_hash(tokens[seat]) if seat in tokens else "")
            for seat in valid.human_seats
        ],
        seat_deadline_seconds=valid.seat_deadline_seconds,
        on_seat_timeout=valid.on_seat_timeout,
        stand_in_model=valid.stand_in() if valid.human_seats else None,
        replay_of=valid.replay_of,
        cache=valid.cache,
        created_at=now,
    )


@dataclass(frozen=True)
class Started:
    episodes: list[EpisodeLog]
    errors: list[UserError]
    seat_tokens: dict[str, dict[int, str]] = field(default_factory=dict)
    """By new episode: the token of each of its human seats, shown only here."""


async def start(
    services: Services, fields: dict[str, Any]
) -> tuple[EpisodeLog | None, list[UserError]]:
    """Validate, store the episode QUEUED, announce it and enqueue its job, in one transaction."""
    started = await start_many(services, [fields], prefix=("input",))
    return (started.episodes[0] if started.episodes else None), started.errors


async def start_many(
    services: Services, batch: list[dict[str, Any]], prefix: tuple[str, ...] | None = None
) -> Started:
    """All or nothing: every request is checked before any episode is written.

    A request whose idempotency key was used before gets that earlier episode back instead
    (and no seat tokens: they were shown when it was made).
    """
    if len(batch) > MAX_BATCH:
        message = f"at most {MAX_BATCH} simulations per call, got {len(batch)}"
        return Started([], [UserError(["inputs"], message, ErrorCode.INVALID)])
    prefixes = [prefix or ("inputs", str(i)) for i in range(len(batch))]
    parsed = [validated(SimulationFields, f, p) for f, p in zip(batch, prefixes, strict=True)]
    valids = [valid for valid, _ in parsed if valid is not None]
    names = await names_of(services.client, valids) if len(valids) == len(batch) else {}
    problems = await list_problems(valids)
    if len(valids) < len(batch) or any(
        model_errors(v, services.models, p)
        or name_errors(v, names, p)
        or list_errors(v, problems, p)
        for v, p in zip(valids, prefixes, strict=True)
    ):
        # Refused already: report each request's errors, the stored world's included.
        checked = [
            await check(services.client, f, services.models, p)
            for f, p in zip(batch, prefixes, strict=True)
        ]
        return Started([], [e for _, errs in checked for e in errs])
    tokens = [seat_tokens(valid) for valid in valids]
    episodes = [new_episode(valid, t) for valid, t in zip(valids, tokens, strict=True)]
    refs = [references(valid) for valid in valids]
    required = [model.make_primary_key(pk) for named in refs for model, pk in named]
    failpoints.reached("start:before-write")
    # The references are checked and the idempotency keys claimed in this one write: there is
    # no point in between.
    with tracing.new_traces("parley.start", [str(e.pk) for e in episodes]) as traces:
        for episode, traced in zip(episodes, traces, strict=True):
            episode.traceparent = traced
        created = await services.store.create_if_present(episodes, services.jobs.stream, required)
    if created.missing:
        return Started([], missing_errors(valids, refs, prefixes, set(created.missing)))
    ids = created.ids
    failpoints.reached("start:after-write")
    fresh = {str(e.pk): e for e in episodes}
    earlier = [pk for pk in ids if pk not in fresh]
    found = {str(e.pk): e for e in await get_many(services.client, earlier)}
    failpoints.reached("start:before-answer")
    for pk in ids:
        with logs.about(episode=pk):
            log.info("queued" if pk in fresh else "start repeated: the idempotency key's episode")
    issued = {str(e.pk): t for e, t in zip(episodes, tokens, strict=True) if t}
    return Started(
        [fresh[pk] if pk in fresh else found[pk] for pk in ids],
        [],
        {pk: issued[pk] for pk in ids if pk in fresh and pk in issued},
    )


def missing_errors(
    valids: list[SimulationFields],
    refs: list[list[Reference]],
    prefixes: list[tuple[str, ...]],
    missing: set[int],
) -> list[UserError]:
    """Each request's NOT_FOUND errors, from the positions of the missing keys among all refs."""
    errors: list[UserError] = []
    offset = 0
    for valid, named, prefix in zip(valids, refs, prefixes, strict=True):
        found = [offset + i not in missing for i in range(len(named))]
        errors += reference_errors(valid, found, prefix)
        offset += len(named)
    return errors


async def get_many(client: redis.Redis, pks: list[str]) -> list[EpisodeLog]:
    """Stored episodes in one round trip (those an idempotency key named)."""
    if not pks:
        return []
    documents: list[Any] = await client.json().mget(
        [EpisodeLog.make_primary_key(pk) for pk in pks], "$"
    )
    return [EpisodeLog.model_validate(doc[0]) for doc in documents if doc]


async def cancel(services: Services, pk: str) -> tuple[EpisodeLog | None, list[UserError]]:
    """QUEUED ends at once; RUNNING/EVALUATING end here and the worker stops on its next check."""
    if not storable(pk):
        return None, [not_found("episode", pk)]
    result = await services.store.transition(pk, EpisodeStatus.CANCELLED, reason="cancelled")
    if result.ok:
        with logs.about(episode=pk):
            log.info("cancelled")
    if result.status is None:
        return None, [not_found("episode", pk)]
    episode = await get_or_none(EpisodeLog, pk)
    if not result.ok:
        message = f"episode is already {result.status.value}"
        return episode, [UserError(["input", "id"], message, ErrorCode.CONFLICT)]
    return episode, []


async def delete(services: Services, pk: str) -> list[UserError]:
    episode = await get_or_none(EpisodeLog, pk)
    if episode is None:
        return [not_found("episode", pk)]
    if not episode.status.terminal:
        message = f"episode is {episode.status.value}: cancel it before deleting it"
        return [UserError(["input", "id"], message, ErrorCode.IN_USE)]
    if episode.experiment_id and await _budgeted(episode.experiment_id):
        message = (
            f"episode counts in the spending of experiment {episode.experiment_id}'s budget, "
            "so it is kept"
        )
        return [UserError(["input", "id"], message, ErrorCode.IN_USE)]
    await services.store.delete(episode)
    return []


async def _budgeted(experiment_id: str) -> bool:
    """Whether the experiment has a budget: what its episodes spent is read from them, so
    deleting one would give its money back (lifecycle/pacing.py)."""
    experiment = await get_or_none(Experiment, experiment_id)
    return experiment is not None and experiment.design.get("budget") is not None
