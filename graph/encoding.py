"""The JSON text of responses, with the text of reused answers spliced in, not encoded again.

A page of 50 finished episodes is about 330 KiB of JSON; encoding it was a third of the page's
server time even when every item's answer was reused (graph/answer_cache.py). A reused answer
is an `Encoded`: the completed dict (what every other reader sees) and its JSON text, made
once when it was completed. `encode` writes the top levels of a response itself and each
`Encoded` it meets there as its text; everything else is encoded by the standard encoder with
the same settings, so the bytes are exactly those `json.dumps` would give for the whole.
"""

import json
from typing import Any

SEPARATORS = (",", ":")
"""As Strawberry encodes responses."""
DEPTH = 6
"""How deep `encode` looks for `Encoded` values: a connection's `edges[i].node` is six levels
down from a response (`{data: {alias: {edges: [{node}]}}}`). One deeper is encoded whole and
comes out the same, only without the shortcut."""

_encode = json.JSONEncoder(separators=SEPARATORS).encode


class Encoded(dict[str, Any]):
    """A completed answer and its JSON text; to everything but `encode`, the answer itself."""

    __slots__ = ("text",)

    def __init__(self, answer: dict[str, Any]) -> None:
        super().__init__(answer)
        self.text: str = _encode(answer)


def encode(value: object) -> str:
    """`json.dumps(value, separators=(",", ":"))`, splicing in the text of `Encoded` values."""
    parts: list[str] = []
    _write(value, DEPTH, parts)
    return "".join(parts)


def _write(value: object, depth: int, parts: list[str]) -> None:
    if type(value) is Encoded:
        parts.append(value.text)
    elif depth > 0 and type(value) is dict and all(type(key) is str for key in value):
        parts.append("{")
        for i, (key, item) in enumerate(value.items()):
            parts.append(f",{_encode(key)}:" if i else f"{_encode(key)}:")
            _write(item, depth - 1, parts)
        parts.append("}")
    elif depth > 0 and type(value) is list:
        parts.append("[")
        for i, item in enumerate(value):
            if i:
                parts.append(",")
            _write(item, depth - 1, parts)
        parts.append("]")
    else:
        parts.append(_encode(value))
