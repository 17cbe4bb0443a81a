"""What a game's players are told: the rules and their own team first, then each turn the
phase, who is still in and what to do; and the JSON schema of an action in the phase."""

from __future__ import annotations

from typing import Any

from parley.engine.games import GameRules, GameState, Phase, Visibility, result_text
from parley.engine.prompts import action_schema
from parley.engine.render import join_names

_SEEN_BY = {
    Visibility.EVERYONE: "everyone sees it",
    Visibility.TEAM: "only your team sees it",
    Visibility.AGENT: 'only the one agent you name in "to" sees it',
}


def _actors(phase: Phase) -> str:
    kind, name = phase.actor_group()
    return {"team": f"the {name}", "role": f"the {name}"}.get(kind, "everyone still in the game")


def rules_text(rules: GameRules, names: list[str], seat: int) -> str:
    """The rules every player knows, and what this player alone knows: its team (and its
    teammates, where a team's members know each other)."""
    phases = "; ".join(
        f"{p.name} ({_actors(p)} act{', vote' if p.vote else ''}; {_SEEN_BY[p.visibility]})"
        for p in rules.phases
    )
    endings = "; ".join(result_text(e) for e in rules.endings)
    lines = [
        f"This is a game{f' of {rules.name}' if rules.name else ''}. "
        f"Teams: {', '.join(rules.teams)}. Each round has the phases: {phases}. "
        f"The game ends when: {endings}.",
    ]
    team = rules.team_of(seat)
    if team is not None:
        mates = [names[s] for s in rules.teams[team].seats if s != seat and s < len(names)]
        known = rules.teams[team].members_know and mates
        lines.append(
            f"You are on the team {team}"
            + (f", with {join_names(mates)}." if known else ".")
            + " Keep it to yourself unless it helps your team."
        )
    roles = [name for name, seats in rules.roles.items() if seat in seats]
    if roles:
        lines.append(f"Your role: {', '.join(roles)}.")
    return "\n".join(lines)


def phase_text(state: GameState, seat: int) -> str:
    """The line closing a player's turn prompt: the round and phase, and what it may do."""
    phase = state.phase
    names = state.names
    alive = join_names([names[s] for s in state.alive()])
    parts = [
        f"Game round {state.round}, phase {phase.name!r}. Still in the game: {alive}.",
        f"Allowed action_type: {', '.join(phase.action_types)}; {_SEEN_BY[phase.visibility]}.",
    ]
    if state.out:
        parts.append(f"Out: {join_names([names[s] for s in state.out])}.")
    if phase.vote is not None:
        targets = [names[s] for s in state.vote_targets(seat)]
        parts.append(f'Vote: "action" with the argument one name of {join_names(targets)}.')
    if phase.instruction:
        parts.append(phase.instruction)
    return " ".join(parts)


def notices_text(notices: list[str]) -> list[str]:
    """The game's notices as lines of what an agent saw."""
    return [f"Game: {notice}" for notice in notices]


def game_action_schema(state: GameState, seat: int) -> dict[str, Any]:
    """The action schema narrowed to the phase: its action types, a vote's names, and one
    recipient where one agent sees the action."""
    phase = state.phase
    schema = action_schema(list(phase.action_types))
    properties = schema["properties"]
    if phase.vote is not None:
        properties["argument"] = {"enum": [state.names[s] for s in state.vote_targets(seat)]}
    if phase.visibility == Visibility.AGENT:
        others = [state.names[s] for s in state.alive() if s != seat]
        properties["to"] = {
            "type": "array",
            "items": {"enum": others},
            "minItems": 1,
            "maxItems": 1,
        }
    return schema
