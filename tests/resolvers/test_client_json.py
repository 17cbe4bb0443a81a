"""JSON a client sends, read with a bound on its nesting and checked for lone surrogates."""

import json

import pytest

from parley.resolvers.client_json import MAX_DEPTH, TooDeep, depth, has_lone_surrogate, loads


def nested(levels: int) -> str:
    return "[" * levels + "]" * levels


def test_json_nested_up_to_the_bound_is_read() -> None:
    assert depth(loads(nested(MAX_DEPTH)), MAX_DEPTH + 1) == MAX_DEPTH
    assert loads('{"a": [1, {"b": null}]}') == {"a": [1, {"b": None}]}


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 5_000, 100_000])
def test_json_nested_deeper_is_too_deep(levels: int) -> None:
    with pytest.raises(TooDeep):
        loads(nested(levels))


def test_malformed_json_stays_a_decode_error() -> None:
    with pytest.raises(json.JSONDecodeError):
        loads("{")


def test_depth_counts_levels_of_containers_up_to_its_stop() -> None:
    assert depth(3, 10) == 0
    assert depth({"a": [{}], "b": []}, 10) == 3
    assert depth(json.loads(nested(50)), 5) == 5


@pytest.mark.parametrize(
    ("text", "lone"),
    [
        ('{"name": "Zo\\u00eb"}', False),
        ('{"face": "\\ud83d\\ude00"}', False),
        ('{"half": "\\ud800"}', True),
        ('{"\\udc00": 1}', True),
    ],
)
def test_a_lone_surrogate_is_found_in_keys_and_values(text: str, lone: bool) -> None:
    assert has_lone_surrogate(text, json.loads(text)) is lone
    assert has_lone_surrogate(text.encode(), json.loads(text)) is lone
