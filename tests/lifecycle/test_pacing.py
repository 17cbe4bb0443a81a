"""Paced experiments played by real workers against the fake model server: a budget stops
queuing at its cap, a precision stops the repeats once the compared model is known well enough,
and the estimate reads what comparable episodes spent."""

import dataclasses
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bench.support.fake_llm import FakeLLM, Rule
from parley.core.errors import ErrorCode
from parley.engine.llm import ModelRegistry
from parley.lifecycle import worker as worker_module
from parley.lifecycle.episode_choice import chosen_episodes
from parley.lifecycle.estimate import of_experiment
from parley.lifecycle.experiments import (
    Progress,
    calibrate_experiment,
    cancel_experiment,
    create_experiment,
    get_experiment,
    progress,
    start_experiment,
    top_up,
    top_up_all,
)
from parley.lifecycle.services import Services
from parley.lifecycle.start import delete
from parley.resolvers.study_fields import EpisodeChoice
from parley.resolvers.usage import usage_totals
from parley.storage.experiments import ExperimentStore
from parley.storage.models import EpisodeStatus, Experiment
from tests.engine.conftest import FAST_RETRY
from tests.lifecycle.conftest import burst
from tests.support.experiments import experiment_world

PRICES = {"prompt_price": 100.0, "completion_price": 400.0}
"""Dollars per million tokens: dear enough that one episode costs cents."""


@pytest.fixture
async def priced(services: Services, fake_llm: FakeLLM, tmp_path: Path) -> AsyncIterator[Services]:
    """The services with `agent` and `judge` priced, and `unpriced`, all at the fake."""
    models = tmp_path / "priced.json"
    entries: list[dict[str, Any]] = [
        {"name": "agent", "model": "agent", **PRICES},
        {"name": "judge", "model": "judge", **PRICES},
        {"name": "unpriced", "model": "unpriced"},
    ]
    listed = [{**e, "base_url": fake_llm.base_url} for e in entries]
    models.write_text(json.dumps({"models": listed}))
    registry = ModelRegistry(models, tmp_path, retry=FAST_RETRY)
    yield dataclasses.replace(services, models=registry)
    await registry.aclose()


async def made(services: Services, tag: str, scenarios: list[str], **design: Any) -> Experiment:
    fields = {
        "scenarios": {"ids": scenarios},
        "agents": {"sample": "uniform", "seed": 3, "pairs_per_scenario": 2, "tag": tag},
        "models": {"compare": ["agent"], "partner": "agent"},
        "max_turns": 2,
        "judge_model": "judge",
        **design,
    }
    name = f"{tag}-{uuid.uuid4().hex[:6]}"
    experiment, errors = await create_experiment(
        services, {"name": name, "tag": tag, "design": fields}
    )
    assert errors == [] and experiment is not None
    return experiment


async def progress_of(services: Services, experiment: Experiment) -> Progress:
    """The progress of the experiment as now stored (a stop is written on its record)."""
    found = await get_experiment(services, str(experiment.pk))
    assert found is not None
    return await progress(services, found)


async def spent(experiment: Experiment) -> float:
    return (await usage_totals(experiment_id=str(experiment.pk))).cost or 0.0


async def test_a_budget_refuses_a_model_without_prices(priced: Services) -> None:
    scenarios, _ = await experiment_world(f"pace-{uuid.uuid4().hex[:6]}")
    design = {
        "scenarios": {"ids": scenarios},
        "agents": {"sample": "uniform", "seed": 3},
        "models": {"compare": ["unpriced"], "partner": "agent"},
        "judge_model": "judge",
        "budget": 1.0,
    }
    experiment, errors = await create_experiment(
        priced, {"name": "x", "tag": "pace-refused", "design": design}
    )
    assert experiment is None
    assert [(e.field, e.code.value) for e in errors] == [(["input", "design", "budget"], "INVALID")]
    assert "'unpriced'" in errors[0].message


async def test_the_estimate_covers_what_comparable_episodes_spent_and_a_budget_stops_at_its_cap(
    priced: Services,
) -> None:
    tag = f"pace-{uuid.uuid4().hex[:6]}"
    scenarios, _ = await experiment_world(tag)
    first = await made(priced, tag, scenarios, repeats=2)  # 16 episodes
    before = await of_experiment(priced, first)
    assert before.covered == 0 and before.cost is None and before.uncovered
    assert before.uncovered == [("judge", "agent", "agent")]

    # A calibration run plays two slots, and then the estimate covers every slot.
    _, queued, errors = await calibrate_experiment(priced, str(first.pk))
    assert (queued, errors) == (2, [])
    await burst(priced)
    calibrated = await of_experiment(priced, first)
    assert calibrated.covered == calibrated.episodes == 16 and calibrated.comparable == 2
    assert calibrated.cost is not None and calibrated.cost.low is not None

    await start_experiment(priced, str(first.pk))
    await burst(priced)
    ran = await progress_of(priced, first)
    assert ran.counts == {EpisodeStatus.COMPLETED: 16}
    cost = await spent(first)
    assert abs(calibrated.cost.expected - cost) <= 0.15 * cost

    # A budget of about five episodes' cost: it stops queuing, spends no more than its cap,
    # and says so.
    per_episode = cost / 16
    second = await made(priced, tag, scenarios, repeats=2, budget=round(5.5 * per_episode, 6))
    _, queued, errors = await start_experiment(priced, str(second.pk))
    assert errors == [] and 0 < queued < 16
    await burst(priced)
    stopped = await progress_of(priced, second)
    assert stopped.stopped == "BUDGET" and stopped.finished
    assert stopped.held == 16 - stopped.counts[EpisodeStatus.COMPLETED] > 0
    assert await spent(second) <= 5.5 * per_episode + 1e-9
    # A start again queues nothing more.
    _, again, _ = await start_experiment(priced, str(second.pk))
    assert again == 0

    # What a budget's episodes spent is its record: they cannot be deleted (a deleted one gave
    # its money back, and a start queued more); an unbudgeted experiment's can.
    used = await spent(second)
    budgeted = next(iter((await ExperimentStore(priced.client).slots(str(second.pk))).values()))
    refused = await delete(priced, budgeted)
    assert [e.code for e in refused] == [ErrorCode.IN_USE] and "budget" in refused[0].message
    assert await spent(second) == used
    assert (await start_experiment(priced, str(second.pk)))[1] == 0
    free = next(iter((await ExperimentStore(priced.client).slots(str(first.pk))).values()))
    assert await delete(priced, free) == []


async def test_a_precision_stops_the_repeats_once_the_compared_model_is_known(
    priced: Services,
) -> None:
    tag = f"pace-{uuid.uuid4().hex[:6]}"
    scenarios, _ = await experiment_world(tag)
    # The fake's scores spread by a few points at most: one round of 8 knows them to ± 5.
    precision = {"half_width": 5.0, "min_scores": 8}
    experiment = await made(priced, tag, scenarios, repeats=3, precision=precision)
    _, queued, _ = await start_experiment(priced, str(experiment.pk))
    assert queued == 8  # one round: 2 scenarios x 2 pairs x 2 seatings
    await burst(priced)
    found = await progress_of(priced, experiment)
    assert found.stopped == "PRECISION" and found.finished
    assert (found.counts, found.held) == ({EpisodeStatus.COMPLETED: 8}, 16)
    plan = await ExperimentStore(priced.client).plan(str(experiment.pk))
    filled = await ExperimentStore(priced.client).slots(str(experiment.pk))
    assert {plan[n].repeat for n in filled} == {0}


async def test_a_precision_not_reached_plays_every_round(priced: Services) -> None:
    tag = f"pace-{uuid.uuid4().hex[:6]}"
    scenarios, _ = await experiment_world(tag)
    experiment = await made(
        priced, tag, scenarios, repeats=2, precision={"half_width": 0.01, "min_scores": 100}
    )
    _, queued, _ = await start_experiment(priced, str(experiment.pk))
    assert queued == 8
    await burst(priced)
    found = await progress_of(priced, experiment)
    assert found.stopped is None and found.finished
    assert found.counts == {EpisodeStatus.COMPLETED: 16}


async def test_a_failed_calibration_is_no_budget_stop_and_a_start_retries_it(
    priced: Services, fake_llm: FakeLLM
) -> None:
    tag = f"pace-{uuid.uuid4().hex[:6]}"
    scenarios, _ = await experiment_world(tag)
    # every action of this world fails until the rule is spent: the first episodes fail
    fake_llm.add_rule(Rule(kind="action", contains=[tag], status=503, times=30))
    experiment = await made(priced, tag, scenarios, budget=100.0)
    _, queued, _ = await start_experiment(priced, str(experiment.pk))
    assert queued == 1  # nothing is known of its kind: one episode at a time
    await burst(priced)
    failed = await progress_of(priced, experiment)
    assert failed.stopped is None and failed.counts.get(EpisodeStatus.FAILED, 0) >= 1
    fake_llm.reset()
    await start_experiment(priced, str(experiment.pk))  # retries the failed, then the rest
    await burst(priced)
    done = await progress_of(priced, experiment)
    assert done.finished and done.stopped is None
    assert done.counts == {EpisodeStatus.COMPLETED: 8}


async def test_a_calibration_of_a_paced_experiment_starts_nothing_else(priced: Services) -> None:
    tag = f"pace-{uuid.uuid4().hex[:6]}"
    scenarios, _ = await experiment_world(tag)
    precision = {"half_width": 0.001, "min_scores": 100}
    experiment = await made(priced, tag, scenarios, repeats=3, budget=100.0, precision=precision)
    _, queued, _ = await calibrate_experiment(priced, str(experiment.pk))
    assert queued == 2
    await burst(priced)
    found = await get_experiment(priced, str(experiment.pk))
    assert found is not None and found.started_at is None
    assert len(await ExperimentStore(priced.client).slots(str(experiment.pk))) == 2
    assert (await of_experiment(priced, found)).covered == 24


async def test_a_cancelled_paced_experiment_queues_nothing_until_started_again(
    priced: Services,
) -> None:
    tag = f"pace-{uuid.uuid4().hex[:6]}"
    scenarios, _ = await experiment_world(tag)
    precision = {"half_width": 0.001, "min_scores": 100}
    experiment = await made(priced, tag, scenarios, repeats=3, precision=precision)
    pk = str(experiment.pk)
    _, queued, _ = await start_experiment(priced, pk)
    _, cancelled, _ = await cancel_experiment(priced, pk)
    assert queued == cancelled == 8
    assert await top_up(priced, pk) == 0  # a worker that ends an episode now queues nothing
    held = await progress_of(priced, experiment)
    assert held.stopped == "CANCELLED" and held.finished and held.held == 16
    _, again, _ = await start_experiment(priced, pk)  # resumes: the cancelled round again
    assert again == 8
    await burst(priced)
    done = await progress_of(priced, experiment)
    assert done.stopped is None and done.counts == {EpisodeStatus.COMPLETED: 24}


async def test_an_end_no_worker_saw_is_topped_up_by_the_next_sweep(
    priced: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    tag = f"pace-{uuid.uuid4().hex[:6]}"
    scenarios, _ = await experiment_world(tag)
    experiment = await made(
        priced, tag, scenarios, repeats=2, precision={"half_width": 0.001, "min_scores": 100}
    )
    pk = str(experiment.pk)
    await start_experiment(priced, pk)

    async def died(self: Any, episode: Any) -> None:
        return None  # as a worker that died right after storing its episode's end

    monkeypatch.setattr(worker_module.Worker, "_top_up", died)
    monkeypatch.setattr(worker_module, "PACE_SECONDS", 3600.0)
    await burst(priced)
    stalled = await progress_of(priced, experiment)
    assert stalled.pending == 8 and stalled.unfinished == 8  # round 2 never queued
    assert pk in await ExperimentStore(priced.client).watched_paced()
    assert await top_up_all(priced) == 8
    monkeypatch.undo()
    await burst(priced)
    done = await progress_of(priced, experiment)
    assert done.counts == {EpisodeStatus.COMPLETED: 16}
    await top_up_all(priced)
    assert pk not in await ExperimentStore(priced.client).watched_paced()


async def test_kinds_with_nothing_recorded_go_one_episode_at_a_time_under_a_budget(
    priced: Services, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    tag = f"pace-{uuid.uuid4().hex[:6]}"
    scenarios, _ = await experiment_world(tag)
    experiment = await made(
        priced, tag, scenarios, budget=0.01, models={"compare": ["judge"], "partner": "agent"}
    )
    _, queued, _ = await start_experiment(priced, str(experiment.pk))
    assert queued == 1  # not one of each kind at once
    await burst(priced)
    stopped = await progress_of(priced, experiment)
    # the one episode cost more than the whole budget: it stops, passed by that one alone
    assert stopped.stopped == "BUDGET" and stopped.counts == {EpisodeStatus.COMPLETED: 1}


async def test_the_episodes_of_a_stopped_experiment_can_be_chosen_by_its_id(
    priced: Services,
) -> None:
    tag = f"pace-{uuid.uuid4().hex[:6]}"
    scenarios, _ = await experiment_world(tag)
    experiment = await made(priced, tag, scenarios, repeats=2, budget=0.01)
    await start_experiment(priced, str(experiment.pk))
    await burst(priced)
    choice = EpisodeChoice(experiment_id=str(experiment.pk))
    chosen, errors = await chosen_episodes(priced.client, choice, 100)
    assert errors == [] and len(chosen) == 1
