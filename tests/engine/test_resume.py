"""Replaying stored turns: the episode goes on as if it had never stopped, asking no model twice."""

from __future__ import annotations

import pytest

from bench.support.factories import ALICE, BOB, CAROL, make_setup
from bench.support.fake_llm import FakeLLM
from parley.engine.episode import HistoryMismatch, simulate
from parley.engine.llm import ModelRegistry
from parley.engine.types import TurnEvent, TurnOrder


@pytest.mark.parametrize("order", [TurnOrder.ROUND_ROBIN, TurnOrder.RANDOM, TurnOrder.SIMULTANEOUS])
@pytest.mark.parametrize("model", ["fake", "fake-tiny"])
async def test_a_replayed_history_gives_the_same_episode(
    fake_llm: FakeLLM, registry: ModelRegistry, order: TurnOrder, model: str
) -> None:
    name = fake_llm.model_name() if model == "fake" else model
    setup = make_setup(name, agents=[ALICE, BOB, CAROL], max_turns=6, turn_order=order, seed=7)
    whole = await simulate(setup, registry)
    asked = len(fake_llm.requests)
    kept = [t for t in whole.actions if t.turn < 3]
    fake_llm.reset()
    new: list[TurnEvent] = []

    async def on_turn(event: TurnEvent) -> None:
        new.append(event)

    resumed = await simulate(setup, registry, on_turn, history=kept)
    assert resumed.messages == whole.messages
    assert resumed.actions == whole.actions
    assert [e.turn for e in new] == [t for t in whole.actions if t.turn >= 3]
    assert len(fake_llm.requests) == asked - len(kept)


async def test_a_partly_played_turn_asks_only_the_seats_that_had_not_acted(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    setup = make_setup(fake_llm.model_name(), max_turns=2, turn_order=TurnOrder.SIMULTANEOUS)
    whole = await simulate(setup, registry)
    fake_llm.reset()
    kept = [whole.actions[0]]  # seat 0 of turn 0 stored, seat 1 of turn 0 lost
    resumed = await simulate(setup, registry, history=kept)
    assert resumed.messages == whole.messages
    assert len(fake_llm.requests) == len(whole.actions) - 1


async def test_turns_this_setup_cannot_have_played_are_refused(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    """Round robin gives turn 0 to seat 0: a stored turn 0 of seat 1 belongs elsewhere."""
    setup = make_setup(fake_llm.model_name(), max_turns=2)
    played = await simulate(setup, registry)
    wrong = [played.actions[0].model_copy(update={"agent_index": 1})]
    with pytest.raises(HistoryMismatch, match=r"turn 0 was played by seats \[1\]"):
        await simulate(setup, registry, history=wrong)
