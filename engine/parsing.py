"""Tolerant reading of model answers into actions and scores."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from parley.engine.types import ACTION_TYPES, ActionType, AgentAction, DimensionScore, DimensionSpec


class InvalidOutput(ValueError):
    """The answer does not parse or validate; the message is shown to the model on re-ask."""


_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)(?:```|$)", re.S)
_LEAVING = re.compile(
    r"(\b(leaves?|left|leaving)\b.{0,20}\b(conversation|room|chat)\b)|"
    r"^\W*(\*|\[|\()\s*(leaves?|walks away|exits?)\b|\[leave\]",
    re.I,
)


_SURROGATE = re.compile("[\ud800-\udfff]")


def well_formed(text: str) -> str:
    """`text` with each surrogate replaced by U+FFFD. A model can write one alone (half of a
    split pair, or the JSON escape `\\ud800` in its JSON); UTF-8 has no form for it, so Redis
    would refuse the record holding it. (Decoded from JSON or UTF-8, a pair is one character:
    every surrogate left is alone.)"""
    return _SURROGATE.sub("\ufffd", text)


def extract_json(text: str) -> Any:
    """Find the JSON value in an answer that may carry prose or code fences around it; its
    strings `well_formed`."""
    stripped = text.strip()
    candidates = [stripped]
    fence = _FENCE.search(stripped)
    if fence:
        candidates.insert(0, fence.group(1).strip())
    for candidate in candidates:
        try:
            return _well_formed_value(json.loads(candidate))
        except (ValueError, RecursionError):
            pass
    decoder = json.JSONDecoder()
    for match in re.finditer(r"[{\[]", stripped):
        try:
            value, _ = decoder.raw_decode(stripped, match.start())
            return _well_formed_value(value)
        except (ValueError, RecursionError):
            continue
    raise InvalidOutput("no JSON object found in the answer")


def _well_formed_value(value: Any) -> Any:
    """A decoded JSON value with its strings (keys too) `well_formed`: encoded again and
    decoded, which only a value holding a surrogate needs."""
    text = json.dumps(value, ensure_ascii=False)
    return value if _SURROGATE.search(text) is None else json.loads(well_formed(text))


def _normalise_type(value: Any, allowed: list[ActionType]) -> ActionType:
    text = str(value).strip().lower().replace("_", " ").replace("-", " ")
    for action_type in ACTION_TYPES:
        if text == action_type.replace("-", " "):
            if action_type not in allowed:
                raise InvalidOutput(f'action_type "{action_type}" is not available now')
            return action_type
    kinds = ", ".join(f'"{t}"' for t in allowed)
    raise InvalidOutput(f"action_type must be one of {kinds}, not {value!r}")


def parse_action(
    text: str, allowed: list[ActionType], sender: str, recipients: list[str]
) -> AgentAction:
    """Read a JSON action; check its type, argument and private recipients."""
    data = extract_json(text)
    if isinstance(data, dict) and "action_type" not in data and len(data) == 1:
        inner = next(iter(data.values()))
        if isinstance(inner, dict):
            data = inner
    if not isinstance(data, dict):
        raise InvalidOutput("the answer must be a JSON object")
    if "action_type" not in data:
        raise InvalidOutput('the key "action_type" is missing')
    action_type = _normalise_type(data["action_type"], allowed)
    argument = data.get("argument", "")
    if not isinstance(argument, str):
        argument = json.dumps(argument) if argument is not None else ""
    argument = argument.strip()
    if action_type not in (ActionType.NONE, ActionType.LEAVE) and not argument:
        raise InvalidOutput(f'"argument" must not be empty for "{action_type}"')
    raw_to = data.get("to") or []
    if isinstance(raw_to, str):
        raw_to = [raw_to]
    if not isinstance(raw_to, list):
        raise InvalidOutput('"to" must be a list of names')
    to: list[str] = []
    for item in raw_to:
        name = _match_name(str(item), [*recipients, sender])
        if name is None:
            raise InvalidOutput(f"invalid recipient {item!r} in 'to'; allowed: {recipients}")
        if name != sender and name not in to:
            to.append(name)
    if action_type == ActionType.LEAVE:
        argument, to = "", []
    return AgentAction(action_type=action_type, argument=argument, to=to)


def _match_name(value: str, names: list[str]) -> str | None:
    wanted = value.strip().lower()
    for name in names:
        if name.lower() == wanted:
            return name
    by_first = [n for n in names if n.split()[0].lower() == wanted]
    return by_first[0] if len(by_first) == 1 else None


def parse_text_action(text: str, prefill: str, max_chars: int = 300) -> AgentAction:
    """Read one line of speech from a small model; recognise leaving."""
    line = text.strip()
    if line.startswith(prefill.strip()):
        line = line[len(prefill.strip()) :]
    name = prefill.split(":")[0]
    if line.startswith(f"{name}:"):
        line = line[len(name) + 1 :]
    line = line.strip().splitlines()[0].strip() if line.strip() else ""
    line = line.strip(' "*').strip()
    if not line or not any(ch.isalnum() for ch in line):
        raise InvalidOutput("the answer is empty")
    if _LEAVING.search(line):
        return AgentAction(action_type=ActionType.LEAVE)
    return AgentAction(action_type=ActionType.SPEAK, argument=line[:max_chars])


def _check_score(value: Any, dim: DimensionSpec) -> int:
    if isinstance(value, str):
        value = value.strip()
        if re.fullmatch(r"[+-]?\d+(\.0+)?", value):
            value = float(value)
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or (isinstance(value, float) and not math.isfinite(value))  # NaN, Infinity: JSON's
        or value != int(value)
    ):
        raise InvalidOutput(f"{dim.name}: the score must be an integer, not {value!r}")
    score = int(value)
    if not dim.range_low <= score <= dim.range_high:
        raise InvalidOutput(
            f"{dim.name}: score {score} is outside the range {dim.range_low}..{dim.range_high}"
        )
    return score


def _score_from(value: Any, dim: DimensionSpec) -> DimensionScore:
    if isinstance(value, dict):
        if "score" not in value:
            raise InvalidOutput(f'{dim.name}: the key "score" is missing')
        reasoning = value.get("reasoning", "")
        return DimensionScore(
            score=_check_score(value["score"], dim),
            reasoning=reasoning if isinstance(reasoning, str) else json.dumps(reasoning),
        )
    if isinstance(value, list) and len(value) == 2:  # legacy (reasoning, score) pairs
        return DimensionScore(score=_check_score(value[1], dim), reasoning=str(value[0]))
    return DimensionScore(score=_check_score(value, dim))


def parse_dimension_score(text: str, dim: DimensionSpec) -> DimensionScore:
    """One dimension: {"reasoning", "score"} or a bare integer."""
    stripped = text.strip()
    if re.fullmatch(r"[+-]?\d+", stripped):
        return DimensionScore(score=_check_score(int(stripped), dim))
    return _score_from(extract_json(stripped), dim)


def parse_evaluation(
    text: str, dims: list[DimensionSpec]
) -> tuple[dict[str, DimensionScore], dict[str, str]]:
    """All dimensions of one agent; returns the valid scores and the errors of the others."""
    data = extract_json(text)
    if isinstance(data, dict) and len(data) == 1 and not any(d.name in data for d in dims):
        inner = next(iter(data.values()))
        if isinstance(inner, dict):
            data = inner
    if not isinstance(data, dict):
        raise InvalidOutput("the answer must be a JSON object keyed by dimension name")
    scores: dict[str, DimensionScore] = {}
    errors: dict[str, str] = {}
    for dim in dims:
        if dim.name not in data:
            errors[dim.name] = f"{dim.name}: missing"
            continue
        try:
            scores[dim.name] = _score_from(data[dim.name], dim)
        except InvalidOutput as exc:
            errors[dim.name] = str(exc)
    return scores, errors


def parse_episode_evaluation(
    text: str, names: list[str], dims: list[DimensionSpec]
) -> tuple[dict[str, dict[str, DimensionScore]], dict[str, str], list[str]]:
    """Every agent's integer scores and reasoning from one answer keyed by agent name.

    Returns the valid scores per agent, each agent's reasoning, and the errors of the rest.
    """
    data = extract_json(text)
    if not isinstance(data, dict):
        raise InvalidOutput("the answer must be a JSON object keyed by participant name")
    by_name = {found: data[key] for key in data if (found := _match_name(str(key), names))}
    scores: dict[str, dict[str, DimensionScore]] = {}
    comments: dict[str, str] = {}
    errors: list[str] = []
    for name in names:
        entry = by_name.get(name)
        if not isinstance(entry, dict):
            errors.append(f"{name}: missing")
            continue
        reasoning = entry.get("reasoning", "")
        comments[name] = reasoning if isinstance(reasoning, str) else json.dumps(reasoning)
        scores[name] = {}
        for dim in dims:
            if dim.name not in entry:
                errors.append(f"{name}: {dim.name}: missing")
                continue
            try:
                scores[name][dim.name] = _score_from(entry[dim.name], dim)
            except InvalidOutput as exc:
                errors.append(f"{name}: {exc}")
    return scores, comments, errors
