"""Validation errors in words a person reads.

pydantic describes what failed in its own terms ("List should have at least 2 items after
validation, not 0", with a link to its documentation); every message built from a
ValidationError goes through `plain` instead, which says it from the error's type and context.
"""

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

Location = tuple[str | int, ...]

NOUNS = {
    "agent_ids": "agents",
    "agents": "agents",
    "episode_ids": "episodes",
    "scenarios": "scenarios",
    "agent_goals": "goals",
    "agent_models": "models",
    "compare": "models to compare",
    "human_seats": "seats",
    "seats": "seat assignments",
    "pairs": "pairs",
    "dimensions": "dimensions",
    "moral_values": "values",
    "schwartz_personal_values": "values",
    "phases": "phases",
    "to": "recipients",
}
"""What a list field holds, by its name, for "pick at least 2 agents"."""
ELEMENTS = {"pairs": "agents", "seats": "models, one per seat"}
"""What one element of these lists holds (a pair of agents, a model per seat)."""
CHOSEN = frozenset({"agents", "episodes", "scenarios"})
"""Lists of stored records, which a person picks rather than gives."""
CHOSEN_ONE = {"agent_id": "an agent", "other_agent_id": "an agent", "scenario_id": "a scenario"}
"""Fields naming one stored record, which a person picks: left empty, "pick an agent"."""
KINDS = {
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "int_parsing_size": "is too large a number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "finite_number": "must be a finite number",
    "decimal_type": "must be a number",
    "decimal_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "string_type": "must be text",
    "string_unicode": "must be text (UTF-8)",
    "string_not_ascii": "must be plain ASCII text",
    "bytes_type": "must be text",
    "list_type": "must be a list",
    "tuple_type": "must be a list",
    "set_type": "must be a list",
    "frozen_set_type": "must be a list",
    "deque_type": "must be a list",
    "iterable_type": "must be a list",
    "dict_type": "must be an object of named fields",
    "mapping_type": "must be an object of named fields",
    "model_type": "must be an object of named fields",
    "model_attributes_type": "must be an object of named fields",
    "dataclass_type": "must be an object of named fields",
    "missing": "a value is required here",
    "extra_forbidden": "is not a field here",
    "none_required": "must be left empty",
    "json_invalid": "is not valid JSON",
    "json_type": "must be JSON text",
    "union_tag_invalid": "is not one of the kinds allowed here",
    "union_tag_not_found": "does not say which kind it is",
    "date_type": "must be a date",
    "date_parsing": "must be a date",
    "datetime_type": "must be a date and time",
    "datetime_parsing": "must be a date and time",
    "time_type": "must be a time of day",
    "time_parsing": "must be a time of day",
    "time_delta_type": "must be a duration",
    "time_delta_parsing": "must be a duration",
    "url_type": "must be a URL",
    "url_parsing": "must be a URL",
    "url_syntax_violation": "must be a URL",
    "url_scheme": "must be a URL with an allowed scheme",
    "uuid_type": "must be a UUID",
    "uuid_parsing": "must be a UUID",
    "recursion_loop": "refers to itself",
    "recursion_depth_exceeded": "is nested too deeply",
}
"""Messages that need nothing from the error's context."""
FALLBACK = "is not a valid value here"


def _noun(loc: Location) -> str:
    names = [part for part in loc if isinstance(part, str)]
    if loc and isinstance(loc[-1], int) and names and names[-1] in ELEMENTS:
        return ELEMENTS[names[-1]]
    if not names:
        return "values"
    last = names[-1]
    if last == "ids" and len(names) > 1:
        return NOUNS.get(names[-2], "ids")
    return NOUNS.get(last, "values")


def _count(number: int, noun: str) -> str:
    return f"{number} {noun.removesuffix('s') if number == 1 and ',' not in noun else noun}"


def _sized(error: ErrorDetails, ctx: Mapping[str, Any]) -> str:
    noun = _noun(error["loc"])
    given = ctx.get("actual_length")
    after = f" ({given} given)" if given is not None else ""
    if error["type"] == "too_short":
        verb = "pick" if noun in CHOSEN else "give"
        return f"{verb} at least {_count(int(ctx['min_length']), noun)}{after}"
    return f"at most {_count(int(ctx['max_length']), noun)}{after}"


def plain(error: ErrorDetails, patterns: Mapping[str, str] | None = None) -> str:
    """One pydantic error in plain words. `patterns` says in words what text a regular
    expression of a field accepts (an id's, say)."""
    kind = error["type"]
    ctx: Mapping[str, Any] = error.get("ctx") or {}
    if kind in KINDS:
        return KINDS[kind]
    match kind:
        case "value_error":
            return str(ctx.get("error") or error["msg"].removeprefix("Value error, "))
        case "assertion_error":
            return str(ctx.get("error") or error["msg"].removeprefix("Assertion failed, "))
        case "too_short" | "too_long":
            return _sized(error, ctx)
        case "string_too_short":
            least = int(ctx.get("min_length", 1))
            if least > 1:
                return f"needs at least {least} characters"
            picked = CHOSEN_ONE.get(str(error["loc"][-1])) if error["loc"] else None
            return f"pick {picked}" if picked else "cannot be empty"
        case "string_too_long":
            return f"is too long: at most {ctx.get('max_length')} characters"
        case "bytes_too_short" | "bytes_too_long":
            return "has the wrong length"
        case "string_pattern_mismatch":
            words = (patterns or {}).get(str(ctx.get("pattern", "")))
            return words or "holds characters that are not allowed here"
        case "greater_than_equal":
            return f"must be at least {ctx.get('ge')}"
        case "greater_than":
            return f"must be more than {ctx.get('gt')}"
        case "less_than_equal":
            return f"must be at most {ctx.get('le')}"
        case "less_than":
            return f"must be less than {ctx.get('lt')}"
        case "multiple_of":
            return f"must be a multiple of {ctx.get('multiple_of')}"
        case "enum" | "literal_error":
            return f"must be {ctx.get('expected')}" if ctx.get("expected") else FALLBACK
    return FALLBACK


def problems(
    error: ValidationError, patterns: Mapping[str, str] | None = None
) -> list[tuple[Location, str]]:
    """(where, what is wrong) of each error, in plain words."""
    return [(tuple(item["loc"]), plain(item, patterns)) for item in error.errors()]


def where(loc: Sequence[str | int]) -> str:
    """A location as a person reads it in one line: `agents.0.first_name`."""
    return ".".join(str(part) for part in loc)


def summary(error: ValidationError, patterns: Mapping[str, str] | None = None) -> str:
    """Every error on one line: `agents.0.age: must be at most 150; ...`."""
    return "; ".join(
        f"{where(loc)}: {message}" if loc else message for loc, message in problems(error, patterns)
    )
