"""Turn orders, private messages, termination rules and turn events."""

from __future__ import annotations

import json
import re

from bench.support.factories import ALICE, BOB, CAROL, make_setup
from bench.support.fake_llm import FakeLLM, Rule
from parley.engine.episode import simulate
from parley.engine.llm import ModelRegistry
from parley.engine.types import TurnEvent

NONE = json.dumps({"action_type": "none", "argument": "", "to": []})


async def test_max_turns_round_robin_and_events(fake_llm: FakeLLM, registry: ModelRegistry) -> None:
    events: list[TurnEvent] = []

    async def on_turn(event: TurnEvent) -> None:
        events.append(event)

    setup = make_setup(fake_llm.model_name(), max_turns=5)
    transcript = await simulate(setup, registry, on_turn)
    assert transcript.turns == 5
    assert transcript.termination == ["max_turns"]
    assert transcript.termination_reason == "The conversation is too long; "
    turns = [e.turn for e in events]
    assert [t.agent_name for t in turns] == [ALICE.name, BOB.name] * 2 + [ALICE.name]
    assert [t.turn for t in turns] == list(range(5))
    assert turns[1].action_type == "speak" and "Bob Jones at turn 1" in turns[1].argument
    assert events[1].messages[-1] == (BOB.name, "Environment", f'said: "{turns[1].argument}"')
    assert transcript.actions == turns
    # turn 0 observations, then "Turn #k" observations; the last turn has only observations
    assert len(transcript.messages) == 6
    assert transcript.messages[0][0][0:2] == ("Environment", ALICE.name)
    assert transcript.messages[0][0][2].endswith("\nConversation Starts:\n")
    assert transcript.messages[1][1] == (
        "Environment",
        BOB.name,
        f'Turn #0: {ALICE.name} said: "{turns[0].argument}"\n',
    )
    assert transcript.messages[1][2] == (ALICE.name, "Environment", "did nothing")
    assert len(transcript.messages[-1]) == 2
    assert transcript.stats.requests == 5


async def test_leave_ends_two_agent_episode(fake_llm: FakeLLM, registry: ModelRegistry) -> None:
    fake_llm.add_rule(Rule.leave(BOB.name, turn=3))
    transcript = await simulate(make_setup(fake_llm.model_name(), max_turns=10), registry)
    assert transcript.turns == 4
    assert transcript.termination == ["too_few_agents"]
    assert transcript.actions[-1].action_type == "leave"
    assert transcript.messages[4][0][2] == f"Turn #3: {BOB.name} left the conversation\n"


async def test_three_agents_continue_after_one_leaves(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    fake_llm.add_rule(Rule.leave(BOB.name, turn=1))
    setup = make_setup(fake_llm.model_name(), agents=[ALICE, BOB, CAROL], max_turns=6)
    transcript = await simulate(setup, registry)
    actors = [r.agent_name for r in transcript.actions]
    assert actors == [ALICE.name, BOB.name, CAROL.name, ALICE.name, CAROL.name, ALICE.name]
    assert transcript.termination == ["max_turns"]
    first = transcript.messages[0][0][2]
    assert "Participants: Alice Smith, Bob Jones, and Carol White" in first
    assert "Carol White's goal: Unknown" in first


async def test_idle_turns_stale_the_episode(fake_llm: FakeLLM, registry: ModelRegistry) -> None:
    fake_llm.add_rule(Rule(kind="action", content=NONE, times=None))
    transcript = await simulate(make_setup(fake_llm.model_name(), max_turns=20), registry)
    assert transcript.turns == 3
    assert transcript.termination == ["stale"]
    assert transcript.termination_reason == "The conversation stales for too long; "


async def test_private_message_hidden_from_others(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    fake_llm.add_rule(Rule.action(ALICE.name, "speak", "Psst, the money is gone.", [CAROL.name]))
    setup = make_setup(fake_llm.model_name(), agents=[ALICE, BOB, CAROL], max_turns=3)
    transcript = await simulate(setup, registry)
    prompts = {name: r.text for r in fake_llm.requests_of("action") for name in _seats(r.text)}
    assert "Psst, the money is gone." not in prompts[BOB.name]
    assert "Psst, the money is gone." in prompts[CAROL.name]
    obs = {receiver: text for _, receiver, text in transcript.messages[1][:3]}
    assert obs[BOB.name] == "Turn #0: \n"
    expected = (
        f"Turn #0: {ALICE.name} [private to ['{CAROL.name}']] said: \"Psst, the money is gone.\"\n"
    )
    assert obs[CAROL.name] == expected
    assert obs[ALICE.name] == expected
    assert transcript.actions[0].to == [CAROL.name]


async def test_simultaneous_all_agents_act_each_turn(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    setup = make_setup(fake_llm.model_name(), turn_order="simultaneous", max_turns=2)
    transcript = await simulate(setup, registry)
    assert [(r.turn, r.agent_name) for r in transcript.actions] == [
        (0, ALICE.name),
        (0, BOB.name),
        (1, ALICE.name),
        (1, BOB.name),
    ]
    assert transcript.messages[1][0][2].count("said:") == 2


async def test_random_order_is_seeded(fake_llm: FakeLLM, registry: ModelRegistry) -> None:
    people = [ALICE, BOB, CAROL]
    runs = []
    for _ in range(2):
        setup = make_setup(
            fake_llm.model_name(), agents=people, turn_order="random", seed=7, max_turns=8
        )
        transcript = await simulate(setup, registry)
        runs.append([r.agent_index for r in transcript.actions])
    assert runs[0] == runs[1]
    assert len(set(runs[0])) > 1


def _seats(prompt: str) -> list[str]:
    """The agent whose conversation this is (its context says "You are <name>.")."""
    found = re.search(r"You are ([^.\n]+)\.", prompt)
    return [found.group(1)] if found else []
