"""What an agent's prompt reveals about its partner, by relationship (SOTOPIA.md §2.3)."""

from __future__ import annotations

import pytest

from bench.support.factories import ALICE, BOB, make_setup
from bench.support.fake_llm import FakeLLM
from parley.engine.episode import simulate
from parley.engine.llm import ModelRegistry
from parley.engine.prompts import agent_background, agent_context
from parley.engine.render import agent_viewer, render_tagged
from parley.engine.types import ACTION_TYPES, RelationshipSpec

# What Alice's first prompt must show of Bob, per relationship type.
EXPECTED = {
    0: set(),
    1: {"name"},
    2: {"name", "public"},
    3: {"name", "public", "personality"},
    4: {"name", "public", "personality"},
    5: {"name", "public", "personality"},
}
FRAGMENTS = {
    "public": ["41-year-old male teacher", "(He/him)", BOB.public_info],
    "personality": [BOB.personality_and_values],
}


@pytest.mark.parametrize("relationship", range(6))
async def test_partner_profile_follows_relationship(
    relationship: int, fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    setup = make_setup(fake_llm.model_name(), relationship=relationship, max_turns=1)
    await simulate(setup, registry)
    (request,) = fake_llm.requests_of("action")
    prompt = request.text
    assert "You are Alice Smith." in prompt
    about_bob = [line for line in prompt.splitlines() if line.startswith("Bob Jones: ")]
    for part, fragments in FRAGMENTS.items():
        for fragment in fragments:
            assert (fragment in prompt) == (part in EXPECTED[relationship]), (part, fragment)
    if relationship == 0:
        assert about_bob == []
    elif relationship == 1:
        assert about_bob == ["Bob Jones: known to you by name only."]
    else:
        assert len(about_bob) == 1
    # never the partner's secret or goal; always the own ones
    assert BOB.secret not in prompt
    assert "Keep your savings intact" not in prompt
    assert ALICE.secret in prompt
    assert "Borrow 500 dollars" in prompt


def test_prompt_follows_pair_relationship_and_own_hints() -> None:
    pair = RelationshipSpec(agent_1_id=BOB.pk, agent_2_id=ALICE.pk, relationship=2)
    setup = make_setup("m", relationship=5, relationships=[pair])
    alice, bob = (agent_context(setup, i, list(ACTION_TYPES)) for i in (0, 1))
    assert BOB.public_info in alice and BOB.personality_and_values not in alice
    assert "Borrow 500 dollars from the other person You need it by Friday." in alice
    assert "<extra_info>" not in alice and "Offer help of another kind" not in alice
    assert "Keep your savings intact Offer help of another kind." in bob
    assert "You need it by Friday" not in bob


def test_stranger_background_reads_unknown_when_own_bio_present() -> None:
    setup = make_setup("m", relationship=0)
    text = agent_background(setup, 0)
    assert "Bob Jones's background: Unknown" in text
    assert "Alice Smith's background: Alice Smith is a 30-year-old female chef." in text


def test_pair_relationship_overrides_scenario() -> None:
    pair = RelationshipSpec(agent_1_id=BOB.pk, agent_2_id=ALICE.pk, relationship=2)
    setup = make_setup("m", relationship=5, relationships=[pair])
    text = agent_background(setup, 0)
    assert BOB.public_info in text
    assert BOB.personality_and_values not in text


def test_hint_tags_are_rendered_for_their_owner_only() -> None:
    setup = make_setup("m")
    alice_view, bob_view = agent_background(setup, 0), agent_background(setup, 1)
    assert "Borrow 500 dollars from the other person You need it by Friday." in alice_view
    assert "<extra_info>" not in alice_view
    assert "Keep your savings intact Offer help of another kind." in bob_view
    assert "You need it by Friday" not in bob_view
    assert "Offer help of another kind" not in alice_view


def test_a_goal_keeps_its_own_hint_tags_for_a_page_to_label() -> None:
    goal = (
        "Sell the van <extra_info>The clutch is new.</extra_info> "
        '<p viewer="agent_2">Only for the buyer.</p><strategy_hint>Start high.</strategy_hint>'
    )
    kept = (
        "Sell the van <extra_info>The clutch is new.</extra_info> "
        "<strategy_hint>Start high.</strategy_hint>"
    )
    assert render_tagged(goal, agent_viewer(0), keep_hints=True) == kept
    assert render_tagged(goal, agent_viewer(0)) == "Sell the van The clutch is new. Start high."
    broken = "Sell it <extra_info>Cash & more</extra_info> <b>now"  # not XML: tags are cut out
    expected = "Sell it <extra_info>Cash & more</extra_info> now"
    assert render_tagged(broken, agent_viewer(0), keep_hints=True) == expected
    assert render_tagged(broken, agent_viewer(0)) == "Sell it Cash & more now"
