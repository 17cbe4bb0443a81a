"""Agents do not repeat themselves word for word: one re-ask, and a prompt that only grows."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from bench.support.factories import ALICE, BOB, make_setup
from bench.support.fake_llm import FakeLLM, Rule
from parley.engine.episode import simulate
from parley.engine.errors import EpisodeFailed
from parley.engine.llm import ModelRegistry
from tests.engine.conftest import FAST_RETRY


def speak(argument: str) -> str:
    return json.dumps({"action_type": "speak", "argument": argument, "to": []})


async def test_a_repeated_line_is_asked_again(fake_llm: FakeLLM, registry: ModelRegistry) -> None:
    fake_llm.add_rule(Rule.action(ALICE.name, "speak", "Lend me the money.", times=2))
    setup = make_setup(fake_llm.model_name(), max_turns=3)
    transcript = await simulate(setup, registry)
    alice = [r.argument for r in transcript.actions if r.agent_name == ALICE.name]
    assert alice[0] == "Lend me the money." and alice[1] != alice[0]
    assert transcript.stats.repairs == 1
    reask = [r for r in fake_llm.requests if "cannot be used" in r.text]
    assert len(reask) == 1 and "you said exactly that before" in reask[0].text


async def test_a_repeat_after_the_reask_is_kept(fake_llm: FakeLLM, registry: ModelRegistry) -> None:
    """An agent may say the same thing twice: the episode goes on, with one re-ask per repeat."""
    fake_llm.add_rule(Rule.action(BOB.name, "speak", "No.", times=None))
    setup = make_setup(fake_llm.model_name(), max_turns=6)
    transcript = await simulate(setup, registry)
    assert transcript.turns == 6
    bob = [r.argument for r in transcript.actions if r.agent_name == BOB.name]
    assert bob == ["No.", "No.", "No."]
    assert transcript.stats.repairs == 2  # Bob's second and third turns


async def test_a_repeat_then_an_unusable_answer_keeps_the_repeated_line(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    fake_llm.add_rule(
        Rule.action(ALICE.name, "speak", "Lend me the money.", times=2),
        Rule(kind="action", contains=[f"You are {ALICE.name}."], content="Sure! {not json"),
    )
    setup = make_setup(fake_llm.model_name(), max_turns=4)
    transcript = await simulate(setup, registry)
    alice = [r.argument for r in transcript.actions if r.agent_name == ALICE.name]
    assert alice == ["Lend me the money.", "Lend me the money."]
    assert transcript.stats.repairs == 1 and transcript.stats.failures == 0


async def test_an_unusable_answer_then_a_repeat_keeps_the_repeated_line(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    """The re-ask after an unusable answer repeats a line: a repeat is refused only once, in a
    first answer, so it is kept and the episode goes on."""
    fake_llm.add_rule(
        Rule.action(ALICE.name, "speak", "Lend me the money."),
        Rule(kind="action", contains=[f"You are {ALICE.name}."], content="Sure! {not json"),
        Rule.action(ALICE.name, "speak", "Lend me the money."),
    )
    setup = make_setup(fake_llm.model_name(), max_turns=4)
    transcript = await simulate(setup, registry)
    alice = [r.argument for r in transcript.actions if r.agent_name == ALICE.name]
    assert alice == ["Lend me the money.", "Lend me the money."]
    assert transcript.stats.repairs == 1 and transcript.stats.failures == 0
    reask = [r for r in fake_llm.requests if "cannot be used" in r.text]
    assert len(reask) == 1 and "no JSON object" in reask[0].text


async def test_a_model_that_repeats_itself_and_answers_garbage_fails_no_episode_for_a_repeat(
    tmp_path: Path,
) -> None:
    """A fake whose answers are 40% a line the agent always says and 30% garbage, over 30
    episodes: episodes may fail for garbage twice in a row, never for a repeat."""
    with FakeLLM(faults={"garbage": 0.3, "repeat": 0.4}) as fake:
        registry = ModelRegistry(None, tmp_path, retry=FAST_RETRY)
        reasons = []
        kept = 0
        try:
            for _ in range(30):
                try:
                    transcript = await simulate(
                        make_setup(fake.model_name(), max_turns=6), registry
                    )
                except EpisodeFailed as failed:
                    reasons.append(failed.reason)
                    continue
                lines = [(r.agent_name, r.argument) for r in transcript.actions]
                kept += len(lines) - len(set(lines))
        finally:
            await registry.aclose()
    assert kept > 0  # repeats were asked again and kept
    assert not [r for r in reasons if "said exactly that before" in r], reasons
    assert all("no JSON object" in r for r in reasons), reasons


async def test_text_actions_reask_hotter_with_the_same_prompt(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    alice_speaks = [f"sentence that {ALICE.name} says next"]
    fake_llm.add_rule(Rule(kind="text_action", contains=alice_speaks, content="Same.", times=2))
    setup = make_setup("fake-tiny", max_turns=3)
    transcript = await simulate(setup, registry)
    alice = [r.argument for r in transcript.actions if r.agent_name == ALICE.name]
    assert alice[0] == "Same." and alice[1] != "Same."
    requests = fake_llm.requests_of("text_action")
    first_turn_2, again = requests[2], requests[3]  # Alice's second turn and its re-ask
    assert first_turn_2.body["messages"] == again.body["messages"]
    assert again.body["temperature"] > first_turn_2.body["temperature"]


async def test_small_model_prompt_is_append_only(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    """Each of an agent's prompts starts with the whole of its previous one, up to the request
    at the end, so a server's prompt cache reuses it; sampling extras go with every request."""
    setup = make_setup("fake-tiny", max_turns=6)
    await simulate(setup, registry)
    alice = [
        r.body
        for r in fake_llm.requests_of("text_action")
        if r.body["messages"][-1]["content"] == f'{ALICE.name}: "'
    ]
    prompts = [body["messages"][0]["content"] for body in alice]
    assert len(prompts) == 3
    for earlier, later in itertools.pairwise(prompts):
        shared = earlier.split(f"\n\n{ALICE.name} wants to:")[0]
        assert later.startswith(shared)
    assert prompts[-1].count(f'{BOB.name}: "') == 2
    assert all(body["dry_multiplier"] == 0.8 for body in alice)


async def test_a_repeat_whose_reask_fails_at_the_endpoint_keeps_the_repeated_line(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    """The re-ask after a repeat yields nothing usable when every try of it fails at the
    endpoint (HTTP 500 here, a timeout alike): the repeated line was usable and is kept, so the
    episode goes on rather than failing for the repeat."""
    fake_llm.add_rule(
        Rule(kind="action", contains=["you said exactly that before"], status=500, times=None),
        Rule.action(ALICE.name, "speak", "Lend me the money.", times=2),
    )
    setup = make_setup(fake_llm.model_name(), max_turns=4)
    transcript = await simulate(setup, registry)
    alice = [r.argument for r in transcript.actions if r.agent_name == ALICE.name]
    assert alice == ["Lend me the money.", "Lend me the money."]
    assert transcript.turns == 4
