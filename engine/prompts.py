"""The prompts we send: agent actions (JSON or one line of text) and the judge.

Each agent's JSON-action prompt is one conversation that only grows: its context and first
turn, then for every turn its reply and what it saw since. The judge's requests differ only at
their end (the agent they evaluate). So a provider's prefix cache reuses all but the new part.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from parley.engine.render import (
    ENVIRONMENT,
    action_line,
    action_text,
    agent_viewer,
    background_text,
    join_names,
    own_bio,
    partner_bio,
    partner_profile,
    profile_text,
    render_tagged,
)
from parley.engine.types import ActionType, AgentAction, DimensionSpec, EpisodeSetup, Transcript

ACTION_SCHEMA_NAME = "agent_action"
DIMENSION_SCHEMA_NAME = "dimension_score"
EVALUATION_SCHEMA_NAME = "agent_evaluation"
EPISODE_EVALUATION_SCHEMA_NAME = "episode_evaluation"
SCORE_SCHEMA_NAME = "score"

_ACTION_HELP = {
    "none": '"none"',
    "speak": '"speak" (argument: your words)',
    "non-verbal communication": '"non-verbal communication" (argument: a gesture)',
    "action": '"action" (argument: a physical action)',
    "leave": '"leave" (goal reached, uncomfortable or bored)',
}


def agent_background(setup: EpisodeSetup, viewer: int) -> str:
    """Sotopia's background as one agent sees it: partners gated by relationship."""
    names = [a.name for a in setup.agents]
    backgrounds: list[str] = []
    goals: list[str] = []
    for j, agent in enumerate(setup.agents):
        if j == viewer:
            backgrounds.append(own_bio(agent))
            goals.append(render_tagged(setup.goal_of(j), agent_viewer(viewer)))
        else:
            backgrounds.append(partner_bio(agent, setup.relationship_between(viewer, j)))
            goals.append("Unknown")
    scenario = render_tagged(setup.scenario.scenario, agent_viewer(viewer))
    return background_text(scenario, names, backgrounds, goals)


def environment_context(setup: EpisodeSetup) -> str:
    """The judge's view, compact: the scenario and everyone's profile, secret and goal."""
    lines = [f"Scenario: {render_tagged(setup.scenario.scenario, ENVIRONMENT)}"]
    for j, agent in enumerate(setup.agents):
        goal = render_tagged(setup.goal_of(j), ENVIRONMENT)
        lines.append(f"{agent.name}: {profile_text(agent)} Goal: {goal}")
    return "\n".join(lines)


def action_schema(action_types: list[ActionType]) -> dict[str, Any]:
    """The same for every agent (recipients are checked when parsing), so a prompt cache that
    keeps the schema as a prefix shares it across agents."""
    return {
        "type": "object",
        "properties": {
            "action_type": {"enum": list(action_types)},
            "argument": {"type": "string"},
            "to": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["action_type", "argument", "to"],
        "additionalProperties": False,
    }


def agent_context(setup: EpisodeSetup, viewer: int, action_types: list[ActionType]) -> str:
    """What an agent is told before its first turn.

    The rules, the scenario and the participants come first: they are the same for every
    agent of the episode, so a prompt cache shares them. Then what only this agent knows.
    """
    me = setup.agents[viewer]
    options = ", ".join(_ACTION_HELP[t] for t in action_types)
    lines = [
        "Play your character; each turn, answer with a JSON action. "
        f"action_type: {options}. "
        '"to": private recipients ([] for everyone). '
        "Pursue your goal in character, be natural, never repeat what was said. "
        "Only you know your goal and secret.",
        f"Scenario: {render_tagged(setup.scenario.scenario, agent_viewer(viewer))}",
        f"Participants: {join_names([a.name for a in setup.agents])}",
        f"You are {me.name}. {profile_text(me)}",
    ]
    for j, agent in enumerate(setup.agents):
        seen = partner_profile(agent, setup.relationship_between(viewer, j)) if j != viewer else ""
        if seen:
            lines.append(f"{agent.name}: {seen}")
    lines.append(f"Your goal: {render_tagged(setup.goal_of(viewer), agent_viewer(viewer))}")
    return "\n".join(lines)


def turn_message(seen: list[str], turn: int) -> str:
    """What an agent saw since its last turn, then the turn it is asked for."""
    return "".join(f"{line}\n" for line in seen) + f"Turn #{turn}."


def action_json(action: AgentAction) -> str:
    """An action as the agent's reply in its own conversation: compact JSON, empty fields
    left out."""
    data: dict[str, Any] = {"action_type": str(action.action_type)}
    if action.argument:
        data["argument"] = action.argument
    if action.to:
        data["to"] = action.to
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def text_action_messages(
    name: str, context: str, lines: list[str], goal: str
) -> list[dict[str, str]]:
    """Short prompt for small models: one line of speech, continued from a prefill.

    Append-only from one turn to the next (context, then every line so far, then the request),
    so the server's prompt cache reuses all but the last lines. The goal is restated last,
    where a small model still attends to it.
    """
    conversation = "".join(f"{line}\n" for line in lines)
    text = (
        f"{context}\n\nConversation so far:\n{conversation}\n"
        f"{name} wants to: {goal}\n"
        f"Write the one short sentence that {name} says next, in reply to the last line."
    )
    return [
        {"role": "user", "content": text},
        {"role": "assistant", "content": text_prefill(name)},
    ]


def text_prefill(name: str) -> str:
    return f'{name}: "'


def short_context(setup: EpisodeSetup, viewer: int) -> str:
    """A compact version of an agent's background for small models."""
    me = setup.agents[viewer]
    parts = [f"Scenario: {render_tagged(setup.scenario.scenario, agent_viewer(viewer))}"]
    parts.append(f"You are {me.name}. {own_bio(me)}")
    for j, agent in enumerate(setup.agents):
        if j == viewer:
            continue
        seen = partner_bio(agent, setup.relationship_between(viewer, j))
        parts.append(f"About {agent.name}: {seen}" if seen else "The other person is a stranger.")
    goal = render_tagged(setup.goal_of(viewer), agent_viewer(viewer))
    parts.append(f"Your goal (only you know it): {goal}")
    return "\n".join(parts)


def score_schema(dim: DimensionSpec, reasoning_chars: int = 200) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "reasoning": {"type": "string", "maxLength": reasoning_chars},
            "score": {"type": "integer", "minimum": dim.range_low, "maximum": dim.range_high},
        },
        "required": ["reasoning", "score"],
        "additionalProperties": False,
    }


def integer_schema(dim: DimensionSpec) -> dict[str, Any]:
    return {"type": "integer", "minimum": dim.range_low, "maximum": dim.range_high}


def evaluation_schema(dims: list[DimensionSpec]) -> dict[str, Any]:
    """Every dimension's reasoning and score (the answer's length is bounded by max_tokens).

    A score range that several dimensions share is defined once under $defs and referred to,
    which is shorter than repeating it; a range used once stays inline.
    """
    ranges = Counter((d.range_low, d.range_high) for d in dims)
    shared = {r: f"s{k}" for k, r in enumerate(r for r, n in ranges.items() if n > 1)}
    properties: dict[str, Any] = {}
    for d in dims:
        name = shared.get((d.range_low, d.range_high))
        properties[d.name] = {"$ref": f"#/$defs/{name}"} if name else _reasoned_score(d)
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": [d.name for d in dims],
        "additionalProperties": False,
    }
    if shared:
        by_range = {(d.range_low, d.range_high): d for d in dims}
        schema["$defs"] = {name: _reasoned_score(by_range[r]) for r, name in shared.items()}
    return schema


def _reasoned_score(dim: DimensionSpec) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"reasoning": {"type": "string"}, "score": integer_schema(dim)},
        "required": ["reasoning", "score"],
        "additionalProperties": False,
    }


def episode_evaluation_schema(
    names: list[str], dims: list[DimensionSpec], reasoning_chars: int = 200
) -> dict[str, Any]:
    """Every agent's short reasoning and integer scores, keyed by agent name."""
    scores: dict[str, Any] = {"reasoning": {"type": "string", "maxLength": reasoning_chars}}
    scores.update({d.name: integer_schema(d) for d in dims})
    agent = {
        "type": "object",
        "properties": scores,
        "required": list(scores),
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {name: agent for name in names},
        "required": names,
        "additionalProperties": False,
    }


def judge_history(setup: EpisodeSetup, transcript: Transcript) -> str:
    """The whole episode as the environment saw it (private actions marked); a turn is
    numbered only when several agents acted in it."""
    done = [r for r in transcript.actions if r.action_type != ActionType.NONE]
    crowded = {t for t in {r.turn for r in done} if sum(r.turn == t for r in done) > 1}
    lines = [environment_context(setup), ""]
    current = -1
    for record in done:
        if record.turn in crowded and record.turn != current:
            lines.append(f"Turn #{record.turn}")
        current = record.turn
        lines.append(action_line(record.agent_name, record))
    if not done:
        lines.append("(nobody did anything)")
    return "\n".join(lines)


def _dimension_lines(dims: list[DimensionSpec]) -> str:
    return "\n".join(f"- {d.name} ({d.range_low} to {d.range_high}): {d.description}" for d in dims)


def agent_judge_messages(
    history: str, name: str, dims: list[DimensionSpec], termination: str
) -> list[dict[str, str]]:
    """One agent's evaluation; only the last sentence names the agent, so the requests for the
    agents of an episode share everything before it."""
    text = (
        "Score one participant of this interaction from their point of view and goal: per "
        "dimension, a short reasoning and an integer in its range.\n"
        f"{_dimension_lines(dims)}\n\n"
        f"{history}\n\nThe episode ended: {termination.strip() or 'no reason given'}\n\n"
        f"Evaluate how well {name} did."
    )
    return [{"role": "user", "content": text}]


def short_judge_context(setup: EpisodeSetup, transcript: Transcript, agent: int) -> str:
    """A compact episode summary for small judges: scenario, goal, secret, recent lines."""

    me = setup.agents[agent]
    parts = [
        f"Scenario: {render_tagged(setup.scenario.scenario, ENVIRONMENT)}",
        f"{me.name}'s goal: {render_tagged(setup.goal_of(agent), ENVIRONMENT)}",
    ]
    if me.secret:
        parts.append(f"{me.name}'s secret: {me.secret}")
    parts.append(_short_conversation(transcript, last=12))
    return "\n".join(parts)


def short_episode_context(setup: EpisodeSetup, transcript: Transcript) -> str:
    """The whole episode in brief for a small judge: scenario, everyone's goal and secret, and
    every line, shortened."""
    parts = [f"Scenario: {render_tagged(setup.scenario.scenario, ENVIRONMENT)}"]
    for j, agent in enumerate(setup.agents):
        parts.append(f"{agent.name}'s goal: {render_tagged(setup.goal_of(j), ENVIRONMENT)}")
        if agent.secret:
            parts.append(f"{agent.name}'s secret: {agent.secret}")
    parts.append(_short_conversation(transcript))
    return "\n".join(parts)


def _short_conversation(transcript: Transcript, last: int | None = None) -> str:
    """The episode's lines (the `last` ones, or all), each cut to 200 characters."""
    lines = [
        f"{r.agent_name} {action_text(r)}"[:200]
        for r in transcript.actions
        if r.action_type != ActionType.NONE
    ]
    kept = lines if last is None else lines[-last:]
    return "Conversation:\n" + ("\n".join(kept) if kept else "(nothing happened)")


def episode_judge_messages(
    context: str, names: list[str], dims: list[DimensionSpec], termination: str
) -> list[dict[str, str]]:
    text = (
        f"{context}\n\nThe episode ended: {termination.strip() or 'no reason given'}\n\n"
        f"Evaluate how well each of {', '.join(names)} did, each from their own point of view "
        f"and goal: a short reasoning, then an integer score for each dimension, within its "
        f"range.\n{_dimension_lines(dims)}\n"
        "Reply with one JSON object keyed by participant name."
    )
    return [{"role": "user", "content": text}]


def dimension_judge_messages(context: str, name: str, dim: DimensionSpec) -> list[dict[str, str]]:
    text = (
        f"{context}\n\nRate {name} on {dim.name}: {dim.description}\n"
        f"Give an integer from {dim.range_low} to {dim.range_high} and a short reason."
    )
    return [{"role": "user", "content": text}]


def repair_message(error: str, wants_json: bool) -> dict[str, str]:
    tail = "Reply again with only a JSON object." if wants_json else "Reply again."
    return {"role": "user", "content": f"Your answer cannot be used: {error}. {tail}"}
