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


def encode(value: object, depth: int = DEPTH) -> str:
    """`json.dumps(value, separators=(",", ":"))`, splicing in the text of `Encoded` values."""
    if type(value) is Encoded:
        return value.text
    if depth > 0:
        if type(value) is dict and all(type(key) is str for key in value):
            fields = (f"{_encode(k)}:{encode(v, depth - 1)}" for k, v in value.items())
            return "{" + ",".join(fields) + "}"
        if type(value) is list:
            return "[" + ",".join(encode(v, depth - 1) for v in value) + "]"
    return _encode(value)
