"""The example social games (examples/games/*.jsonl) for tests: their setups, scripted moves
on the fake LLM, and what each agent may see of each turn by the game's own rules."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.support.fake_llm import FakeLLM, Rule
from parley.engine.prompts import action_json
from parley.engine.render import action_line
from parley.engine.types import AgentAction, AgentSpec, EpisodeSetup, ScenarioSpec, Turn

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "games"
LOCATION = "submarine"
"""A word of Spyfall's secret location, which the spy must never be told."""


def game_lines(game: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (EXAMPLES / f"{game}.jsonl").read_text().splitlines()]


def game_setup(game: str, model: str, **overrides: Any) -> EpisodeSetup:
    lines = game_lines(game)
    agents = [
        AgentSpec.model_validate({**line, "pk": line["agent_id"]})
        for line in lines
        if "agent_id" in line
    ]
    (env,) = [line for line in lines if "env_id" in line]
    scenario = ScenarioSpec(
        pk=env["env_id"],
        scenario=env["scenario"],
        agent_goals=env["agent_goals"],
        game_metadata=env["parley"]["game_metadata"],
    )
    values: dict[str, Any] = {
        "scenario": scenario,
        "agents": agents,
        "agent_models": [model] * len(agents),
        "judge_model": model,
        "max_turns": 80,
    }
    return EpisodeSetup.model_validate({**values, **overrides})


@dataclass
class Script:
    """Moves scripted on the fake LLM by agent, phase and game round; the rest are the fake's
    default speech. Remembers whom each private line was for."""

    fake: FakeLLM
    private_to: dict[str, str] = field(default_factory=dict)

    def move(
        self,
        agent: str,
        phase: str,
        game_round: int,
        action_type: str,
        argument: str,
        to: list[str] | None = None,
    ) -> None:
        body = {"action_type": action_type, "argument": argument, "to": to or []}
        marker = f"Game round {game_round}, phase {phase!r}."
        self.fake.add_rule(
            Rule(kind="action", contains=[f"You are {agent}.", marker], content=json.dumps(body))
        )

    def vote(self, phase: str, game_round: int, votes: dict[str, str]) -> None:
        for voter, target in votes.items():
            self.move(voter, phase, game_round, "action", target)

    def whisper(self, game_round: int, lines: dict[str, str]) -> None:
        """Each agent in `lines` tells the named one a line of its own, in private."""
        for speaker, listener in lines.items():
            text = f"{speaker} to {listener} alone, round {game_round}: trust me."
            self.private_to[text] = listener
            self.move(speaker, "whispers", game_round, "speak", text, [listener])


def replay_rules(turns: Sequence[Turn]) -> list[Rule]:
    """Every turn of `turns` answered as it was, matched by agent and turn number."""
    return [
        Rule(
            kind="action",
            contains=[f"You are {t.agent_name}.", f"Turn #{t.turn}. "],
            content=action_json(t),
        )
        for t in turns
    ]


def team_of(rules: dict[str, Any], seat: int) -> str | None:
    return next((n for n, t in rules["teams"].items() if seat in t["seats"]), None)


def may_see(setup: EpisodeSetup, script: Script, turn: Turn, viewer: int) -> bool:
    """Whether `viewer` may see `turn`, by the game's rules alone (not by the turn's `to`)."""
    rules = setup.scenario.game_metadata or {}
    (phase,) = [p for p in rules["phases"] if p["name"] == turn.phase]
    if viewer == turn.agent_index:
        return True
    match phase.get("visibility", "everyone"):
        case "everyone":
            return True
        case "team":
            return team_of(rules, viewer) == team_of(rules, turn.agent_index)
        case _:
            return script.private_to[turn.argument] == setup.agents[viewer].name


def seen_line(turn: Turn) -> str:
    """How `turn` reads in another agent's prompt."""
    return action_line(turn.agent_name, AgentAction.model_validate(turn.model_dump()))
