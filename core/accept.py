"""The Accept header read as its media ranges and their weights (RFC 9110, section 12.5.1)."""

import re
from collections.abc import Iterator

QUOTED = r'"(?:[^"\\]|\\.)*"'
"""A quoted string of a parameter's value, which may hold commas and semicolons."""
ITEM = re.compile(rf'(?:[^,"]|{QUOTED}|")+')
PART = re.compile(rf'(?:[^;"]|{QUOTED}|")+')
"""A range, a parameter: up to the next separator outside a quoted string (a quote never
closed is a character like another)."""


def media_ranges(accept: str) -> Iterator[tuple[str, float]]:
    """Each media range of `accept`, lower-cased, with its q (1 when not given; 0 when not a
    number from 0 to 1), in the header's order; a comma or semicolon in a quoted parameter
    value separates nothing."""
    for item in ITEM.findall(accept):
        media_range, *params = (part.strip().lower() for part in PART.findall(item))
        q = next((weight(p.removeprefix("q=")) for p in params if p.startswith("q=")), 1.0)
        yield media_range, q


def weight(value: str) -> float:
    try:
        q = float(value)
    except ValueError:
        return 0.0
    return q if 0.0 <= q <= 1.0 else 0.0
