"""Human seats in-process against a real Redis: a person plays a seat between worker bursts.

A waiting episode holds no worker, so each burst returns as soon as the episode waits; the
person's action queues it again and the next burst goes on from the stored turns.
"""

import asyncio
import time
import uuid
from typing import Any

from engine.types import ActionType
from lifecycle import start
from lifecycle.seats import Seats
from lifecycle.services import Services
from lifecycle.worker import Worker, WorkerConfig
from storage import keys
from storage.models import EpisodeLog, EpisodeStatus
from tests.support.fake_llm import FakeLLM
from tests.support.simulation import make_world

Status = EpisodeStatus


async def burst(services: Services) -> None:
    worker = Worker(services, WorkerConfig(lease_seconds=1.0, poll_seconds=0.05, consumer="w"))
    await asyncio.wait_for(worker.run(burst=True), 60)


async def human_episode(services: Services, model: str, **extra: Any) -> tuple[str, dict[int, str]]:
    scenario, agents = await make_world(f"seats-{uuid.uuid4().hex[:8]}")
    fields = {
        "scenario_id": scenario,
        "agent_ids": agents,
        "agent_models": [model],
        "judge_model": model,
        "max_turns": 4,
        "human_seats": [0],
        **extra,
    }
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
