"""Sotopia's text renderings: bios by relationship, goal tags, backgrounds, actions."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from parley.engine.types import ActionType, AgentAction, AgentSpec, RelationshipType

_GENDER_ADJECTIVE = {"man": "male", "woman": "female", "nonbinary": "nonbinary"}
HINT_TAGS = ("extra_info", "clarification_hint", "strategy_hint")
"""Sotopia's hints inside a goal."""
_UNWRAPPED_TAGS = {"root", "p", *HINT_TAGS}
_ANY_TAG = re.compile(r"</?([a-zA-Z_][^>\s/]*)[^>]*>")
ENVIRONMENT = "environment"


def _public_bio(agent: AgentSpec) -> str:
    adjective = _GENDER_ADJECTIVE.get(agent.gender.strip().lower(), "")
    age = f"{agent.age}-year-old" if agent.age > 0 else ""
    who = " ".join(part for part in (age, adjective, agent.occupation.lower()) if part)
    text = f"{agent.name} is a {who}." if who else f"{agent.name}."
    if agent.gender_pronoun:
        text += f" {agent.gender_pronoun} pronouns."
    if agent.public_info:
        text += f" {agent.public_info}"
    return text


def own_bio(agent: AgentSpec) -> str:
    """What an agent knows about itself, secret included."""
    text = _public_bio(agent)
    if agent.personality_and_values:
        text += f" Personality and values description: {agent.personality_and_values}"
    if agent.secret:
        text += f" {agent.first_name}'s secrets: {agent.secret}"
    return text


def partner_bio(agent: AgentSpec, relationship: RelationshipType) -> str:
    """What a partner sees of `agent` (Sotopia paper semantics, SOTOPIA.md §2.3).

    stranger: nothing; know_by_name: the name; acquaintance: name, age, gender,
    occupation, pronouns, public info; friend/romantic/family: also personality
    and values. Never the secret.
    """
    if relationship <= RelationshipType.STRANGER:
        return ""
    if relationship == RelationshipType.KNOW_BY_NAME:
        return agent.name
    text = _public_bio(agent)
    if relationship > RelationshipType.ACQUAINTANCE and agent.personality_and_values:
        text += f" Personality and values description: {agent.personality_and_values}"
    return text


def profile_text(agent: AgentSpec, personality: bool = True, secret: bool = True) -> str:
    """A compact profile for prompts (the name is said by the caller)."""
    adjective = _GENDER_ADJECTIVE.get(agent.gender.strip().lower(), "")
    age = f"{agent.age}-year-old" if agent.age > 0 else ""
    parts = [" ".join(part for part in (age, adjective, agent.occupation.lower()) if part)]
    if agent.gender_pronoun:
        parts.append(f"({agent.gender_pronoun})")
    text = " ".join(p for p in parts if p)
    text = f"{text}." if text else ""
    if agent.public_info:
        text += f" {agent.public_info}"
    if personality and agent.personality_and_values:
        text += f" Personality: {agent.personality_and_values}"
    if secret and agent.secret:
        text += f" Secret: {agent.secret}"
    return text.strip()


def partner_profile(agent: AgentSpec, relationship: RelationshipType) -> str:
    """`profile_text` as a partner sees it (the levels of `partner_bio`); "" for a stranger."""
    if relationship <= RelationshipType.STRANGER:
        return ""
    if relationship == RelationshipType.KNOW_BY_NAME:
        return "known to you by name only."
    return profile_text(agent, relationship > RelationshipType.ACQUAINTANCE, secret=False)


def render_tagged(text: str, viewer: str, keep_hints: bool = False) -> str:
    """Render Sotopia's XML-tagged text for one viewer.

    Hint tags (extra_info, clarification_hint, strategy_hint, p) are unwrapped, or with
    `keep_hints` the three hints kept as plain tags (for a page that labels them); elements
    with a viewer attribute are kept only for that viewer (the environment sees everything);
    unknown tags are dropped.
    """
    if "<" not in text:
        return text
    try:
        root = ET.fromstring(f"<root>{text}</root>")
    except ET.ParseError:
        try:
            root = ET.fromstring(f"<root>{text.replace('&', '&amp;')}</root>")
        except ET.ParseError:
            kept = HINT_TAGS if keep_hints else ()
            return _ANY_TAG.sub(lambda tag: tag[0] if tag[1] in kept else "", text)
    return _render_element(root, viewer, keep_hints).strip()


def _render_element(elem: ET.Element, viewer: str, keep_hints: bool) -> str:
    parts = [elem.text or ""]
    for child in elem:
        allowed = viewer == ENVIRONMENT or child.get("viewer") in (None, viewer)
        if child.tag in _UNWRAPPED_TAGS and allowed:
            inner = _render_element(child, viewer, keep_hints)
            hint = keep_hints and child.tag in HINT_TAGS
            parts.append(f"<{child.tag}>{inner}</{child.tag}>" if hint else inner)
        parts.append(child.tail or "")
    return "".join(parts)


def agent_viewer(index: int) -> str:
    return f"agent_{index + 1}"


def join_names(names: list[str]) -> str:
    if len(names) <= 1:
        return "".join(names)
    if len(names) == 2:
        return f"{names[0]} and {names[1]}"
    return ", ".join(names[:-1]) + f", and {names[-1]}"


def background_text(
    scenario: str,
    names: list[str],
    backgrounds: list[str],
    goals: list[str],
) -> str:
    """Sotopia's ScriptBackground text ('Unknown' for what a viewer may not see)."""
    lines = [
        "Here is the context of this interaction:",
        f"Scenario: {scenario}",
        f"Participants: {join_names(names)}",
    ]
    if any(backgrounds):
        lines += [
            f"{n}'s background: {b or 'Unknown'}" for n, b in zip(names, backgrounds, strict=True)
        ]
    lines += [f"{n}'s goal: {g or 'Unknown'}" for n, g in zip(names, goals, strict=True)]
    return "\n".join(lines)


def action_text(action: AgentAction) -> str:
    """Sotopia's natural-language form of an action (published-data spacing)."""
    match action.action_type:
        case ActionType.NONE:
            body = "did nothing"
        case ActionType.SPEAK:
            body = f'said: "{action.argument}"'
        case ActionType.NON_VERBAL_COMMUNICATION:
            body = f"[non-verbal communication] {action.argument}"
        case ActionType.ACTION:
            body = f"[action] {action.argument}"
        case ActionType.LEAVE:
            body = "left the conversation"
    if action.to:
        return f"[private to {action.to!r}] {body}"
    return body


def action_line(name: str, action: AgentAction) -> str:
    """One action in a prompt: public speech as `Name: "words"`, anything else as Sotopia
    words it."""
    if action.action_type == ActionType.SPEAK and not action.to:
        return f'{name}: "{action.argument}"'
    return f"{name} {action_text(action)}"


def first_observation(background: str) -> str:
    return f"\n{background}\nConversation Starts:\n"


def turn_observation(turn: int, visible: list[tuple[str, AgentAction]]) -> str:
    """Observation of what happened in `turn`, as seen by one viewer."""
    last = ";".join(
        f"{name} {action_text(action)}"
        for name, action in visible
        if action.action_type != ActionType.NONE
    )
    return f"Turn #{turn}: {last}\n"
