"""Sotopia's JSONL layout (`sotopia.database.serialization`) to and from stored documents.

One JSON object a line, its kind told by its fields: an episode has `episode_id`, an agent
`agent_id`, a scenario `env_id`, a relationship `relationship_id`. Episodes carry Sotopia's raw
record (`raw_messages`, `raw_rewards`, …) and the fields Sotopia derives from its profiles
(`scenario`, `agents_background`, `social_interactions`, …). What a stored document holds
beyond Sotopia's layout (Parley's run state, a tag, keys another writer added) travels under
one extra key, `parley`, which Sotopia's own reader ignores.
"""

import ast
import csv
import io
import json
from collections.abc import Sequence
from enum import StrEnum
from typing import Any

from parley.storage.models import RelationshipType

EXTRA = "parley"


class Kind(StrEnum):
    AGENTS = "agents"
    SCENARIOS = "scenarios"
    RELATIONSHIPS = "relationships"
    DIMENSION_LISTS = "dimension_lists"
    """Parley's own kind (Sotopia's serializer has none): a custom evaluation dimension list
    with its dimensions inline, so re-judged scores keep their dimensions across an export."""
    EPISODES = "episodes"
    EXPERIMENTS = "experiments"
    """Parley's own kind: an experiment (`experiment_id`, after its episodes), its slots and
    the episode filling each in lines before it (`experiment_slots`, at most SLOTS_PER_LINE
    a line, so a line stays well under a server's body limit)."""
    ANNOTATIONS = "annotations"
    """People's ratings of the episodes exported: Sotopia's `AnnotationForEpisode` and
    `Annotator` records, with their rating study's line (resolvers/annotation_exchange.py)."""
    MODEL_CALLS = "model_calls"
    """Parley's own kind: the exported episodes' ledgers of model calls, a call a line, each
    body given once (resolvers/call_exchange.py)."""


AGENT_FIELDS = (
    "first_name",
    "last_name",
    "age",
    "occupation",
    "gender",
    "gender_pronoun",
    "public_info",
    "big_five",
    "moral_values",
    "schwartz_personal_values",
    "personality_and_values",
    "decision_making_style",
    "secret",
    "mbti",
    "model_id",
)
SCENARIO_FIELDS = (
    "codename",
    "source",
    "scenario",
    "agent_goals",
    "relationship",
    "age_constraint",
    "occupation_constraint",
    "agent_constraint",
)
EPISODE_RAW = {
    "episode_id": "pk",
    "environment_id": "environment",
    "agent_ids": "agents",
    "experiment_tag": "tag",
    "experiment_model_name_pairs": "models",
    "raw_messages": "messages",
    "raw_rewards": "rewards",
    "raw_rewards_prompt": "rewards_prompt",
    "reasoning": "reasoning",
}
"""Episode line field -> stored field, for the fields that are the record itself."""
CSV_COLUMNS = (
    "episode_id",
    "environment_id",
    "agent_ids",
    "experiment_tag",
    "experiment_model_name_pairs",
    "raw_messages",
    "raw_rewards_prompt",
    "raw_rewards",
    "scenario",
    "codename",
    "agents_background",
    "social_goals",
    "social_interactions",
    "reasoning",
    "rewards",
    "status",
    "experiment_id",
    "judge_error",
)
"""Sotopia's episode CSV columns (nested values as JSON text), then Parley's status, experiment
and why the judge gave no scores (empty when it gave them)."""
ID_FIELD = {
    Kind.AGENTS: "agent_id",
    Kind.SCENARIOS: "env_id",
    Kind.RELATIONSHIPS: "relationship_id",
    Kind.DIMENSION_LISTS: "dimension_list_id",
    Kind.EPISODES: "episode_id",
    Kind.EXPERIMENTS: "experiment_id",
}
SLOTS_FIELD = "experiment_slots"
"""The field of a line holding part of an experiment's slots: the experiment's id."""
SLOTS_PER_LINE = 1000
CALL_OF = "model_call_of"
"""The field of a line holding a model call: its episode's id."""
EXPERIMENT_FIELDS = ("name", "tag", "design", "slot_count", "created_at", "started_at")
REJUDGINGS_PER_EXPERIMENT = 1000
"""The most re-judgings an experiment's line names."""
RATING_STUDY_FIELD = "rating_study_id"
"""The field of a rating study's line (Parley's own) in a kind ANNOTATIONS export."""


def is_rating_line(line: dict[str, Any]) -> bool:
    """Whether a line holds a rating study, an annotation or an annotator (Sotopia's
    `Annotator` dump: `pk`, `name`, `email`)."""
    return (
        RATING_STUDY_FIELD in line
        or "annotator_id" in line
        or ("pk" in line and "name" in line and set(line) <= {"pk", "name", "email"})
    )


def kind_of(line: dict[str, Any]) -> Kind | None:
    """The record kind a line holds, by its fields."""
    if "combo_id" in line:
        return None
    for kind, field in ID_FIELD.items():
        if field in line:
            return kind
    if SLOTS_FIELD in line:
        return Kind.EXPERIMENTS
    if CALL_OF in line:
        return Kind.MODEL_CALLS
    if is_rating_line(line):
        return Kind.ANNOTATIONS
    if "scenario_id" in line and "agent_goals" in line:
        return Kind.SCENARIOS  # the older layout named the scenario's id so
    return None


def _extras(doc: dict[str, Any], known: set[str]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k not in known and k != "pk"}


def _with_extras(line: dict[str, Any], extras: dict[str, Any]) -> dict[str, Any]:
    if extras:
        line[EXTRA] = extras
    return line


# Export: stored document -> line


def agent_line(doc: dict[str, Any]) -> dict[str, Any]:
    line: dict[str, Any] = {"agent_id": doc.get("pk")}
    line.update({name: doc.get(name, _AGENT_DEFAULTS[name]) for name in AGENT_FIELDS})
    return _with_extras(line, _extras(doc, set(AGENT_FIELDS)))


_AGENT_DEFAULTS: dict[str, Any] = {
    name: [] if name in ("moral_values", "schwartz_personal_values") else ""
    for name in AGENT_FIELDS
} | {"age": 0}


def scenario_line(doc: dict[str, Any]) -> dict[str, Any]:
    line: dict[str, Any] = {"env_id": doc.get("pk")}
    line.update({name: doc.get(name) for name in SCENARIO_FIELDS})
    if line["agent_constraint"] is None:
        line["agent_constraint"] = "none"
    return _with_extras(line, _extras(doc, set(SCENARIO_FIELDS)))


def relationship_line(doc: dict[str, Any]) -> dict[str, Any]:
    line = {
        "relationship_id": doc.get("pk"),
        "agent1_id": doc.get("agent_1_id"),
        "agent2_id": doc.get("agent_2_id"),
        "relationship": doc.get("relationship"),
        "background_story": doc.get("background_story"),
    }
    known = {"agent_1_id", "agent_2_id", "relationship", "background_story"}
    return _with_extras(line, _extras(doc, known))


_GENDER_ADJECTIVE = {"Man": "male", "Woman": "female", "Nonbinary": "nonbinary"}


def background(agent: dict[str, Any]) -> str:
    """Sotopia's full background of an agent (its secret included), as its serializer writes."""
    first, last = agent.get("first_name", ""), agent.get("last_name", "")
    adjective = _GENDER_ADJECTIVE.get(agent.get("gender", ""), "")
    return (
        f"{first} {last} is a {agent.get('age', 0)}-year-old {adjective} "
        f"{str(agent.get('occupation', '')).lower()}. {agent.get('gender_pronoun', '')} "
        f"pronouns. {agent.get('public_info', '')} Personality and values description: "
        f"{agent.get('personality_and_values', '')} {first}'s secrets: {agent.get('secret', '')}"
    )


def full_name(agent: dict[str, Any]) -> str:
    return f"{agent.get('first_name', '')} {agent.get('last_name', '')}"


def social_interactions(messages: list[list[list[str]]]) -> str:
    """The conversation as Sotopia renders it for humans: per turn but the last, each action
    that did something as `Name said: "…"` or `Name: [action] …`."""
    turns = []
    for turn in messages[:-1]:
        lines = []
        for sender, receiver, text in turn:
            if receiver != "Environment" or sender == "Environment" or "did nothing" in text:
                continue
            lines.append(f"{sender} {text}" if "said:" in text else f"{sender}: {text}")
        turns.append("\n".join(lines))
    return "\n\n".join(turns)


def episode_line(
    doc: dict[str, Any], scenario: dict[str, Any] | None, agents: list[dict[str, Any] | None]
) -> dict[str, Any]:
    """An episode in Sotopia's layout; the derived fields need its scenario and agents (left
    empty for one that is gone)."""
    line: dict[str, Any] = {
        name: doc.get(field, _EPISODE_DEFAULTS.get(field)) for name, field in EPISODE_RAW.items()
    }
    present = [a for a in agents if a is not None]
    goals = (scenario or {}).get("agent_goals") or []
    line["scenario"] = (scenario or {}).get("scenario", "")
    line["codename"] = (scenario or {}).get("codename", "")
    line["agents_background"] = {full_name(a): background(a) for a in present}
    line["social_goals"] = {
        full_name(a): goals[i] for i, a in enumerate(agents) if a is not None and i < len(goals)
    }
    line["social_interactions"] = social_interactions(line["raw_messages"] or [])
    line["reasoning"] = line.pop("reasoning")  # Sotopia's order: after the derived fields
    rewards = line["raw_rewards"] or []
    line["rewards"] = rewards if all(isinstance(r, list) for r in rewards) else []
    extras = _extras(doc, set(EPISODE_RAW.values()))
    if extras.get("human_seats"):  # a seat's token stays with the server that gave it out
        extras["human_seats"] = [{**seat, "token_hash": ""} for seat in extras["human_seats"]]
    return _with_extras(line, extras)


_EPISODE_DEFAULTS: dict[str, Any] = {
    "tag": "",
    "models": [],
    "messages": [],
    "rewards": [],
    "rewards_prompt": "",
    "reasoning": "",
}


def dimension_list_line(doc: dict[str, Any], dimensions: list[dict[str, Any]]) -> dict[str, Any]:
    """A dimension list and its dimensions (in the list's order; dangling ids left out)."""
    fields = ("name", "description", "range_low", "range_high")
    return {
        "dimension_list_id": doc.get("pk"),
        "name": doc.get("name"),
        "dimensions": [{name: d.get(name) for name in fields} for d in dimensions],
    }


def experiment_lines(
    doc: dict[str, Any],
    plan: list[dict[str, Any]],
    filled: dict[int, str],
    rejudgings: list[str] | None = None,
) -> list[dict[str, Any]]:
    """An experiment as lines: its slots (each with the episode filling it, or null), in parts,
    then the record itself, which an import stores only once every slot is in, naming the
    re-judgings made of it (oldest first; their scores travel with the episodes)."""
    pk = doc.get("pk")
    count = len(plan)
    lines = []
    for first in range(0, count, SLOTS_PER_LINE):
        part = [
            {**slot, "episode_id": filled.get(first + i)}
            for i, slot in enumerate(plan[first : first + SLOTS_PER_LINE])
        ]
        lines.append({SLOTS_FIELD: pk, "first": first, "slot_count": count, "slots": part})
    record = {"experiment_id": pk, **{name: doc.get(name) for name in EXPERIMENT_FIELDS}}
    return [*lines, {**record, "slot_count": count, "rejudgings": rejudgings or []}]


def csv_header() -> str:
    return _csv_row(list(CSV_COLUMNS))


def csv_row(line: dict[str, Any]) -> str:
    extra = line.get(EXTRA) or {}
    values = {
        **line,
        "status": extra.get("status", "COMPLETED"),
        "experiment_id": extra.get("experiment_id", ""),
        "judge_error": extra.get("judge_error") or "",
    }
    return _csv_row([csv_cell(values.get(column, "")) for column in CSV_COLUMNS])


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""A cell starting with one of these is a formula to a spreadsheet (OWASP: CSV injection)."""


def csv_cell(value: Any) -> str | int | float:
    """A number as it is; text, or anything else as JSON text, with a single quote before it
    when it starts like a formula, so that a spreadsheet shows it instead of running it."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def _csv_row(cells: Sequence[str | int | float]) -> str:
    out = io.StringIO()
    csv.writer(out).writerow(cells)
    return out.getvalue()


# Import: line -> stored document (validated by the caller)


class LineError(ValueError):
    """What is wrong with a line, said for a person."""


def _get(line: dict[str, Any], name: str) -> Any:
    if name not in line:
        raise LineError(f"missing field {name!r}")
    return line[name]


def _extra_of(line: dict[str, Any]) -> dict[str, Any]:
    extra = line.get(EXTRA) or {}
    if not isinstance(extra, dict):
        raise LineError(f"field {EXTRA!r} must be an object")
    return extra


def relationship_value(value: Any) -> int:
    """Sotopia's relationship as its serializer may have written it: 3, "3", "friend" or
    "RelationshipType.friend"."""
    if isinstance(value, bool):
        raise LineError(f"relationship {value!r} is not one of 0..5")
    if isinstance(value, int | float) and float(value).is_integer():
        number = int(value)
    elif isinstance(value, str):
        text = value.strip().removeprefix("RelationshipType.")
        if text.isdigit():
            number = int(text)
        elif text.upper() in RelationshipType.__members__:
            number = RelationshipType[text.upper()]
        else:
            raise LineError(f"relationship {value!r} is not one of 0..5 or their names")
    else:
        raise LineError(f"relationship {value!r} is not one of 0..5")
    if number not in tuple(RelationshipType):
        raise LineError(f"relationship {value!r} is not one of 0..5")
    return number


def _constraint(value: Any) -> Any:
    """Sotopia writes a missing agent constraint as "none" (older files "nan")."""
    if value in (None, "", "none", "nan", "None"):
        return None
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            raise LineError("agent_constraint is not a list of lists of names") from None
    return value


NULLABLE = frozenset({"age_constraint", "occupation_constraint", "agent_constraint"})
"""Scenario fields that may be null; any other null field reads as missing (its default)."""


def agent_fields(line: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(id, Sotopia fields, extras) of an agent line."""
    pk = _get(line, "agent_id")
    fields = {name: line[name] for name in AGENT_FIELDS if line.get(name) is not None}
    return pk, fields, _extra_of(line)


def scenario_fields(line: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any]]:
    pk = line["env_id"] if "env_id" in line else _get(line, "scenario_id")
    fields = {
        name: line[name]
        for name in SCENARIO_FIELDS
        if name in line and (line[name] is not None or name in NULLABLE)
    }
    if "relationship" in fields:
        fields["relationship"] = relationship_value(fields["relationship"])
    if "agent_constraint" in fields:
        fields["agent_constraint"] = _constraint(fields["agent_constraint"])
    for name in ("age_constraint", "occupation_constraint"):
        if fields.get(name) is not None and not isinstance(fields[name], str):
            fields[name] = str(fields[name])
    return pk, fields, _extra_of(line)


def relationship_fields(line: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any]]:
    pk = _get(line, "relationship_id")
    fields = {
        "agent_id": _get(line, "agent1_id"),
        "other_agent_id": _get(line, "agent2_id"),
        "relationship": relationship_value(_get(line, "relationship")),
        "background_story": line.get("background_story"),
    }
    return pk, fields, _extra_of(line)


def episode_document(line: dict[str, Any]) -> dict[str, Any]:
    """The stored document of an episode line (Sotopia's fields, then Parley's extras)."""
    doc: dict[str, Any] = {}
    for name in ("episode_id", "environment_id", "agent_ids", "raw_messages", "raw_rewards"):
        doc[EPISODE_RAW[name]] = _get(line, name)
    for name, field in EPISODE_RAW.items():
        if name in line and field not in doc:
            doc[field] = line[name]
    extra = _extra_of(line)
    clash = set(extra) & set(EPISODE_RAW.values())
    if clash:
        raise LineError(f"field {EXTRA!r} repeats {sorted(clash)}")
    return {**doc, **extra}
