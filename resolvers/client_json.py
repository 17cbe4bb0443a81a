"""JSON a client sent (a request body, a websocket message, an import line), read with a bound
on its nesting: deeper than MAX_DEPTH, it is malformed, never a RecursionError further in."""

import json
from typing import Any

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
