"""Replaying an episode from its ledger of model calls: a new episode with the source's setup,
played by the ordinary worker with every request answered from the source's ledger
(storage/answers.py), then compared with the source turn by turn, then by scores and outcome.

An experiment is replayed as a new experiment marked as the source's replay, its slots the
source's, each filled with a replay of the episode in the source's slot: its progress, follow
and results are those of any experiment.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from pydantic_core import to_jsonable_python
from ulid import ULID

from parley.core.errors import ErrorCode, UserError, not_found
from parley.engine.ledger import ReplayCode
from parley.lifecycle import start
from parley.lifecycle.services import Services
from parley.resolvers.experiment_design import Layout
from parley.storage import keys
from parley.storage.experiments import ExperimentStore
from parley.storage.models import EpisodeLog, EpisodeStatus, Experiment, ReplayCheck, StoredTurn
from parley.storage.records import get_or_none, storable

REPLAYABLE = frozenset({EpisodeStatus.COMPLETED, EpisodeStatus.FAILED})


async def replay_problem(
    services: Services, source: EpisodeLog, field: list[str]
) -> UserError | None:
    """Why an episode cannot be replayed, if it cannot."""
    pk = str(source.pk)
    if source.status not in REPLAYABLE:
        message = f"episode {pk} is {source.status}: only a completed or failed one replays"
        return UserError(field, message, ErrorCode.CONFLICT)
    if source.parent_id:
        message = (
            f"episode {pk} is a fork of {source.parent_id}: its first {source.forked_at_turn} "
            "turns are its parent's, whose calls are not in its ledger"
        )
        return UserError(field, message, ErrorCode.INVALID)
    if source.human_seats:
        message = f"episode {pk} had people in its seats: their turns are not in a ledger"
        return UserError(field, message, ErrorCode.INVALID)
    if not await services.client.exists(keys.model_calls(pk)):
        message = f"episode {pk} has no ledger of model calls (not recorded, or past retention)"
        return UserError(field, message, ErrorCode.NOT_FOUND)
    _, errors = await start.check(services.client, replay_request(source), services.models)
    if errors:  # a model no longer configured, or a record of its setup deleted
        first = errors[0]
        message = f"episode {pk} cannot start again as it was: {first.message}"
        return UserError(field, message, first.code)
    return None


def replay_request(source: EpisodeLog) -> dict[str, Any]:
    """The start request of a replay of `source`: its scenario, agents, models, judges and
    limits, as it was started."""
    models = list(source.models or [])
    judging: dict[str, Any] = (
        {
            "judges": [j.model_dump() for j in source.judges],
            "judge_aggregate": source.judge_aggregate,
        }
        if source.judges
        else {"judge_model": models[0]}
    )
    return {
        "scenario_id": source.environment,
        "agent_ids": list(source.agents),
        "agent_models": models[1:],
        **judging,
        "max_turns": source.max_turns,
        "turn_order": source.turn_order,
        "evaluation_dimension_list_id": source.evaluation_dimension_list_id,
        "tag": source.tag or "",
        "replay_of": str(source.pk),
    }


async def replay_episode(services: Services, pk: str) -> tuple[EpisodeLog | None, list[UserError]]:
    """Queue a replay of a finished episode."""
    source = await get_or_none(EpisodeLog, pk) if storable(pk) else None
    if source is None:
        return None, [not_found("episode", pk)]
    problem = await replay_problem(services, source, ["input", "id"])
    if problem is not None:
        return None, [problem]
    return await start.start(services, replay_request(source))


async def replay_experiment(
    services: Services, pk: str
) -> tuple[Experiment | None, list[UserError]]:
    """A new experiment replaying every slot of a finished one (not yet started)."""
    store = ExperimentStore(services.client)
    source = await store.get(pk) if storable(pk) else None
    if source is None:
        return None, [not_found("experiment", pk)]
    if Layout.of(source.design, source.slot_count).arms:
        message = "an experiment with arms cannot be replayed: replay its episodes one by one"
        return None, [UserError(["input", "id"], message, ErrorCode.INVALID)]
    filled = await store.slots(pk)
    if len(filled) < source.slot_count:
        message = f"experiment {pk} has {source.slot_count - len(filled)} slots with no episode"
        return None, [UserError(["input", "id"], message, ErrorCode.CONFLICT)]
    for number in sorted(filled):
        episode = await get_or_none(EpisodeLog, filled[number])
        if episode is None:
            return None, [not_found("episode", filled[number])]
        problem = await replay_problem(services, episode, ["input", "id"])
        if problem is not None:
            return None, [problem]
    new_pk = str(ULID())
    record = Experiment(
        pk=new_pk,
        name=f"{source.name} (replay {new_pk})",
        tag=source.tag,
        design=source.design,
        slot_count=source.slot_count,
        created_at=time.time(),
        replay_of=pk,
    )
    await store.create(record, await store.plan(pk))  # a new name: always created
    return record, []


def _transcript(turns: list[StoredTurn]) -> list[dict[str, Any]]:
    return [t.model_dump(mode="json", exclude={"sequence", "at"}) for t in turns]


def compare(source: EpisodeLog, replay: EpisodeLog) -> ReplayCheck:
    """How an ended replay compares with its source: turn by turn, then the scores, then the
    outcome (a replayed failure matches the same failure)."""
    ours, theirs = _transcript(replay.turns), _transcript(source.turns)
    same = 0
    for mine, recorded in zip(ours, theirs, strict=False):
        if mine != recorded:
            break
        same += 1
    code = ReplayCode.REPLAY_DIVERGED
    if (replay.error or "").startswith(ReplayCode.REPLAY_MISSING_CALL):
        return ReplayCheck(
            matched=False,
            code=ReplayCode.REPLAY_MISSING_CALL,
            turns_matched=same,
            divergence=replay.error,
        )
    if same < max(len(ours), len(theirs)):
        divergence = f"turn {same}: {_said(ours, same)} where the source has {_said(theirs, same)}"
        return ReplayCheck(matched=False, code=code, turns_matched=same, divergence=divergence)
    for what, mine_value, recorded_value in (
        ("status", replay.status, source.status),
        ("scores", replay.rewards, source.rewards),
        ("judge error", replay.judge_error, source.judge_error),
        ("error", replay.error, source.error),
    ):
        if mine_value != recorded_value:
            divergence = f"{what}: {mine_value!r} where the source has {recorded_value!r}"
            return ReplayCheck(matched=False, code=code, turns_matched=same, divergence=divergence)
    return ReplayCheck(matched=True, turns_matched=same)


def _said(turns: list[dict[str, Any]], index: int) -> str:
    if index >= len(turns):
        return "no turn"
    turn = turns[index]
    return f"{turn['agent_name']} {turn['action_type']} {turn['argument']!r}"


async def checked(
    episode: EpisodeLog, status: EpisodeStatus, fields: dict[str, Any]
) -> dict[str, Any]:
    """The field that stores a replay's check, for its move to `status` with `fields` (its
    turns are stored by then); {} for an episode that is no replay, or whose source is gone."""
    if episode.replay_of is None:
        return {}
    source = await get_or_none(EpisodeLog, episode.replay_of)
    stored = await get_or_none(EpisodeLog, str(episode.pk))
    if source is None or stored is None:
        return {}
    ended = {**stored.model_dump(mode="json"), **to_jsonable_python(fields), "status": status}
    replay = EpisodeLog.model_validate(ended)
    return {"replay": compare(source, replay).model_dump(mode="json")}


@dataclass(frozen=True)
class ExperimentCheck:
    """How a replayed experiment's episodes compare with the source's, slot by slot."""

    matched: bool | None
    """None while a slot has not ended its replay; then whether every one matched."""
    checked: int
    """Slots whose replay has ended."""
    mismatched: int
    first_divergence: str | None = None
    """The first slot that does not match: its number, its episode and why."""


async def experiment_check(services: Services, experiment: Experiment) -> ExperimentCheck | None:
    """None for an experiment that is no replay."""
    if experiment.replay_of is None:
        return None
    filled = await ExperimentStore(services.client).slots(str(experiment.pk))
    numbers = sorted(filled)
    episodes = await start.get_many(services.client, [filled[n] for n in numbers])
    checks = {str(e.pk): e.replay for e in episodes}
    checked = mismatched = 0
    first: str | None = None
    for number in numbers:
        check = checks.get(filled[number])
        if check is None:
            continue
        checked += 1
        if not check.matched:
            mismatched += 1
            if first is None:
                first = f"slot {number} (episode {filled[number]}): {check.divergence}"
    done = checked == experiment.slot_count
    matched = (mismatched == 0) if done else (False if mismatched else None)
    return ExperimentCheck(matched, checked, mismatched, first)
