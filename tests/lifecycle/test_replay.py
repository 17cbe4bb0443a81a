"""Replaying episodes from their ledgers, and the cache mode, with a real worker, a real Redis
and a fake model server of the test's own that counts every request it gets."""

import asyncio
import dataclasses
import uuid
from collections import Counter, defaultdict
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as redis

from bench.support.fake_llm import FakeLLM, Rule
from bench.support.simulation import make_world, start_fields
from parley.core.errors import ErrorCode
from parley.engine.ledger import CANCELLED, CallPurpose, ModelCall, ReplayCode, Served, content_hash
from parley.engine.llm import ModelRegistry
from parley.lifecycle import start
from parley.lifecycle.experiments import create_experiment, start_experiment
from parley.lifecycle.replay import compare, replay_episode
from parley.lifecycle.services import Services
from parley.storage import keys
from parley.storage.answers import ledger_calls
from parley.storage.ledger import Ledger, StoredCall
from parley.storage.models import (
    EnvironmentProfile,
    EpisodeLog,
    EpisodeStatus,
    ReplayCheck,
    StoredTurn,
)
from parley.storage.records import get_or_none
from tests.engine.conftest import FAST_RETRY
from tests.lifecycle.conftest import burst


@pytest.fixture
async def recorded(services: Services, redis_client: redis.Redis) -> AsyncIterator[Services]:
    """The services with their model calls recorded."""
    yield dataclasses.replace(services, ledger=Ledger(redis_client, 30.0))
    services.models.record_calls(None)


async def finished(services: Services, fields: dict[str, Any]) -> EpisodeLog:
    episode, errors = await start.start(services, fields)
    assert not errors and episode is not None, errors
    await burst(services)
    stored = await get_or_none(EpisodeLog, str(episode.pk))
    assert stored is not None
    return stored


async def one_turn_episode(services: Services, fake: FakeLLM) -> EpisodeLog:
    """A finished episode of one turn in a world of its own."""
    tag = f"replay-{uuid.uuid4().hex[:8]}"
    scenario, agents = await make_world(tag)
    return await finished(
        services, start_fields(scenario, agents, fake.model_name(), max_turns=1, tag=tag)
    )


async def replayed(services: Services, source: str) -> EpisodeLog:
    episode, errors = await replay_episode(services, source)
    assert not errors and episode is not None, errors
    await burst(services)
    stored = await get_or_none(EpisodeLog, str(episode.pk))
    assert stored is not None and stored.replay_of == source
    return stored


def transcript(episode: EpisodeLog) -> list[dict[str, Any]]:
    return [t.model_dump(exclude={"sequence", "at"}) for t in episode.turns]


def made(found: list[StoredCall]) -> Counter[tuple[Any, ...]]:
    return Counter((c.purpose, c.seat, c.turn, c.judge, c.request, c.error_code) for c in found)


async def test_a_replay_asks_no_model_and_matches_turn_by_turn(
    recorded: Services, own_fake_llm: FakeLLM, redis_client: redis.Redis
) -> None:
    tag = f"replay-{uuid.uuid4().hex[:8]}"
    scenario, agents = await make_world(tag)
    model = own_fake_llm.model_name()
    source = await finished(recorded, start_fields(scenario, agents, model, max_turns=3, tag=tag))
    assert source.status == EpisodeStatus.COMPLETED and source.rewards
    asked = len(own_fake_llm.requests)
    assert asked > 0
    replay = await replayed(recorded, str(source.pk))
    assert len(own_fake_llm.requests) == asked  # not one request more
    assert replay.status == EpisodeStatus.COMPLETED
    assert transcript(replay) == transcript(source) and len(replay.turns) == 3
    assert replay.rewards == source.rewards
    assert replay.replay is not None and replay.replay.matched, replay.replay
    assert replay.replay.turns_matched == 3 and replay.replay.code is None
    calls = await ledger_calls(redis_client, str(replay.pk))
    assert calls and all(c.served == Served.REPLAY for c in calls)
    assert all(c.served_from == str(source.pk) and c.attempts == 0 for c in calls)
    again = await replayed(recorded, str(replay.pk))  # a replay's ledger replays too
    assert again.replay is not None and again.replay.matched
    assert len(own_fake_llm.requests) == asked


async def test_a_changed_prompt_stops_the_replay_with_its_code(
    recorded: Services, own_fake_llm: FakeLLM
) -> None:
    tag = f"replay-{uuid.uuid4().hex[:8]}"
    scenario, agents = await make_world(tag)
    model = own_fake_llm.model_name()
    source = await finished(recorded, start_fields(scenario, agents, model, max_turns=2, tag=tag))
    asked = len(own_fake_llm.requests)
    profile = await EnvironmentProfile.get(scenario)
    profile.scenario = "Colleagues decide where to have dinner."
    await profile.save()
    replay = await replayed(recorded, str(source.pk))
    assert len(own_fake_llm.requests) == asked
    assert replay.status == EpisodeStatus.FAILED and replay.turns == []
    check = replay.replay
    assert check is not None and not check.matched
    assert check.code == ReplayCode.REPLAY_MISSING_CALL and check.turns_matched == 0
    assert replay.error is not None and replay.error.startswith("REPLAY_MISSING_CALL:")
    assert "seat 0's turn 0" in replay.error and "the prompts changed" in replay.error


async def test_an_episode_without_a_ledger_is_refused(
    services: Services, fake_llm: FakeLLM
) -> None:
    source = await one_turn_episode(services, fake_llm)  # no ledger kept
    episode, errors = await replay_episode(services, str(source.pk))
    assert episode is None and [e.code for e in errors] == [ErrorCode.NOT_FOUND]
    missing, errors = await replay_episode(services, "01NOSUCHEPISODE0000000000")
    assert missing is None and [e.code for e in errors] == [ErrorCode.NOT_FOUND]


async def test_cache_mode_asks_only_what_no_ledger_holds(
    recorded: Services, own_fake_llm: FakeLLM, redis_client: redis.Redis
) -> None:
    tag = f"cache-{uuid.uuid4().hex[:8]}"
    scenario, agents = await make_world(tag)
    fields = start_fields(scenario, agents, own_fake_llm.model_name(), max_turns=2, tag=tag)
    first = await finished(recorded, fields)
    asked = len(own_fake_llm.requests)
    cached = await finished(recorded, {**fields, "cache": True})
    assert cached.status == EpisodeStatus.COMPLETED and cached.cache
    assert len(own_fake_llm.requests) == asked  # every request was asked before
    assert transcript(cached) == transcript(first) and cached.rewards == first.rewards
    calls = await ledger_calls(redis_client, str(cached.pk))
    assert calls and all(c.served == Served.CACHE for c in calls)
    longer = await finished(recorded, {**fields, "cache": True, "max_turns": 3})
    assert longer.status == EpisodeStatus.COMPLETED
    fresh = [c for c in await ledger_calls(redis_client, str(longer.pk)) if c.served is None]
    assert [(c.purpose, c.turn) for c in fresh if c.purpose == CallPurpose.TURN] == [
        (CallPurpose.TURN, 2)
    ]  # only the turn no ledger held (and the judge of a longer transcript) asked the model
    assert len(own_fake_llm.requests) == asked + len(fresh)
    # deleting the ledgers takes their answers out of the cache
    for episode in (first, cached, longer):
        await recorded.store.delete(episode)
    for c in calls:
        assert await redis_client.hget(keys.CALL_ANSWERS, c.request) is None


async def test_an_interrupted_experiment_run_again_asks_only_what_was_not_asked(
    recorded: Services, own_fake_llm: FakeLLM, redis_client: redis.Redis
) -> None:
    tag = f"cache-{uuid.uuid4().hex[:8]}"
    scenario, agents = await make_world(tag)
    model = own_fake_llm.model_name()
    design = {
        "scenarios": {"ids": [scenario]},
        "agents": {"pairs": [agents]},
        "models": {"seats": [[model, model]]},
        "max_turns": 4,
        "judge_model": model,
        "cache": True,
    }
    experiment, errors = await create_experiment(
        recorded, {"name": tag, "tag": tag, "design": design}
    )
    assert not errors and experiment is not None
    # The provider breaks down at turn 2: the episode fails there, its first turns asked.
    own_fake_llm.add_rule(Rule(contains=["Turn #2."], status=500, times=None))
    await start_experiment(recorded, str(experiment.pk))
    await burst(recorded)
    [failed] = await EpisodeLog.find(EpisodeLog.experiment_id == str(experiment.pk)).all()
    assert failed.status == EpisodeStatus.FAILED and len(failed.turns) == 2
    asked = {content_hash(r.body) for r in own_fake_llm.requests if r.status == 200}
    own_fake_llm.reset()
    _, queued, errors = await start_experiment(recorded, str(experiment.pk))  # run again
    assert not errors and queued == 1
    await burst(recorded)
    episodes = await EpisodeLog.find(EpisodeLog.experiment_id == str(experiment.pk)).all()
    [done] = [e for e in episodes if e.pk != failed.pk]
    assert done.status == EpisodeStatus.COMPLETED and done.cache
    assert transcript(done)[:2] == transcript(failed)
    again = [content_hash(r.body) for r in own_fake_llm.requests]
    assert again and not asked & set(again)  # nothing answered before was asked again
    calls = await ledger_calls(redis_client, str(done.pk))
    served = [(c.seat, c.turn) for c in calls if c.served == Served.CACHE]
    assert served == [(0, 0), (1, 1)]
    assert len([c for c in calls if c.served is None]) == len(again)


async def test_recorded_failures_and_reasks_replay_as_they_went(
    recorded: Services, own_fake_llm: FakeLLM, redis_client: redis.Redis
) -> None:
    tag = f"replay-{uuid.uuid4().hex[:8]}"
    scenario, agents = await make_world(tag)
    model = own_fake_llm.model_name()
    own_fake_llm.add_rule(
        Rule(kind="action", contains=[tag], content="not json at all"),  # a re-ask at turn 0
        Rule(kind="judge", status=500, times=None),  # the judge's every try fails
    )
    source = await finished(recorded, start_fields(scenario, agents, model, max_turns=2, tag=tag))
    assert source.status == EpisodeStatus.COMPLETED and source.judge_error
    recorded_calls = await ledger_calls(redis_client, str(source.pk))
    assert any(c.purpose == CallPurpose.REASK for c in recorded_calls)
    assert any(c.error_code == "server" for c in recorded_calls)
    asked = len(own_fake_llm.requests)
    own_fake_llm.reset()  # the provider works now: a replay must not find that out
    replay = await replayed(recorded, str(source.pk))
    assert own_fake_llm.requests == [] and asked > 0
    assert replay.status == EpisodeStatus.COMPLETED, replay.error
    assert replay.judge_error == source.judge_error
    assert transcript(replay) == transcript(source)
    assert replay.replay is not None and replay.replay.matched, replay.replay
    calls = await ledger_calls(redis_client, str(replay.pk))
    assert made(calls) == made(recorded_calls)  # the same calls, failures and all


class CrossedJudgeCalls(Ledger):
    """A ledger that crosses the ends of a judge's two per-agent calls in every episode: seat 1's
    is written after seat 0's, yet its write returns first (so a failure of seat 1 is raised
    first), and seat 0's returns only a while later, once seat 1's failure has stopped the judge.
    Re-asks and cancelled calls are written as they come."""

    def __init__(self, client: redis.Redis) -> None:
        super().__init__(client, 30.0)
        self.written: defaultdict[tuple[str, int], asyncio.Event] = defaultdict(asyncio.Event)

    async def record(self, call: ModelCall) -> None:
        scope = call.scope
        if scope.purpose != CallPurpose.JUDGE or call.error_code == CANCELLED:
            await super().record(call)
            return
        assert scope.seat is not None
        if scope.seat == 1:
            await self.written[scope.episode_id, 0].wait()
        await super().record(call)
        self.written[scope.episode_id, scope.seat].set()
        if scope.seat == 0:
            await self.written[scope.episode_id, 1].wait()
            await asyncio.sleep(0.2)


async def test_a_judges_failures_at_once_report_the_first_agents_in_source_and_replay(
    recorded: Services, own_fake_llm: FakeLLM, redis_client: redis.Redis
) -> None:
    """Which of a judge's failures at once is raised first is a matter of timing; the one
    reported is the first agent's, in the source and in its replay alike."""
    crossed = dataclasses.replace(recorded, ledger=CrossedJudgeCalls(redis_client))
    tag = f"replay-{uuid.uuid4().hex[:8]}"
    scenario, agents = await make_world(tag)
    model = own_fake_llm.model_name()
    own_fake_llm.add_rule(Rule(kind="judge", status=500, times=None))
    source = await finished(crossed, start_fields(scenario, agents, model, max_turns=1, tag=tag))
    assert source.status == EpisodeStatus.COMPLETED and source.judge_error
    assert f"gave no valid scores for Ava0 {tag}:" in source.judge_error  # raised last
    recorded_calls = await ledger_calls(redis_client, str(source.pk))
    judged = [(c.seat, c.error_code) for c in recorded_calls if c.purpose == CallPurpose.JUDGE]
    assert judged == [(0, "server"), (1, "server")]
    replay = await replayed(crossed, str(source.pk))
    assert replay.judge_error == source.judge_error
    assert replay.replay is not None and replay.replay.matched, replay.replay
    assert made(await ledger_calls(redis_client, str(replay.pk))) == made(recorded_calls)


def test_a_replay_that_differs_says_where_first() -> None:
    said = [
        StoredTurn(turn=i, agent_index=i % 2, agent_name=f"A{i % 2}", action_type="speak",
                   argument=f"line {i}", sequence=i)
        for i in range(3)
    ]  # fmt: skip
    source = EpisodeLog(environment="s", agents=["a", "b"], turns=said, rewards=[1.0, 2.0])
    same = source.model_copy(update={"turns": [t.model_copy(update={"at": 9.0}) for t in said]})
    assert compare(source, same) == ReplayCheck(matched=True, turns_matched=3)
    changed = [*said[:1], said[1].model_copy(update={"argument": "other"}), said[2]]
    check = compare(source, source.model_copy(update={"turns": changed}))
    assert (
        not check.matched and check.code == ReplayCode.REPLAY_DIVERGED and check.turns_matched == 1
    )
    assert check.divergence == ("turn 1: A1 speak 'other' where the source has A1 speak 'line 1'")
    shorter = compare(source, source.model_copy(update={"turns": said[:2]}))
    assert shorter.turns_matched == 2 and shorter.divergence is not None
    assert "no turn" in shorter.divergence
    scored = compare(source, source.model_copy(update={"rewards": [1.0, 3.0]}))
    assert not scored.matched and scored.divergence is not None
    assert scored.divergence.startswith("scores:")


async def test_an_episode_whose_model_is_gone_is_refused_at_its_id(
    recorded: Services, fake_llm: FakeLLM, redis_client: redis.Redis
) -> None:
    source = await one_turn_episode(recorded, fake_llm)
    key = EpisodeLog.make_primary_key(str(source.pk))
    await redis_client.json().set(key, "$.models[1]", "gone/from-the-models-file")
    episode, errors = await replay_episode(recorded, str(source.pk))
    assert episode is None
    assert [(e.field, e.code) for e in errors] == [(["input", "id"], ErrorCode.INVALID)]
    assert "cannot start again as it was" in errors[0].message
    assert "gone/from-the-models-file" in errors[0].message


async def test_a_replay_finds_what_was_sent_after_an_endpoint_refused_schema_mode(
    recorded: Services, own_fake_llm: FakeLLM, redis_client: redis.Redis, tmp_path: Path
) -> None:
    tag = f"replay-{uuid.uuid4().hex[:8]}"
    scenario, agents = await make_world(tag)
    model = own_fake_llm.model_name()
    own_fake_llm.add_rule(Rule(kind="action", contains=[tag], status=400))  # refuses the schema
    source = await finished(recorded, start_fields(scenario, agents, model, max_turns=2, tag=tag))
    refused = [r for r in own_fake_llm.requests if r.status == 400]
    assert refused and "response_format" in refused[0].body
    calls = await ledger_calls(redis_client, str(source.pk))
    assert calls[0].schema_hash is None  # the body sent after the refusal: schema in the prompt
    asked = len(own_fake_llm.requests)
    # A new server process: its endpoints have refused nothing yet, so it would send the schema.
    fresh = dataclasses.replace(recorded, models=ModelRegistry(None, tmp_path, retry=FAST_RETRY))
    fresh.models.record_calls(fresh.ledger)
    try:
        replay = await replayed(fresh, str(source.pk))
    finally:
        await fresh.models.aclose()
    assert len(own_fake_llm.requests) == asked
    assert replay.replay is not None and replay.replay.matched, replay.replay


async def test_a_judge_stopped_between_two_calls_stops_there_in_its_replay_too(
    recorded: Services, own_fake_llm: FakeLLM, redis_client: redis.Redis
) -> None:
    """Seat 0's answer is being recorded when seat 1's failure stops the judge: the answer
    stands and seat 0 stops at its next call, its re-ask, recorded cancelled though never sent;
    the replay stops it at the same re-ask."""
    crossed = dataclasses.replace(recorded, ledger=CrossedJudgeCalls(redis_client))
    tag = f"replay-{uuid.uuid4().hex[:8]}"
    scenario, agents = await make_world(tag)
    model = own_fake_llm.model_name()
    own_fake_llm.add_rule(
        Rule(kind="judge", contains=[f"how well Ava0 {tag} did"], content="not json"),
        Rule(kind="judge", status=500, times=None),
    )
    source = await finished(crossed, start_fields(scenario, agents, model, max_turns=1, tag=tag))
    assert source.judge_error and f"gave no valid scores for Ava1 {tag}:" in source.judge_error
    recorded_calls = await ledger_calls(redis_client, str(source.pk))
    judged = [c for c in recorded_calls if c.judge is not None]
    assert [(c.purpose, c.seat, c.error_code) for c in judged] == [
        (CallPurpose.JUDGE, 0, None),
        (CallPurpose.JUDGE, 1, "server"),
        (CallPurpose.REASK, 0, CANCELLED),
    ]
    assert judged[2].attempts == 0
    asked = len(own_fake_llm.requests)
    assert len([r for r in own_fake_llm.requests if f"how well Ava0 {tag} did" in r.text]) == 1
    replay = await replayed(crossed, str(source.pk))
    assert len(own_fake_llm.requests) == asked
    assert replay.judge_error == source.judge_error
    assert replay.replay is not None and replay.replay.matched, replay.replay
    assert made(await ledger_calls(redis_client, str(replay.pk))) == made(recorded_calls)
