"""Profiles and setups for engine tests."""

from __future__ import annotations

from typing import Any

from parley.engine.types import AgentSpec, EpisodeSetup, ScenarioSpec

ALICE = AgentSpec(
    pk="a1",
    first_name="Alice",
    last_name="Smith",
    age=30,
    occupation="Chef",
    gender="Woman",
    gender_pronoun="She/her",
    public_info="Runs a small bistro downtown.",
    personality_and_values="Warm, stubborn, values loyalty.",
    secret="Her bistro is about to go bankrupt.",
)
BOB = AgentSpec(
    pk="b2",
    first_name="Bob",
    last_name="Jones",
    age=41,
    occupation="Teacher",
    gender="Man",
    gender_pronoun="He/him",
    public_info="Coaches the school chess club.",
    personality_and_values="Patient, frugal, values honesty.",
    secret="He once cheated in a chess tournament.",
)
CAROL = AgentSpec(
    pk="c3",
    first_name="Carol",
    last_name="White",
    age=25,
    occupation="Nurse",
    gender="Nonbinary",
    gender_pronoun="They/them",
    public_info="Volunteers at the shelter.",
    personality_and_values="Curious, direct.",
    secret="Carol is applying for a job abroad.",
)

GOALS = [
    "Borrow 500 dollars from the other person <extra_info>You need it by Friday.</extra_info>",
    "Keep your savings intact <strategy_hint>Offer help of another kind.</strategy_hint>",
    "Find out what the others are planning",
]


def make_setup(
    model: str,
    *,
    agents: list[AgentSpec] | None = None,
    relationship: int = 3,
    judge: str | None = None,
    **overrides: Any,
) -> EpisodeSetup:
    people = agents or [ALICE, BOB]
    scenario = ScenarioSpec(
        pk="env1",
        codename="borrow_money",
        scenario="Two neighbours meet in the hallway of their building on a Sunday morning.",
        agent_goals=GOALS[: len(people)],
        relationship=relationship,
    )
    values: dict[str, Any] = {
        "scenario": scenario,
        "agents": people,
        "agent_models": [model] * len(people),
        "judge_model": judge or model,
        "max_turns": 4,
    }
    values.update(overrides)
    return EpisodeSetup.model_validate(values)
