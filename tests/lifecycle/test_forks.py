"""Forks of an episode at a turn, played by a real worker against the fake model server."""

import json
import uuid
from typing import Any

from bench.support.fake_llm import FakeLLM, Rule
from bench.support.simulation import make_world, queue_episode
from parley.lifecycle.forks import Forked, fork
from parley.lifecycle.services import Services
from parley.lifecycle.start import cancel
from parley.resolvers.agents import agent_names
from parley.storage.models import AgentProfile, EpisodeLog, EpisodeStatus, StoredTurn
from tests.lifecycle.conftest import burst

Status = EpisodeStatus
TURNS = 6


def said(model: str, turn: int, tag: str) -> Rule:
    """`model`'s answer to the action request of `turn` in the world `tag`: a line naming both."""
    line = f"{model} speaking in turn {turn}"
    body = {"action_type": "speak", "argument": line, "to": []}
    return Rule(
        kind="action", model=model, contains=[tag, f"Turn #{turn}."], content=json.dumps(body)
    )


async def finished_parent(services: Services, fake_llm: FakeLLM, tag: str) -> EpisodeLog:
    """A completed episode of TURNS turns in which model `alpha` played both seats."""
    scenario, agents = await make_world(tag)
    fake_llm.add_rule(*(said("alpha", turn, tag) for turn in range(TURNS)))
    pk = await queue_episode(
        services,
        scenario,
        agents,
        fake_llm.model_name("alpha"),
        judge_model=fake_llm.model_name("judge"),
        max_turns=TURNS,
    )
    await burst(services)
    parent = await EpisodeLog.get(pk)
    assert parent.status == Status.COMPLETED, parent.error
    return parent


def as_played(turns: list[StoredTurn]) -> list[dict[str, Any]]:
    """The turns as the conversation has them (not when or in which event they were stored)."""
    return [t.model_dump(exclude={"sequence", "at"}) for t in turns]


async def test_a_fork_at_turn_3_keeps_three_turns_and_goes_on_with_the_changed_model(
    services: Services, fake_llm: FakeLLM
) -> None:
    tag = f"fork-{uuid.uuid4().hex[:8]}"
    parent = await finished_parent(services, fake_llm, tag)
    beta = fake_llm.model_name("beta")
    fake_llm.add_rule(*(said("beta", turn, tag) for turn in range(3, TURNS)))
    before = len(fake_llm.requests)
    forked = await fork(
        services,
        {
            "episode_id": parent.pk,
            "at_turn": 3,
            "seat_models": [{"seat": 0, "model": beta}, {"seat": 1, "model": beta}],
        },
    )
    assert forked.errors == [] and forked.episode is not None
    assert forked.episode.status == Status.QUEUED
    await burst(services)
    child = await EpisodeLog.get(forked.episode.pk)
    assert child.status == Status.COMPLETED, child.error
    assert child.parent_id == parent.pk and child.forked_at_turn == 3
    assert parent.models and child.models == [parent.models[0], beta, beta]
    assert as_played(child.turns[:3]) == as_played(parent.turns[:3])
    assert [t.turn for t in child.turns] == list(range(TURNS))
    assert [t.argument for t in child.turns[3:]] == [
        f"beta speaking in turn {turn}" for turn in range(3, TURNS)
    ]
    assert child.messages[:3] == parent.messages[:3]
    # The fork asked only the changed model, once for each turn from 3 on, and no earlier turn.
    asked = [r for r in fake_llm.requests[before:] if r.kind != "judge" and tag in r.text]
    assert [r.body["model"] for r in asked] == ["beta"] * (TURNS - 3)
    assert [r.text.rsplit("\n", 1)[-1] for r in asked] == [
        f"Turn #{turn}." for turn in range(3, TURNS)
    ]
    # The kept turns are what the agents saw before the first new one.
    assert "alpha speaking in turn 2" in asked[0].text
    resumed = [c for c in child.status_history if c.status == Status.RUNNING]
    assert [c.resumed_from for c in resumed] == [3]
    # The parent is untouched.
    assert as_played((await EpisodeLog.get(parent.pk)).turns) == as_played(parent.turns)


async def test_an_injected_message_is_delivered_at_the_fork_turn(
    services: Services, fake_llm: FakeLLM
) -> None:
    tag = f"fork-{uuid.uuid4().hex[:8]}"
    parent = await finished_parent(services, fake_llm, tag)
    names = await agent_names(services.client, parent.agents)
    before = len(fake_llm.requests)
    text = f"A fire alarm rings ({tag})."
    forked = await fork(
        services,
        {"episode_id": parent.pk, "at_turn": 2, "inject_message": {"text": text, "to": [names[1]]}},
    )
    assert forked.errors == [] and forked.episode is not None
    await burst(services)
    child = await EpisodeLog.get(forked.episode.pk)
    assert child.status == Status.COMPLETED, child.error
    (injection,) = child.injections
    assert injection.turn == 2 and injection.text == text
    assert ("Environment", names[1], text) in child.messages[2]
    assert all(text not in m[2] for turn in child.messages[:2] for m in turn)
    asked = [r for r in fake_llm.requests[before:] if r.kind != "judge" and tag in r.text]
    to_seat_1 = [r for r in asked if f"You are {names[1]}." in r.text]
    to_seat_0 = [r for r in asked if f"You are {names[0]}." in r.text]
    assert to_seat_1 and all(text in r.text for r in to_seat_1)
    assert to_seat_0 and all(text not in r.text for r in to_seat_0)
    assert child.fork_change is not None and child.fork_change.injection is not None
    assert child.fork_change.injection.text == text


async def test_goals_and_profiles_edited_in_a_fork_reach_its_agents(
    services: Services, fake_llm: FakeLLM
) -> None:
    tag = f"fork-{uuid.uuid4().hex[:8]}"
    parent = await finished_parent(services, fake_llm, tag)
    names = await agent_names(services.client, parent.agents)
    before = len(fake_llm.requests)
    goal = f"Convince them to skip lunch ({tag})"
    secret = f"Has already eaten ({tag})"
    forked = await fork(
        services,
        {
            "episode_id": parent.pk,
            "at_turn": 4,
            "goals": [{"seat": 0, "goal": goal}],
            "profiles": [{"seat": 1, "secret": secret, "occupation": "Chef"}],
        },
    )
    assert forked.errors == [] and forked.episode is not None
    await burst(services)
    assert (await EpisodeLog.get(forked.episode.pk)).status == Status.COMPLETED
    asked = [r for r in fake_llm.requests[before:] if r.kind == "action" and tag in r.text]
    seat_0 = [r.text for r in asked if f"You are {names[0]}." in r.text]
    seat_1 = [r.text for r in asked if f"You are {names[1]}." in r.text]
    assert seat_0 and all(goal in text and secret not in text for text in seat_0)
    assert seat_1 and all(secret in text and goal not in text for text in seat_1)
    # The stored agent is unchanged: only the fork plays it so.
    assert secret not in (await AgentProfile.get(parent.agents[1])).secret


async def refused(services: Services, fields: dict[str, Any]) -> list[tuple[str, str]]:
    """The code and field of each error of a refused fork; no job was queued."""
    jobs = await services.client.xlen(services.jobs.stream)
    result: Forked = await fork(services, fields)
    assert result.episode is None
    assert await services.client.xlen(services.jobs.stream) == jobs
    return [(e.code.value, ".".join(e.field)) for e in result.errors]


async def test_bad_forks_are_refused_with_coded_errors(
    services: Services, fake_llm: FakeLLM
) -> None:
    tag = f"fork-{uuid.uuid4().hex[:8]}"
    parent = await finished_parent(services, fake_llm, tag)
    pk = str(parent.pk)
    model = fake_llm.model_name("beta")
    assert await refused(services, {"episode_id": "nope", "at_turn": 0}) == [
        ("NOT_FOUND", "input.episodeId")
    ]
    assert await refused(services, {"episode_id": pk, "at_turn": TURNS + 1}) == [
        ("INVALID", "input.atTurn")
    ]
    assert await refused(services, {"episode_id": pk, "at_turn": -1}) == [
        ("INVALID", "input.atTurn")
    ]
    bad_seat = {"episode_id": pk, "at_turn": 1, "seat_models": [{"seat": 2, "model": model}]}
    assert await refused(services, bad_seat) == [("INVALID", "input.seatModels.0.seat")]
    twice = [{"seat": 1, "model": model}, {"seat": 1, "model": model}]
    assert await refused(services, {"episode_id": pk, "at_turn": 1, "seat_models": twice}) == [
        ("INVALID", "input.seatModels.1.seat")
    ]
    unknown = {"episode_id": pk, "at_turn": 1, "seat_models": [{"seat": 0, "model": "no/such"}]}
    assert await refused(services, unknown) == [("INVALID", "input.seatModels.0.model")]
    stranger = {"episode_id": pk, "at_turn": 1, "inject_message": {"text": "hi", "to": ["Nobody"]}}
    assert await refused(services, stranger) == [("INVALID", "input.injectMessage.to.0")]
    assert await refused(
        services, {"episode_id": pk, "at_turn": 1, "inject_message": {"text": ""}}
    ) == [("INVALID", "input.injectMessage.text")]
    nothing = {"episode_id": pk, "at_turn": 1, "profiles": [{"seat": 0}]}
    assert await refused(services, nothing) == [("INVALID", "input.profiles.0")]
    goals = [{"seat": 1, "goal": "x"}, {"seat": 1, "goal": "y"}]
    assert await refused(services, {"episode_id": pk, "at_turn": 1, "goals": goals}) == [
        ("INVALID", "input.goals.1.seat")
    ]
    # An episode that has not finished cannot be forked (its turns may still change).
    scenario, agents = await make_world(f"{tag}-q")
    queued = await queue_episode(services, scenario, agents, model)
    assert await refused(services, {"episode_id": queued, "at_turn": 0}) == [
        ("CONFLICT", "input.episodeId")
    ]
    await cancel(services, queued)


async def test_a_model_the_fork_would_keep_that_is_gone_refuses_it_before_it_queues(
    services: Services, fake_llm: FakeLLM
) -> None:
    tag = f"fork-{uuid.uuid4().hex[:8]}"
    parent = await finished_parent(services, fake_llm, tag)
    pk, gone = str(parent.pk), "gone/from-the-models-file"
    key = EpisodeLog.make_primary_key(pk)
    await services.client.json().set(key, "$.models[2]", gone)  # seat 1's model
    assert await refused(services, {"episode_id": pk, "at_turn": 1}) == [
        ("INVALID", "input.seatModels")
    ]
    beta = fake_llm.model_name("beta")
    given = {"episode_id": pk, "at_turn": 1, "seat_models": [{"seat": 1, "model": beta}]}
    await services.client.json().set(key, "$.judges", [{"model": gone, "repeats": 1}])
    result = await fork(services, given)
    assert [(e.code.value, ".".join(e.field)) for e in result.errors] == [
        ("INVALID", "input.episodeId")
    ]
    assert "judge is gone" in result.errors[0].message and result.episode is None


async def test_a_person_s_seat_must_get_a_model_and_no_seat_credential_is_carried(
    services: Services, fake_llm: FakeLLM
) -> None:
    tag = f"fork-{uuid.uuid4().hex[:8]}"
    scenario, agents = await make_world(tag)
    model = fake_llm.model_name("alpha")
    pk = await queue_episode(services, scenario, agents, model, human_seats=[1], max_turns=4)
    await burst(services)  # it waits for the person at turn 1, then is cancelled there
    assert (await EpisodeLog.get(pk)).status == Status.WAITING
    await cancel(services, pk)
    parent = await EpisodeLog.get(pk)
    assert parent.human_seats[0].token_hash
    assert await refused(services, {"episode_id": pk, "at_turn": 1}) == [
        ("INVALID", "input.seatModels")
    ]
    forked = await fork(
        services,
        {"episode_id": pk, "at_turn": 1, "seat_models": [{"seat": 1, "model": model}]},
    )
    assert forked.errors == [] and forked.episode is not None
    await burst(services)
    child = await EpisodeLog.get(forked.episode.pk)
    assert child.status == Status.COMPLETED, child.error
    assert child.human_seats == [] and child.agent_classes == ["LLMAgent", "LLMAgent"]
    assert "human" not in (child.models or [])


async def test_a_repeated_fork_with_its_idempotency_key_gives_the_same_episode(
    services: Services, fake_llm: FakeLLM
) -> None:
    tag = f"fork-{uuid.uuid4().hex[:8]}"
    parent = await finished_parent(services, fake_llm, tag)
    fields = {"episode_id": parent.pk, "at_turn": 1, "idempotency_key": tag}
    first, again = await fork(services, fields), await fork(services, fields)
    assert first.episode is not None and again.episode is not None
    assert again.episode.pk == first.episode.pk
    await burst(services)
