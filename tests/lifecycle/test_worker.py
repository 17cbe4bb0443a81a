"""The worker in this process against a real Redis: every failure path it handles.

Each test has its own job stream, so no other test's queued episodes reach its workers; burst
mode (`run(burst=True)`) returns once nothing is left to take.
"""

import asyncio
import dataclasses
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from bench.support.fake_llm import FakeLLM
from bench.support.simulation import make_world, queue_episode
from parley.engine.errors import LLMTransportError
from parley.engine.limiter import INITIAL
from parley.engine.llm import ModelRegistry
from parley.lifecycle import start
from parley.lifecycle import worker as worker_module
from parley.lifecycle.services import Services
from parley.lifecycle.worker import (
    EPISODE_HEADROOM,
    AttemptStart,
    Worker,
    running_worker,
)
from parley.storage.episode_store import EpisodeStore
from parley.storage.models import (
    CustomEvaluationDimension,
    CustomEvaluationDimensionList,
    EpisodeLog,
    EpisodeStatus,
    Redelivery,
    RelationshipProfile,
)
from tests.engine.conftest import FAST_RETRY
from tests.lifecycle.conftest import BURST_TIMEOUT, SLOW_JUDGE, burst, worker_config

Status = EpisodeStatus


async def queue(
    services: Services, model: str, count: int = 1, turns: int = 2, **more: Any
) -> list[str]:
    scenario, agents = await make_world(f"worker-{uuid.uuid4().hex[:8]}")
    return [
        await queue_episode(services, scenario, agents, model, max_turns=turns, **more)
        for _ in range(count)
    ]


async def pending(services: Services) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = await services.client.xpending_range(
        services.jobs.stream, services.jobs.group, "-", "+", 100
    )
    return found


async def die_holding(services: Services, episode_id: str) -> None:
    """What a worker that died mid-episode leaves: its entry read but never acked, the episode
    RUNNING under its attempt."""
    jobs = await services.jobs.read("dead", 1, block_ms=100)
    assert [job.subject for job in jobs] == [episode_id]
    state = await services.store.state(episode_id)
    assert state is not None
    started = await services.store.transition(
        episode_id, Status.RUNNING, fence=state[1], attempt_mode="restart"
    )
    assert started.ok


async def wait_until(check: Any, timeout: float = 10) -> None:
    """Poll `check` (state in Redis or in the worker, which signal nothing) until it holds."""
    async with asyncio.timeout(timeout):
        while not await check():  # noqa: ASYNC110
            await asyncio.sleep(0.02)


async def test_a_burst_runs_every_queued_episode_and_acks_it(
    services: Services, fake_llm: FakeLLM
) -> None:
    ids = await queue(services, fake_llm.model_name(), count=3)
    await burst(services)
    for pk in ids:
        episode = await EpisodeLog.get(pk)
        assert episode.status == Status.COMPLETED and episode.attempt == 1
        assert len(episode.turns) == 2 and len(episode.rewards) == 2
    assert await pending(services) == []
    assert await services.client.xlen(services.jobs.stream) == 0


async def test_a_dead_workers_job_is_taken_over_after_its_lease(
    services: Services, fake_llm: FakeLLM
) -> None:
    (pk,) = await queue(services, fake_llm.model_name())
    await die_holding(services, pk)
    assert (await EpisodeLog.get(pk)).attempt == 1
    await asyncio.sleep(1.1)  # the lease lapses
    await burst(services)
    episode = await EpisodeLog.get(pk)
    assert episode.status == Status.COMPLETED and episode.attempt == 2
    starts = [c for c in episode.status_history if c.status == Status.RUNNING]
    assert [c.attempt for c in starts] == [1, 2]
    assert await pending(services) == []


async def test_within_its_lease_a_job_is_left_to_its_worker(
    services: Services, fake_llm: FakeLLM
) -> None:
    (pk,) = await queue(services, fake_llm.model_name())
    await die_holding(services, pk)
    await burst(services, lease_seconds=30)
    assert (await EpisodeLog.get(pk)).status == Status.RUNNING
    assert [entry["consumer"] for entry in await pending(services)] == ["dead"]


async def test_the_attempt_cap_fails_the_episode(services: Services, fake_llm: FakeLLM) -> None:
    (pk,) = await queue(services, fake_llm.model_name())
    await die_holding(services, pk)
    await asyncio.sleep(1.1)
    await burst(services, max_attempts=1)
    episode = await EpisodeLog.get(pk)
    assert episode.status == Status.FAILED and episode.error == "worker lost 1 times"
    assert await pending(services) == []


async def test_a_worker_that_lost_its_episode_writes_nothing_more(
    services: Services, fake_llm: FakeLLM
) -> None:
    """Another worker restarted the episode (attempt 2): this one is fenced out at its next
    write, stops, and leaves the entry for the new owner."""
    fake_llm.delay = 0.2
    (pk,) = await queue(services, fake_llm.model_name(), turns=6)
    worker = Worker(services, worker_config(lease_seconds=30))
    async with running_worker(worker):
        await wait_until(lambda: turns_of(pk, at_least=1))
        taken = await services.store.transition(pk, Status.RUNNING, fence=1, attempt_mode="restart")
        assert taken.ok
        await wait_until(lambda: idle(worker))
    episode = await EpisodeLog.get(pk)
    assert episode.status == Status.RUNNING and episode.attempt == 2
    assert episode.turns == []  # the restart cleared them and the old worker added none
    assert len(await pending(services)) == 1


async def test_a_cancelled_episode_stops_within_a_poll_and_keeps_its_turns(
    services: Services, fake_llm: FakeLLM
) -> None:
    fake_llm.delay = 0.2
    (pk,) = await queue(services, fake_llm.model_name(), turns=10)
    worker = Worker(services, worker_config())
    async with running_worker(worker):
        await wait_until(lambda: turns_of(pk, at_least=2))
        episode, errors = await start.cancel(services, pk)
        assert not errors
        await wait_until(lambda: idle(worker))
    episode = await EpisodeLog.get(pk)
    assert episode.status == Status.CANCELLED and 2 <= len(episode.turns) < 10
    assert await pending(services) == []


async def test_stopping_hands_running_jobs_back_at_once(
    services: Services, fake_llm: FakeLLM
) -> None:
    fake_llm.delay = 0.2
    (pk,) = await queue(services, fake_llm.model_name(), turns=4)
    worker = Worker(services, worker_config(lease_seconds=30, consumer="leaving"))
    async with running_worker(worker):
        await wait_until(lambda: turns_of(pk, at_least=1))
    # not acked, and idle past the lease at once: the next worker's sweep takes it
    (entry,) = await pending(services)
    assert entry["consumer"] == "leaving" and entry["time_since_delivered"] >= 30_000
    fake_llm.delay = 0.0
    await burst(services, lease_seconds=30)
    episode = await EpisodeLog.get(pk)
    assert episode.status == Status.COMPLETED and episode.attempt == 2
    assert episode.losses == 0  # handed back, not lost: it costs nothing toward the cap
    second = [c for c in episode.status_history if c.status == Status.RUNNING][1]
    assert second.reason == "handed back by leaving when it stopped"
    assert second.resumed_from is not None and second.resumed_from >= 1


async def test_an_episode_whose_records_were_deleted_fails_with_the_reason(
    services: Services, fake_llm: FakeLLM
) -> None:
    (pk,) = await queue(services, fake_llm.model_name())
    episode = await EpisodeLog.get(pk)
    await services.client.delete(
        f":sotopia.database.persistent_profile.AgentProfile:{episode.agents[0]}"
    )
    await burst(services)
    failed = await EpisodeLog.get(pk)
    assert failed.status == Status.FAILED and "was deleted" in (failed.error or "")


async def test_a_list_renamed_after_the_start_fails_the_episode_in_words(
    services: Services, fake_llm: FakeLLM
) -> None:
    """A dimension renamed to `overall_score` by another writer after the start: the episode
    fails naming the list and the name (before, "the stored records do not make a valid
    episode", naming neither)."""
    dimension = CustomEvaluationDimension(name="warmth", range_low=0, range_high=10)
    await dimension.save()
    listed = CustomEvaluationDimensionList(name="renamed later", dimension_pks=[dimension.pk])
    await listed.save()
    (pk,) = await queue(services, fake_llm.model_name(), evaluation_dimension_list_id=listed.pk)
    key = CustomEvaluationDimension.make_primary_key(str(dimension.pk))
    await services.client.json().set(key, "$.name", "overall_score")
    await burst(services)
    failed = await EpisodeLog.get(pk)
    assert failed.status == Status.FAILED, failed.status
    assert failed.error is not None and "pydantic" not in failed.error
    assert f"evaluation dimension list {listed.pk!r}: the dimension name 'overall_score' is " in (
        failed.error
    )


async def completed(pk: str) -> bool:
    return (await EpisodeLog.get(pk)).status == Status.COMPLETED


async def test_a_worker_runs_what_is_queued_after_redis_lost_its_group_and_indexes(
    services: Services, fake_llm: FakeLLM
) -> None:
    """What a running worker finds of a Redis that came back empty: the job stream gone, its
    consumer group with it (NOGROUP at each read, and a start queued meanwhile never ran), and
    an index an episode's setup searches (relationships) gone. It makes both again, and runs
    the start."""
    worker = Worker(services, worker_config())
    async with running_worker(worker):
        await wait_until(lambda: idle(worker))
        await services.client.delete(services.jobs.stream)
        await services.client.execute_command("FT.DROPINDEX", RelationshipProfile.Meta.index_name)  # type: ignore[no-untyped-call]
        (pk,) = await queue(services, fake_llm.model_name())
        await wait_until(lambda: completed(pk))
    indexes = await services.client.execute_command("FT._LIST")  # type: ignore[no-untyped-call]
    assert RelationshipProfile.Meta.index_name in indexes


async def turns_of(pk: str, at_least: int) -> bool:
    return len((await EpisodeLog.get(pk)).turns) >= at_least


async def idle(worker: Worker) -> bool:
    return not worker.running


async def test_a_taken_over_episode_resumes_from_its_stored_turns(
    services: Services, fake_llm: FakeLLM
) -> None:
    """The dead worker had stored two turns: the new attempt keeps them, asks the agents only
    for the rest, and says so on its RUNNING change."""
    (pk,) = await queue(services, fake_llm.model_name(), turns=4)
    await die_holding(services, pk)
    for turn, (seat, name) in enumerate([(0, "Ava0"), (1, "Ava1")]):
        kept = {
            "turn": turn,
            "agent_index": seat,
            "agent_name": name,
            "action_type": "speak",
            "argument": f"kept line {turn}",
            "to": [],
        }
        assert await services.store.append_turn(pk, 1, kept, turn + 1, []) is not None
    await asyncio.sleep(1.1)
    await burst(services)
    episode = await EpisodeLog.get(pk)
    assert episode.status == Status.COMPLETED and episode.attempt == 2
    assert [t.argument for t in episode.turns[:2]] == ["kept line 0", "kept line 1"]
    assert len(episode.turns) == 4 and len(episode.messages) == 5
    resumed = [c for c in episode.status_history if c.status == Status.RUNNING][1]
    assert resumed.resumed_from == 2 and resumed.reason == "a worker stopped renewing its lease"
    assert len(fake_llm.requests_of("action")) == 2
    assert episode.losses == 0  # the lost attempt stored turns: not counted toward the cap


async def test_only_losses_without_stored_turns_count_toward_the_cap(
    services: Services, fake_llm: FakeLLM
) -> None:
    """How the next start counts a lost attempt: toward the cap when it stored no turn the
    next attempt keeps (one in a row more), not at all when it did (the count starts over)."""
    (pk,) = await queue(services, fake_llm.model_name(), turns=4)
    await die_holding(services, pk)
    await services.store.mark(pk, 1, {"losses": 2})  # two losses in a row before this one
    lost = await EpisodeLog.get(pk)
    assert AttemptStart.of(lost, "next").losses == 3  # stored nothing
    line = {"turn": 0, "agent_index": 0, "agent_name": "Ava0", "action_type": "speak"}
    assert await services.store.append_turn(pk, 1, {**line, "argument": "hi", "to": []}, 1, [])
    moved_on = await EpisodeLog.get(pk)
    assert AttemptStart.of(moved_on, "next") == AttemptStart(
        "resume", "a worker stopped renewing its lease", losses=0
    )
    restarted = moved_on.model_copy(update={"redelivery": Redelivery.RESTART})
    assert AttemptStart.of(restarted, "next").losses == 3  # its turns are not kept: no progress
    # A later attempt that stores nothing counts again, from there.
    again = await services.store.transition(pk, Status.RUNNING, fence=1, attempt_mode="resume")
    assert again.ok
    assert AttemptStart.of(await EpisodeLog.get(pk), "next").losses == 3


async def test_the_cap_on_an_episode_lost_while_judging_keeps_its_conversation(
    services: Services, fake_llm: FakeLLM
) -> None:
    """Its turns are all stored, only the judge was left: it ends COMPLETED without scores,
    with the reason, so it can be judged again."""
    (pk,) = await queue(services, fake_llm.model_name(), turns=2)
    await die_holding(services, pk)
    for turn in range(2):
        line = {"turn": turn, "agent_index": turn, "agent_name": f"Ava{turn}"}
        body = {**line, "action_type": "speak", "argument": f"line {turn}", "to": []}
        assert await services.store.append_turn(pk, 1, body, turn + 1, []) is not None
    assert (await services.store.transition(pk, Status.EVALUATING, fence=1)).ok
    # taken over by a worker that dies while judging too: stored nothing new
    assert (await services.store.transition(pk, Status.RUNNING, fence=1, attempt_mode="resume")).ok
    assert (await services.store.transition(pk, Status.EVALUATING, fence=2)).ok
    await asyncio.sleep(1.1)
    await burst(services, max_attempts=1)
    episode = await EpisodeLog.get(pk)
    assert episode.status == Status.COMPLETED and episode.error is None
    assert episode.judge_error == "worker lost 1 times while judging"
    assert episode.status_history[-1].reason == "not judged: worker lost 1 times while judging"
    assert [t.argument for t in episode.turns] == ["line 0", "line 1"]
    assert episode.rewards == [0.0, 0.0]
    assert fake_llm.requests_of("judge") == []
    assert await pending(services) == []


async def test_a_judge_that_times_out_leaves_the_episode_completed_without_scores(
    slow_judge: Services, fake_llm: FakeLLM
) -> None:
    """The conversation is stored whole, the reason with it; no score is made up."""
    (pk,) = await queue(slow_judge, SLOW_JUDGE, turns=2)
    await burst(slow_judge)
    episode = await EpisodeLog.get(pk)
    assert episode.status == Status.COMPLETED and episode.error is None
    assert episode.judge_error is not None
    assert f"judge {SLOW_JUDGE} gave no valid scores" in episode.judge_error
    assert "request timed out after 0.3 s (after 3 attempts)" in episode.judge_error
    assert episode.status_history[-1].reason == f"not judged: {episode.judge_error}"
    assert len(episode.turns) == 2 and len(episode.messages) == 3
    assert episode.rewards == [0.0, 0.0] and episode.reasoning == ""
    assert episode.generation_stats["timeouts"] >= 3
    assert await pending(slow_judge) == []


async def test_a_crash_records_what_was_raised(
    services: Services, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exception nobody expected fails the episode with its type and message as the error
    (it used to be stored as "internal error in the worker" with no error at all)."""

    async def crash(*args: object, **kwargs: object) -> None:
        raise LLMTransportError("local/gemma-3-270m: request timed out (after 2 attempts)")

    monkeypatch.setattr(worker_module, "play", crash)
    (pk,) = await queue(services, fake_llm.model_name())
    await burst(services)
    episode = await EpisodeLog.get(pk)
    expected = (
        "internal error in the worker: LLMTransportError: local/gemma-3-270m: request timed "
        "out (after 2 attempts)"
    )
    assert episode.status == Status.FAILED and episode.error == expected
    assert episode.status_history[-1].reason == expected
    assert await pending(services) == []


async def test_a_restart_episode_plays_again_from_the_start(
    services: Services, fake_llm: FakeLLM
) -> None:
    scenario, agents = await make_world(f"restart-{uuid.uuid4().hex[:8]}")
    model = fake_llm.model_name()
    pk = await queue_episode(services, scenario, agents, model, max_turns=2, redelivery="restart")
    await die_holding(services, pk)
    stale = {"turn": 0, "agent_index": 0, "agent_name": "Ava0", "action_type": "speak"}
    await services.store.append_turn(pk, 1, {**stale, "argument": "old", "to": []}, 1, [])
    await asyncio.sleep(1.1)
    await burst(services)
    done = await EpisodeLog.get(pk)
    assert done.status == Status.COMPLETED and done.attempt == 2
    assert "old" not in [t.argument for t in done.turns] and len(done.turns) == 2
    assert len(fake_llm.requests_of("action")) == 2


async def test_a_worker_runs_about_twice_the_episodes_its_model_takes_calls(
    services: Services, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    models = tmp_path / "models.json"
    entry = {"name": "one-at-a-time", "base_url": fake_llm.base_url, "model": "fake"}
    fixed = {"min_concurrency": 1, "max_concurrency": 1}
    models.write_text(json.dumps({"models": [{**entry, **fixed}]}))
    registry = ModelRegistry(models, tmp_path, retry=FAST_RETRY)
    limited = dataclasses.replace(services, models=registry)
    ids = await queue(limited, "one-at-a-time", count=160, turns=1)
    worker = Worker(limited, worker_config())
    first, then = 2 * (2 * INITIAL) + EPISODE_HEADROOM, 2 * 1 + EPISODE_HEADROOM
    samples: list[int] = []

    async def watch() -> None:
        while True:
            samples.append(len(worker.running))
            await asyncio.sleep(0.002)

    watcher = asyncio.create_task(watch())
    try:
        await asyncio.wait_for(worker.run(burst=True), BURST_TIMEOUT)
        assert worker.episode_limit() == then
    finally:
        watcher.cancel()
        await registry.aclose()
    # Before its first call the model counts as a new endpoint (limit 32, in slow start: 64 a
    # round trip later); once the first episodes have drained, the worker holds no more than
    # its model's limit says.
    assert max(samples) <= first
    top = samples.index(max(samples))
    settled = next(i for i in range(top, len(samples)) if samples[i] <= then)
    assert 1 < max(samples[settled:]) <= then
    episodes = [await EpisodeLog.get(i) for i in ids]
    assert {e.status for e in episodes} == {Status.COMPLETED}


class SplitTurnStore(EpisodeStore):
    """Sends each turn with a lone surrogate in its argument (JSON escapes it; RedisJSON then
    refuses the whole write): a write Redis refuses for what it holds, as a writer that did not
    clean a model's line would send it."""

    async def append_turn(
        self, episode_id: str, attempt: int, turn: dict[str, Any], *rest: Any
    ) -> int | None:
        return await super().append_turn(
            episode_id, attempt, {**turn, "argument": "split \ud800"}, *rest
        )


async def test_a_write_redis_refuses_for_its_data_fails_the_episode_at_once(
    services: Services, fake_llm: FakeLLM
) -> None:
    """A refusal is not an outage: asked again, Redis refuses again. The episode ends FAILED on
    its first attempt, saying so, where it was left for redelivery lease after lease and ended
    as "worker lost 3 times"."""
    (pk,) = await queue(services, fake_llm.model_name())
    store = SplitTurnStore(services.client, jobs=services.store.jobs)
    await burst(dataclasses.replace(services, store=store), max_attempts=3)
    episode = await EpisodeLog.get(pk)
    assert episode.status == Status.FAILED and episode.attempt == 1, episode.error
    assert (episode.error or "").startswith("Redis refused to store the episode: "), episode.error
    assert await pending(services) == []
