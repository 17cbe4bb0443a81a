"""What makes a drafted world read as one, beyond the limits of its records: a model can keep
to every limit and still give a date as the situation, numbers as a goal or a background story,
an MBTI of ".1,1" or two agents of one name. Drafts are checked with these (the model is asked
again once with what fails) and so is every draft saved."""

import re
from collections.abc import Sequence
from typing import Any

from parley.engine.types import MBTI_TYPES
from parley.resolvers.names import same_names

Problem = tuple[list[str], str]
"""Where in a draft (snake_case path) and what is wrong."""
WORD = re.compile(r"[^\W\d_]{2,}")
"""A word: two letters or more."""
SITUATION_WORDS = 3
GOAL_WORDS = 2


def is_prose(text: str, words: int) -> bool:
    """Whether `text` says something in words: at least `words` of them apart, and more letters
    than digits (a date, a time, a list of numbers or an identifier such as "agent_role_goals"
    is not prose)."""
    letters = sum(ch.isalpha() for ch in text)
    digits = sum(ch.isdigit() for ch in text)
    apart = sum(WORD.search(token) is not None for token in text.split())
    return apart >= words and letters > digits


def is_name(text: str) -> bool:
    """Whether `text` reads as a person's name: letters, and no digit or "_" (a placeholder
    such as "agent1" is not a name)."""
    return any(ch.isalpha() for ch in text) and not any(ch.isdigit() or ch == "_" for ch in text)


def _text(value: Any) -> str | None:
    """A given text, stripped; None for a missing or empty one (the limits report those)."""
    return (value.strip() or None) if isinstance(value, str) else None


def agent_problems(agents: Sequence[dict[str, Any]]) -> list[Problem]:
    """Each agent's MBTI one of the sixteen types, names `is_name`, and no two agents of one
    name."""
    problems: list[Problem] = []
    for i, agent in enumerate(agents):
        at = ["agents", str(i)]
        mbti = agent.get("mbti")
        if not isinstance(mbti, str) or mbti.strip().upper() not in MBTI_TYPES:
            problems.append(
                ([*at, "mbti"], "give one of the sixteen MBTI types, such as INTJ or ESFP")
            )
        parts = [_text(agent.get(key)) for key in ("first_name", "last_name")]
        for key, part in zip(("first_name", "last_name"), parts, strict=True):
            if part is not None and not is_name(part):
                problems.append(([*at, key], "a name is written in letters"))
    return problems + name_problems(agents)


def name_problems(agents: Sequence[dict[str, Any]]) -> list[Problem]:
    """A problem on each agent that goes by the name of an earlier one."""
    names = [
        " ".join(p for p in (_text(a.get("first_name")), _text(a.get("last_name"))) if p)
        for a in agents
    ]
    problems: list[Problem] = []
    for _, later in same_names(names):
        message = (
            f"another agent of this draft is named {names[later]!r} too: give each agent a "
            "name of its own"
        )
        problems.append((["agents", str(later), "first_name"], message))
    return problems


def scenario_problems(scenarios: Sequence[dict[str, Any]]) -> list[Problem]:
    """Each situation and each goal said in words."""
    problems: list[Problem] = []
    for i, scenario in enumerate(scenarios):
        at = ["scenarios", str(i)]
        situation = _text(scenario.get("scenario"))
        if situation is not None and not is_prose(situation, SITUATION_WORDS):
            message = "describe the situation in a sentence or more, not a date or numbers"
            problems.append(([*at, "scenario"], message))
        goals = scenario.get("agent_goals")
        for k, goal in enumerate(goals if isinstance(goals, list) else []):
            text = _text(goal)
            if text is not None and not is_prose(text, GOAL_WORDS):
                message = "say what this agent wants in words, not numbers"
                problems.append(([*at, "agent_goals", str(k)], message))
    return problems


def relationship_problems(relationships: Sequence[dict[str, Any]]) -> list[Problem]:
    """Each background story (when given) told in words."""
    problems: list[Problem] = []
    for i, relationship in enumerate(relationships):
        story = _text(relationship.get("background_story"))
        if story is not None and not is_prose(story, GOAL_WORDS):
            message = "tell how they know each other in words, not numbers"
            problems.append((["relationships", str(i), "background_story"], message))
    return problems
