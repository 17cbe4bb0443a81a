"""The Accept header read as its media ranges and their weights (RFC 9110, section 12.5.1)."""

from collections.abc import Iterator


def media_ranges(accept: str) -> Iterator[tuple[str, float]]:
    """Each media range of `accept`, lower-cased, with its q (1 when not given; 0 when not a
    number from 0 to 1), in the header's order."""
    for item in accept.split(","):
        media_range, *params = (part.strip().lower() for part in item.split(";"))
        q = next((weight(p.removeprefix("q=")) for p in params if p.startswith("q=")), 1.0)
        yield media_range, q


def weight(value: str) -> float:
    try:
        q = float(value)
    except ValueError:
        return 0.0
    return q if 0.0 <= q <= 1.0 else 0.0
