"""Human seats in-process against a real Redis: a person plays a seat between worker bursts.

A waiting episode holds no worker, so each burst returns as soon as the episode waits; the
person's action queues it again and the next burst goes on from the stored turns.
"""

import asyncio
import time
import uuid
from typing import Any

from bench.support.fake_llm import FakeLLM
from bench.support.simulation import make_world, start_fields
from parley.engine.types import ActionType
from parley.lifecycle import start
from parley.lifecycle.control import RunControl
from parley.lifecycle.seats import Seats
from parley.lifecycle.services import Services
from parley.resolvers.perspective import perspective
from parley.storage import keys
from parley.storage.models import EpisodeLog, EpisodeStatus
from tests.lifecycle.conftest import burst

Status = EpisodeStatus


async def human_episode(services: Services, model: str, **extra: Any) -> tuple[str, dict[int, str]]:
    scenario, agents = await make_world(f"seats-{uuid.uuid4().hex[:8]}")
    fields = start_fields(scenario, agents, model, **{"max_turns": 4, "human_seats": [0], **extra})
    started = await start.start_many(services, [fields], prefix=("input",))
    assert not started.errors, started.errors
    pk = str(started.episodes[0].pk)
    return pk, started.seat_tokens.get(pk, {})


def seats(services: Services) -> Seats:
    return Seats(services.client, services.store)


def speak(pk: str, token: str, words: str, seat: int = 0) -> dict[str, Any]:
    return {
        "episode_id": pk,
        "seat": seat,
        "seat_token": token,
        "action_type": ActionType.SPEAK,
        "argument": words,
    }


async def test_a_person_plays_a_seat_against_a_model_to_the_scores(
    services: Services, fake_llm: FakeLLM
) -> None:
    pk, tokens = await human_episode(services, fake_llm.model_name())
    await burst(services)
    episode = await EpisodeLog.get(pk)
    assert episode.status == Status.WAITING
    assert episode.waiting is not None and episode.waiting.seats == [0]
    assert episode.waiting.turn == 0 and episode.waiting.deadline > time.time()
    assert await services.client.zscore(keys.DEADLINES, pk) is not None
    for words in ("Hello there", "Let us get lunch"):
        sequence, errors = await seats(services).act(speak(pk, tokens[0], words))
        assert not errors and sequence is not None
        assert (await EpisodeLog.get(pk)).status == Status.QUEUED
        await burst(services)
    episode = await EpisodeLog.get(pk)
    assert episode.status == Status.COMPLETED, episode.error
    assert [t.agent_index for t in episode.turns] == [0, 1, 0, 1]
    assert [t.argument for t in episode.turns if t.agent_index == 0] == [
        "Hello there",
        "Let us get lunch",
    ]
    assert episode.models and episode.models[1] == "human"
    assert episode.agent_classes == ["HumanAgent", "LLMAgent"]
    assert len(episode.rewards) == 2
    assert await services.client.zscore(keys.DEADLINES, pk) is None
    view, _ = await perspective(episode, 0)
    assert view is not None and view.reward is not None
    own = episode.rewards[0]
    assert isinstance(own, tuple) and view.reward == (own[0], own[1])  # its own, only its own


async def expire(services: Services, pk: str) -> None:
    """Move the episode's deadline into the past and let the sweep see it."""
    await services.client.zadd(keys.DEADLINES, {pk: 1.0})
    await services.client.json().set(EpisodeLog.make_primary_key(pk), "$.waiting.deadline", 1.0)
    assert await seats(services).expire_due() == 1


async def test_a_seat_that_never_acts_leaves(services: Services, fake_llm: FakeLLM) -> None:
    pk, _ = await human_episode(services, fake_llm.model_name())
    await burst(services)
    await expire(services, pk)
    await burst(services)
    episode = await EpisodeLog.get(pk)
    assert episode.status == Status.COMPLETED, episode.error
    (left,) = [t for t in episode.turns if t.agent_index == 0]
    assert left.action_type == ActionType.LEAVE and left.turn == 0
    queued = [c for c in episode.status_history if c.status == Status.QUEUED][-1]
    assert queued.reason and "did not act before the deadline of turn 0: left" in queued.reason


async def test_a_stand_in_model_takes_a_late_turn(services: Services, fake_llm: FakeLLM) -> None:
    model = fake_llm.model_name()
    stand_in = fake_llm.model_name("stand-in")
    pk, _ = await human_episode(
        services, model, on_seat_timeout="STAND_IN", stand_in_model=stand_in, max_turns=2
    )
    await burst(services)
    await expire(services, pk)
    await burst(services)
    episode = await EpisodeLog.get(pk)
    assert episode.status == Status.COMPLETED, episode.error
    assert episode.stand_ins == [(0, 0)]
    first = episode.turns[0]
    assert first.agent_index == 0 and first.action_type == ActionType.SPEAK
    asked = [r.body["model"] for r in fake_llm.requests_of("action")]
    assert asked[0] == "stand-in"


async def test_a_late_seat_fails_the_episode_under_fail(
    services: Services, fake_llm: FakeLLM
) -> None:
    pk, tokens = await human_episode(services, fake_llm.model_name(), on_seat_timeout="FAIL")
    await burst(services)
    await expire(services, pk)
    episode = await EpisodeLog.get(pk)
    assert episode.status == Status.FAILED
    assert episode.error and "did not act before the deadline" in episode.error
    _, errors = await seats(services).act(speak(pk, tokens[0], "too late"))
    assert errors and "FAILED" in errors[0].message
    assert (await EpisodeLog.get(pk)).turns == []


async def test_a_deadline_not_yet_reached_changes_nothing(
    services: Services, fake_llm: FakeLLM
) -> None:
    pk, _ = await human_episode(services, fake_llm.model_name())
    await burst(services)
    await services.client.zadd(keys.DEADLINES, {pk: 1.0})  # the set says due, the episode not
    assert await seats(services).expire_due() == 0
    assert (await EpisodeLog.get(pk)).status == Status.WAITING


async def test_refused_actions_change_nothing(services: Services, fake_llm: FakeLLM) -> None:
    pk, tokens = await human_episode(services, fake_llm.model_name(), max_turns=2)
    refused: list[tuple[dict[str, Any], str]] = [
        ({"seat_token": "wrong"}, "FORBIDDEN"),
        ({"seat_token": ""}, "FORBIDDEN"),
        ({"seat": 1}, "FORBIDDEN"),  # a model's seat: the token is not its token
        ({"seat": 5}, "FORBIDDEN"),
        ({"argument": "  "}, "INVALID"),
        ({"to": ["Nobody Here"]}, "INVALID"),
        ({"action_type": "dance"}, "INVALID"),
    ]
    before = await EpisodeLog.get(pk)
    assert before.status == Status.QUEUED
    _, errors = await seats(services).act(speak(pk, tokens[0], "not yet"))
    assert [e.code.value for e in errors] == ["CONFLICT"]  # queued: not waiting for anyone
    await burst(services)
    waiting = await EpisodeLog.get(pk)
    for change, code in refused:
        _, errors = await seats(services).act({**speak(pk, tokens[0], "hi"), **change})
        assert [e.code.value for e in errors] == [code], change
    _, errors = await seats(services).act(speak("no-such-episode", tokens[0], "hi"))
    assert [e.code.value for e in errors] == ["FORBIDDEN"]  # said alike, existing or not
    after = await EpisodeLog.get(pk)
    assert after.sequence == waiting.sequence and after.turns == waiting.turns
    assert after.status == Status.WAITING


async def test_two_people_racing_for_one_seat_make_one_turn(
    services: Services, fake_llm: FakeLLM
) -> None:
    pk, tokens = await human_episode(services, fake_llm.model_name())
    await burst(services)
    results = await asyncio.gather(
        *(seats(services).act(speak(pk, tokens[0], f"mine {i}")) for i in range(20))
    )
    assert sum(1 for sequence, _ in results if sequence is not None) == 1
    assert all(e.code.value == "CONFLICT" for _, errors in results for e in errors)
    episode = await EpisodeLog.get(pk)
    assert len(episode.turns) == 1 and episode.status == Status.QUEUED


async def test_simultaneous_turns_wait_for_every_person(
    services: Services, fake_llm: FakeLLM
) -> None:
    scenario, agents = await make_world(f"seats-{uuid.uuid4().hex[:8]}", agents=3)
    model = fake_llm.model_name()
    fields = start_fields(
        scenario, agents, model, max_turns=1, turn_order="simultaneous", human_seats=[0, 2]
    )
    started = await start.start_many(services, [fields], prefix=("input",))
    pk = str(started.episodes[0].pk)
    tokens = started.seat_tokens[pk]
    await burst(services)
    episode = await EpisodeLog.get(pk)
    assert episode.waiting is not None and episode.waiting.seats == [0, 2]
    await seats(services).act(speak(pk, tokens[2], "seat two here", seat=2))
    episode = await EpisodeLog.get(pk)
    assert episode.status == Status.WAITING and episode.waiting and episode.waiting.seats == [0]
    _, errors = await seats(services).act(speak(pk, tokens[2], "again", seat=2))
    assert [e.code.value for e in errors] == ["CONFLICT"]
    await seats(services).act(speak(pk, tokens[0], "seat zero here"))
    assert (await EpisodeLog.get(pk)).status == Status.QUEUED
    await burst(services)
    episode = await EpisodeLog.get(pk)
    assert episode.status == Status.COMPLETED, episode.error
    assert sorted(t.agent_index for t in episode.turns) == [0, 1, 2]
    said = {t.agent_index: t.argument for t in episode.turns}
    assert said[0] == "seat zero here" and said[2] == "seat two here"


async def test_an_open_seat_is_claimed_once(services: Services, fake_llm: FakeLLM) -> None:
    pk, tokens = await human_episode(services, fake_llm.model_name(), claimable_seats=True)
    assert tokens == {}
    token, errors = await seats(services).claim(pk, 0)
    assert token and not errors
    again, errors = await seats(services).claim(pk, 0)
    assert again is None and [e.code.value for e in errors] == ["CONFLICT"]
    _, errors = await seats(services).claim(pk, 1)
    assert [e.code.value for e in errors] == ["INVALID"]
    await burst(services)
    sequence, errors = await seats(services).act(speak(pk, token, "claimed and speaking"))
    assert sequence is not None and not errors


async def test_a_step_into_a_persons_turn_pauses_after_it(
    services: Services, fake_llm: FakeLLM
) -> None:
    pk, tokens = await human_episode(services, fake_llm.model_name())
    control = RunControl(services.client, services.store)
    await control.pause(pk)
    _, errors = await control.step(pk)  # turn 0 is the person's
    assert not errors
    await burst(services)
    assert (await EpisodeLog.get(pk)).status == Status.WAITING
    await seats(services).act(speak(pk, tokens[0], "my one turn"))
    await burst(services)
    episode = await EpisodeLog.get(pk)
    assert episode.status == Status.PAUSED  # after that one turn, not at the person's next
    assert [t.agent_index for t in episode.turns] == [0]
