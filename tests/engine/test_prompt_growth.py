"""Prompts that only grow: each agent's conversation and the judge's per-agent requests.

A provider's prefix cache reuses what a request shares with an earlier one from its start, so
an agent's next request must begin with its previous request unchanged (then its reply and what
it saw since), and the judge's requests for the agents of an episode must differ only at the end.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

from bench.support.factories import ALICE, BOB, CAROL, make_setup
from bench.support.fake_llm import FakeLLM, RecordedRequest, Rule
from parley.engine.episode import play
from parley.engine.llm import ModelRegistry
from parley.engine.types import TurnOrder


def _agent(request: RecordedRequest) -> str:
    found = re.search(r"You are ([^.\n]+)\.", request.text)
    assert found, request.text
    return found.group(1)


def by_agent(requests: list[RecordedRequest]) -> dict[str, list[list[dict[str, Any]]]]:
    conversations: dict[str, list[list[dict[str, Any]]]] = {}
    for request in requests:
        conversations.setdefault(_agent(request), []).append(request.body["messages"])
    return conversations


def assert_grows(conversation: list[list[dict[str, Any]]]) -> None:
    for earlier, later in itertools.pairwise(conversation):
        assert later[: len(earlier)] == earlier, "a later prompt rewrote an earlier one"
        assert later[len(earlier)]["role"] == "assistant"  # the reply, then what came since
        assert len(later) == len(earlier) + 2


async def test_each_agent_prompt_extends_its_previous_one(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    private = Rule.action(ALICE.name, "speak", "Just between us.", [CAROL.name])
    gesture = Rule.action(BOB.name, "non-verbal communication", "shrugs")
    fake_llm.add_rule(private, gesture)
    setup = make_setup(fake_llm.model_name(), agents=[ALICE, BOB, CAROL], max_turns=12)
    await play(setup, registry)
    conversations = by_agent(fake_llm.requests_of("action"))
    assert {name: len(c) for name, c in conversations.items()} == {
        ALICE.name: 4,
        BOB.name: 4,
        CAROL.name: 4,
    }
    for conversation in conversations.values():
        assert_grows(conversation)
    bob, carol = conversations[BOB.name][-1], conversations[CAROL.name][-1]
    assert "Just between us." not in json.dumps(bob)
    assert "Just between us." in json.dumps(carol)
    # the agent's own reply is in its conversation, compactly
    assert bob[1] == {
        "role": "assistant",
        "content": '{"action_type":"non-verbal communication","argument":"shrugs"}',
    }


async def test_prompts_grow_when_everyone_acts_at_once(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    setup = make_setup(fake_llm.model_name(), max_turns=4, turn_order=TurnOrder.SIMULTANEOUS)
    await play(setup, registry)
    conversations = by_agent(fake_llm.requests_of("action"))
    assert [len(c) for c in conversations.values()] == [4, 4]
    for conversation in conversations.values():
        assert_grows(conversation)


async def test_prompts_grow_with_the_schema_in_the_prompt(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    await play(make_setup("fake-noschema", max_turns=6), registry)
    conversations = by_agent(fake_llm.requests_of("action"))
    for conversation in conversations.values():
        assert_grows(conversation)
        assert "follows this JSON schema" in conversation[-1][0]["content"]


async def test_a_reask_branches_off_without_changing_later_prompts(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    fake_llm.add_rule(Rule(kind="action", contains=[f"You are {BOB.name}."], content="{oops"))
    await play(make_setup(fake_llm.model_name(), max_turns=4), registry)
    bob = by_agent(fake_llm.requests_of("action"))[BOB.name]
    first, repair, *later = bob
    assert repair[: len(first)] == first and "cannot be used" in repair[-1]["content"]
    assert_grows([first, *later])  # the unusable answer is not kept in the conversation


async def test_judge_requests_differ_only_in_the_agent_named_last(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    await play(make_setup(fake_llm.model_name(), max_turns=4), registry)
    alice, bob = fake_llm.requests_of("judge")
    assert alice.body["response_format"] == bob.body["response_format"]
    (a,), (b,) = alice.body["messages"], bob.body["messages"]
    head_a, tail_a = a["content"].rsplit("\n\n", 1)
    head_b, tail_b = b["content"].rsplit("\n\n", 1)
    assert head_a == head_b
    assert ALICE.name in tail_a and BOB.name in tail_b
    assert len(tail_a) < 60
