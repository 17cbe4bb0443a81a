"""The prompts we send: agent actions (JSON or one line of text) and the judge."""

from __future__ import annotations

from typing import Any

from engine.render import (
    ENVIRONMENT,
    action_text,
    agent_viewer,
    background_text,
    own_bio,
    partner_bio,
    render_tagged,
)
from engine.types import ActionType, DimensionSpec, EpisodeSetup, Transcript

ACTION_SCHEMA_NAME = "agent_action"
DIMENSION_SCHEMA_NAME = "dimension_score"
EVALUATION_SCHEMA_NAME = "agent_evaluation"
EPISODE_EVALUATION_SCHEMA_NAME = "episode_evaluation"
SCORE_SCHEMA_NAME = "score"

_ACTION_HELP = {
    "none": '"none": do nothing this turn',
    "speak": '"speak": say something; the argument is the words you say',
    "non-verbal communication": (
        '"non-verbal communication": a gesture or facial expression; the argument describes it'
    ),
    "action": '"action": a physical action; the argument describes it',
    "leave": (
        '"leave": leave the conversation (when your goal is reached, the conversation makes you '
        "uncomfortable, you lose interest, or for any other reason)"
    ),
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


def environment_background(setup: EpisodeSetup) -> str:
    """The judge's view: everything, secrets and goals included."""
    names = [a.name for a in setup.agents]
    backgrounds = [own_bio(a) for a in setup.agents]
    goals = [render_tagged(setup.goal_of(j), ENVIRONMENT) for j in range(len(setup.agents))]
    scenario = render_tagged(setup.scenario.scenario, ENVIRONMENT)
    return background_text(scenario, names, backgrounds, goals)


def action_schema(action_types: list[ActionType], recipients: list[str]) -> dict[str, Any]:
    to_items: dict[str, Any] = {"type": "string"}
    if recipients:
        to_items["enum"] = recipients
    return {
        "type": "object",
        "properties": {
            "action_type": {"type": "string", "enum": list(action_types)},
            "argument": {"type": "string"},
            "to": {"type": "array", "items": to_items},
        },
        "required": ["action_type", "argument", "to"],
        "additionalProperties": False,
    }


def action_messages(
    name: str,
    history: str,
    turn: int,
    action_types: list[ActionType],
    recipients: list[str],
) -> list[dict[str, str]]:
    """Full action prompt: the agent's whole observation history, answer as JSON."""
    options = "\n".join(f"- {_ACTION_HELP[t]}" for t in action_types)
    text = (
        f"You are {name}. Act and speak as {name} would, pursuing {name}'s social goal.\n"
        "Your goal and your secret are known only to you; the context below shows what you "
        "know about the others. Stay consistent with your character, be natural, and do not "
        "repeat what others have already said.\n\n"
        f"{history.strip()}\n\n"
        f"It is turn #{turn}. Choose one action type:\n{options}\n"
        f'To make an action private, list its recipients in "to" (any of: '
        f'{", ".join(recipients)}); leave "to" empty to address everyone.\n'
        'Reply with one JSON object with the keys "action_type", "argument" and "to".'
    )
    return [{"role": "user", "content": text}]


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
    return {
        "type": "object",
        "properties": {d.name: score_schema(d, 1000) for d in dims},
        "required": [d.name for d in dims],
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
    """The whole episode as the environment saw it (private actions marked)."""

    lines = [environment_background(setup), ""]
    current = -1
    for record in transcript.actions:
        if record.action_type == ActionType.NONE:
            continue
        if record.turn != current:
            current = record.turn
            lines.append(f"Turn #{current}")
        lines.append(f"{record.agent_name} {action_text(record)}")
    if current == -1:
        lines.append("(nobody did anything)")
    return "\n".join(lines)


def _dimension_lines(dims: list[DimensionSpec]) -> str:
    return "\n".join(
        f"- {d.name} (integer from {d.range_low} to {d.range_high}): {d.description}" for d in dims
    )


def agent_judge_messages(
    history: str, name: str, dims: list[DimensionSpec], termination: str
) -> list[dict[str, str]]:
    text = (
        f"{history}\n\nThe episode ended: {termination.strip() or 'no reason given'}\n\n"
        f"Evaluate how well {name} did in this interaction, from {name}'s point of view and "
        f"goal. For each dimension below give a short reasoning and an integer score within "
        f"its range.\n{_dimension_lines(dims)}\n"
        'Reply with one JSON object mapping each dimension name to {"reasoning", "score"}.'
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
    lines = [
        f"{r.agent_name} {action_text(r)}"[:200]
        for r in transcript.actions
        if r.action_type != ActionType.NONE
    ]
    parts.append("Conversation:\n" + ("\n".join(lines[-12:]) if lines else "(nothing happened)"))
    return "\n".join(parts)


def short_episode_context(setup: EpisodeSetup, transcript: Transcript) -> str:
    """The whole episode in brief for a small judge: scenario, everyone's goal and secret, and
    every line, shortened."""
    parts = [f"Scenario: {render_tagged(setup.scenario.scenario, ENVIRONMENT)}"]
    for j, agent in enumerate(setup.agents):
        parts.append(f"{agent.name}'s goal: {render_tagged(setup.goal_of(j), ENVIRONMENT)}")
        if agent.secret:
            parts.append(f"{agent.name}'s secret: {agent.secret}")
    lines = [
        f"{r.agent_name} {action_text(r)}"[:200]
        for r in transcript.actions
        if r.action_type != ActionType.NONE
    ]
    parts.append("Conversation:\n" + ("\n".join(lines) if lines else "(nothing happened)"))
    return "\n".join(parts)


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
