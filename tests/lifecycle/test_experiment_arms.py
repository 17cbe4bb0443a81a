"""Experiment arms played by real workers against the fake model server: each arm slot is a fork
of its control slot's episode at the arm's turn, compared with it pair by pair."""

import asyncio
import json
import uuid
from typing import Any

import pytest

from bench.support.fake_llm import FakeLLM, Rule
from parley.lifecycle import rejudge
from parley.lifecycle import worker as worker_module
from parley.lifecycle.experiment_arms import arm_results
from parley.lifecycle.experiments import create_experiment, progress, start_experiment
from parley.lifecycle.services import Services
from parley.resolvers.names import agent_name
from parley.resolvers.results import GroupBy, Results, ResultsFilter
from parley.storage.experiments import ExperimentStore
from parley.storage.models import AgentProfile, EpisodeLog, EpisodeStatus, Experiment, StoredTurn
from tests.lifecycle.conftest import burst
from tests.support.experiments import experiment_world

Status = EpisodeStatus
TURNS = 4
AT = 2


def said(model: str, tag: str) -> list[Rule]:
    """`model`'s answer to every action request of the world `tag`: a line naming it and the
    turn (the latest turn first: a prompt names the turns before its own too)."""
    rules = []
    for turn in reversed(range(TURNS)):
        body = {"action_type": "speak", "argument": f"{model} speaking in turn {turn}", "to": []}
        rules.append(
            Rule(
                kind="action",
                model=model,
                contains=[tag, f"Turn #{turn}."],
                content=json.dumps(body),
                times=None,
            )
        )
    return rules


def as_played(turns: list[StoredTurn]) -> list[dict[str, Any]]:
    return [t.model_dump(exclude={"sequence", "at"}) for t in turns]


async def arms_experiment(
    services: Services, fake_llm: FakeLLM, tag: str, **design: Any
) -> Experiment:
    """Two scenarios, one pair, model `alpha` in both seats for 4 turns, and the arm `beta`
    that puts model `beta` in seat 0 from turn 2: 2 control slots, 2 arm slots."""
    scenarios, agents = await experiment_world(tag, agents=2)
    fake_llm.add_rule(*said("alpha", tag), *said("beta", tag))
    # Episodes in which beta spoke are judged 9 on every dimension, the others by default.
    fake_llm.add_rule(Rule(kind="judge", contains=["beta speaking"], score=9, times=None))
    fields = {
        "scenarios": {"ids": scenarios},
        "agents": {"pairs": [agents]},
        "models": {"seats": [[fake_llm.model_name("alpha")] * 2]},
        "max_turns": TURNS,
        "judge_model": fake_llm.model_name("judge"),
        "arms": [
            {"name": "beta", "at_turn": AT, "seat_models": [
                {"seat": 0, "model": fake_llm.model_name("beta")}]},
        ],
        **design,
    }  # fmt: skip
    experiment, errors = await create_experiment(
        services, {"name": tag, "tag": tag, "design": fields}
    )
    assert errors == [] and experiment is not None
    return experiment


async def slot_episodes(services: Services, experiment: Experiment) -> dict[int, EpisodeLog]:
    filled = await ExperimentStore(services.client).slots(str(experiment.pk))
    return {n: await EpisodeLog.get(pk) for n, pk in filled.items()}


def overall(episode: EpisodeLog, seat: int) -> float:
    reward = episode.rewards[seat]
    assert not isinstance(reward, float)
    return float(reward[0])


async def test_an_arm_forks_each_control_at_its_turn_and_is_compared_pair_by_pair(
    services: Services, fake_llm: FakeLLM
) -> None:
    tag = f"arms{uuid.uuid4().hex[:8]}"
    experiment = await arms_experiment(services, fake_llm, tag)
    assert experiment.slot_count == 4
    plan = await ExperimentStore(services.client).plan(str(experiment.pk))
    assert [(s.arm, s.control_slot) for s in plan] == [("", None), ("", None), ("beta", 0),
                                                       ("beta", 1)]  # fmt: skip
    beta = fake_llm.model_name("beta")
    assert plan[2].agent_models == [beta, fake_llm.model_name("alpha")]
    _, queued, errors = await start_experiment(services, str(experiment.pk))
    assert errors == [] and queued == 2  # the controls: their arms wait for them
    await burst(services)  # plays the controls, then the forks the worker made of them
    episodes = await slot_episodes(services, experiment)
    assert sorted(episodes) == [0, 1, 2, 3]
    assert all(e.status == Status.COMPLETED for e in episodes.values()), [
        e.error for e in episodes.values()
    ]
    for n in (0, 1):
        control, arm = episodes[n], episodes[2 + n]
        assert (control.arm, control.experiment_slot) == ("control", n)
        assert (arm.arm, arm.experiment_slot, arm.experiment_id) == ("beta", 2 + n, experiment.pk)
        assert arm.parent_id == control.pk and arm.forked_at_turn == AT and arm.tag == tag
        # The first AT turns are the control's, exactly; from AT on seat 0 is beta's.
        assert as_played(arm.turns[:AT]) == as_played(control.turns[:AT])
        assert arm.messages[:AT] == control.messages[:AT]
        assert [t.argument for t in arm.turns[AT:]] == [
            f"{'beta' if turn % 2 == 0 else 'alpha'} speaking in turn {turn}"
            for turn in range(AT, TURNS)
        ]
        assert as_played(arm.turns[AT:]) != as_played(control.turns[AT:])
    (result,) = await arm_results(services, experiment)
    assert (result.pairs, result.not_reached, result.unfinished, result.unpaired) == (2, 0, 0, 0)
    by_hand = [
        overall(episodes[2 + n], seat) - overall(episodes[n], seat)
        for n in (0, 1)
        for seat in (0, 1)
    ]
    name, difference = result.differences[0]
    assert name == "overall" and difference.pairs == 4
    assert difference.mean_difference == pytest.approx(sum(by_hand) / 4)
    assert difference.mean_difference > 0  # beta's episodes were judged 9 everywhere
    measured = await progress(services, experiment)
    assert measured.finished and measured.all_completed and measured.total == 4


async def test_a_rejudgings_records_carry_the_arm_its_results_filter_by(
    services: Services, fake_llm: FakeLLM
) -> None:
    tag = f"arms{uuid.uuid4().hex[:8]}"
    experiment = await arms_experiment(services, fake_llm, tag)
    await start_experiment(services, str(experiment.pk))
    await burst(services)
    rejudging, errors = await rejudge.queue(
        services.client,
        services.jobs,
        services.models,
        {"experiment_id": str(experiment.pk), "judge_model": fake_llm.model_name("second")},
    )
    assert errors == [] and rejudging is not None
    await burst(services)
    alpha = fake_llm.model_name("alpha")
    # control: 2 episodes, alpha in both seats; beta: alpha in seat 1 of its 2 episodes
    for arm, scored in (("control", 4), ("beta", 2)):
        groups = await Results(services.client, rejudging.id).groups(
            ResultsFilter(experiment_id=str(experiment.pk), arm=arm), [GroupBy.MODEL]
        )
        assert {g.key[GroupBy.MODEL]: g.scored for g in groups}[alpha] == scored


async def test_a_start_forks_the_arms_a_lost_worker_left_once_even_when_concurrent(
    services: Services, fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    tag = f"arms{uuid.uuid4().hex[:8]}"
    experiment = await arms_experiment(services, fake_llm, tag)
    pk = str(experiment.pk)

    async def lost(services: Services, episode: EpisodeLog) -> None:
        raise ConnectionError("the worker stopped here")

    monkeypatch.setattr(worker_module, "fork_arms", lost)
    await start_experiment(services, pk)
    await burst(services)
    assert sorted(await ExperimentStore(services.client).slots(pk)) == [0, 1]
    before = await progress(services, experiment)
    assert before.pending == 2 and not before.finished  # the arms are due, not forgotten
    monkeypatch.undo()
    starts = await asyncio.gather(*(start_experiment(services, pk) for _ in range(3)))
    assert [e for _, _, e in starts] == [[], [], []]
    assert sum(queued for _, queued, _ in starts) == 2
    _, again, _ = await start_experiment(services, pk)
    assert again == 0
    forks = await EpisodeLog.find(EpisodeLog.experiment_id == pk).all()
    assert sorted(e.experiment_slot or 0 for e in forks) == [0, 1, 2, 3]  # no duplicate
    await burst(services)
    (result,) = await arm_results(services, experiment)
    assert result.pairs == 2
    assert (await progress(services, experiment)).all_completed


async def test_a_control_that_ended_before_the_arms_turn_leaves_it_not_reached(
    services: Services, fake_llm: FakeLLM
) -> None:
    tag = f"arms{uuid.uuid4().hex[:8]}"
    experiment = await arms_experiment(services, fake_llm, tag)
    pk = str(experiment.pk)
    (second,) = [
        agent_name(a)
        for a in await AgentProfile.find(AgentProfile.tag == tag).all()
        if a.first_name == "Exp1"
    ]
    # The agent of seat 1 leaves in turn 1 of the first episode that asks it: that control
    # plays two turns, never turn 2.
    fake_llm.reset()
    fake_llm.add_rule(Rule.leave(second, turn=1))
    fake_llm.add_rule(*said("alpha", tag), *said("beta", tag))
    await start_experiment(services, pk)
    await burst(services)
    episodes = await slot_episodes(services, experiment)
    short = [n for n in (0, 1) if len(episodes[n].turns) <= AT]
    assert len(short) == 1 and episodes[short[0]].status == Status.COMPLETED
    assert sorted(episodes) == sorted([0, 1, 2 + (1 - short[0])])  # its arm was never forked
    measured = await progress(services, experiment)
    assert measured.not_reached == 1 and measured.pending == 0
    assert measured.finished and measured.all_completed
    (result,) = await arm_results(services, experiment)
    assert (result.pairs, result.not_reached, result.unfinished) == (1, 1, 0)
    _, queued, _ = await start_experiment(services, pk)
    assert queued == 0  # never forked at another turn


@pytest.mark.parametrize(
    ("arm", "field"),
    [
        ({"name": "late", "at_turn": TURNS, "goals": [{"seat": 0, "goal": "Win"}]},
         ["input", "design", "arms", "0", "atTurn"]),
        ({"name": "x", "at_turn": 1, "seat_models": [{"seat": 0, "model": "custom/nope"}]},
         ["input", "design", "arms", "0", "seatModels", "0", "model"]),
        ({"name": "control", "at_turn": 1, "goals": [{"seat": 0, "goal": "Win"}]},
         ["input", "design", "arms", "0", "name"]),
        ({"name": "none", "at_turn": 1}, ["input", "design", "arms", "0"]),
        ({"name": "far", "at_turn": 1, "goals": [{"seat": 2, "goal": "Win"}]},
         ["input", "design", "arms", "0", "goals", "0", "seat"]),
        ({"name": "zero", "at_turn": 0, "goals": [{"seat": 0, "goal": "Win"}]},
         ["input", "design", "arms", "0", "atTurn"]),
    ],
)  # fmt: skip
async def test_bad_arms_are_refused_at_their_field(
    services: Services, fake_llm: FakeLLM, arm: dict[str, Any], field: list[str]
) -> None:
    tag = f"arms{uuid.uuid4().hex[:8]}"
    scenarios, agents = await experiment_world(tag, agents=2)
    fields = {
        "scenarios": {"ids": scenarios},
        "agents": {"pairs": [agents]},
        "models": {"seats": [[fake_llm.model_name()] * 2]},
        "max_turns": TURNS,
        "arms": [arm],
    }
    experiment, errors = await create_experiment(
        services, {"name": tag, "tag": tag, "design": fields}
    )
    assert experiment is None
    assert [(e.field, e.code.value) for e in errors] == [(field, "INVALID")], errors
    assert await Experiment.find(Experiment.tag == tag).all() == []


async def test_two_arms_of_one_name_are_refused_at_the_second(
    services: Services, fake_llm: FakeLLM
) -> None:
    tag = f"arms{uuid.uuid4().hex[:8]}"
    scenarios, agents = await experiment_world(tag, agents=2)
    arm = {"name": "same", "at_turn": 1, "goals": [{"seat": 0, "goal": "Win"}]}
    fields = {
        "scenarios": {"ids": scenarios},
        "agents": {"pairs": [agents]},
        "models": {"seats": [[fake_llm.model_name()] * 2]},
        "arms": [arm, arm],
    }
    _, errors = await create_experiment(services, {"name": tag, "tag": tag, "design": fields})
    assert [(e.field, e.code.value) for e in errors] == [
        (["input", "design", "arms", "1", "name"], "INVALID")
    ]


async def test_an_experiment_with_arms_is_not_replayed_whole(
    services: Services, fake_llm: FakeLLM
) -> None:
    from parley.lifecycle.replay import replay_experiment

    tag = f"arms{uuid.uuid4().hex[:8]}"
    experiment = await arms_experiment(services, fake_llm, tag)
    replayed, errors = await replay_experiment(services, str(experiment.pk))
    assert replayed is None
    assert [(e.field, e.code.value) for e in errors] == [(["input", "id"], "INVALID")]


async def test_arms_fork_a_design_comparing_models_against_a_partner(
    services: Services, fake_llm: FakeLLM
) -> None:
    tag = f"arms{uuid.uuid4().hex[:8]}"
    alpha, partner = fake_llm.model_name("alpha"), fake_llm.model_name("partner")
    experiment = await arms_experiment(
        services, fake_llm, tag, models={"compare": [alpha], "partner": partner}
    )
    plan = await ExperimentStore(services.client).plan(str(experiment.pk))
    # 2 scenarios x 1 pair x 2 seat orders = 4 control slots, then the arm's 4
    assert len(plan) == 8
    for n, control in enumerate(plan[:4]):
        forked = plan[4 + n]
        assert (forked.arm, forked.control_slot) == ("beta", n)
        assert (forked.model, forked.seat) == (control.model, control.seat) == (alpha, n % 2)
        assert forked.agent_models == [fake_llm.model_name("beta"), control.agent_models[1]]
    await start_experiment(services, str(experiment.pk))
    await burst(services)
    measured = await progress(services, experiment)
    assert measured.all_completed and measured.total == 8
    (result,) = await arm_results(services, experiment)
    assert result.pairs == 4 and result.differences[0][1].pairs == 8
