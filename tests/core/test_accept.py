"""The Accept header's media ranges and their weights."""

import pytest

from parley.core.accept import media_ranges


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        ("", []),
        ("Text/Plain;Version=0.0.4", [("text/plain", 1.0)]),
        (
            "application/json;q=0.5, text/plain ; q=0.9,*/*;q=0.1",
            [("application/json", 0.5), ("text/plain", 0.9), ("*/*", 0.1)],
        ),
        (
            "a/b;q=2, c/d;q=-1, e/f;q=nan, g/h;q=",
            [("a/b", 0.0), ("c/d", 0.0), ("e/f", 0.0), ("g/h", 0.0)],
        ),
        (  # quoted values hold separators: they split neither ranges nor parameters
            'application/json;q=0.9, application/openmetrics-text;foo="x,y";q=0.1',
            [("application/json", 0.9), ("application/openmetrics-text", 0.1)],
        ),
        (
            'application/json;foo="a;q=0";q=1, text/plain;bar="\\"q=1,";q=0.5',
            [("application/json", 1.0), ("text/plain", 0.5)],
        ),
        ('text/plain;foo="unclosed, */*', [("text/plain", 1.0), ("*/*", 1.0)]),
    ],
)
def test_each_range_has_its_weight_and_an_unusable_one_weighs_nothing(
    accept: str, expected: list[tuple[str, float]]
) -> None:
    assert list(media_ranges(accept)) == expected
