"""JSON a client sent (a request body, a websocket message, an import line), read with a bound
on its nesting: deeper than MAX_DEPTH, it is malformed, never a RecursionError further in."""

import json
import re
from typing import Any

from parley.core.limits import has_utf8_form

MAX_DEPTH = 64
"""Levels of arrays and objects one JSON document may nest (README, "Limits")."""


class TooDeep(ValueError):
    """A JSON document nested deeper than MAX_DEPTH."""

    def __init__(self) -> None:
        super().__init__(f"JSON nested deeper than {MAX_DEPTH} levels")


def loads(text: str | bytes) -> Any:
    """`json.loads`, raising TooDeep for a document nested deeper than MAX_DEPTH (Python's
    parser itself gives up, with a RecursionError, somewhere past a thousand levels)."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise TooDeep() from None
    if depth(value, MAX_DEPTH + 1) > MAX_DEPTH:
        raise TooDeep()
    return value


def depth(value: Any, stop: int) -> int:
    """Levels of arrays and objects in a decoded value (0 for a scalar), counted up to `stop`;
    level by level, so no recursion."""
    levels = 0
    level = [value]
    while levels < stop:
        containers = [item for item in level if isinstance(item, dict | list)]
        if not containers:
            break
        levels += 1
        level = [
            child
            for container in containers
            for child in (container.values() if isinstance(container, dict) else container)
        ]
    return levels


SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
"""A surrogate as a JSON escape: half of a pair, or alone (only decoding tells)."""


def has_lone_surrogate(text: str | bytes, value: Any) -> bool:
    """Whether `value`, decoded from the JSON `text`, holds a lone surrogate in any string, a
    key or a value. JSON can carry one (the escape `\\ud800`, or bytes Python's parser decodes
    with `surrogatepass`); UTF-8 has no form for it, so Redis cannot store it. Only a text
    that is not UTF-8 or that escapes a surrogate is looked at further."""
    try:
        written = text.decode() if isinstance(text, bytes) else text
    except UnicodeDecodeError:
        written = ""
    if written and has_utf8_form(written) and SURROGATE_ESCAPE.search(written) is None:
        return False
    return not has_utf8_form(json.dumps(value, ensure_ascii=False))
