"""Tolerant parsing of model answers."""

from __future__ import annotations

import pytest

from parley.engine.parsing import (
    InvalidOutput,
    extract_json,
    parse_action,
    parse_dimension_score,
    parse_text_action,
    well_formed,
)
from parley.engine.types import ACTION_TYPES, DimensionSpec

TYPES = list(ACTION_TYPES)
DIM = DimensionSpec(name="secret", description="d", range_low=-10, range_high=0)


def test_extract_json_from_prose_and_fences() -> None:
    assert extract_json('Here you go: {"a": 1} hope it helps') == {"a": 1}
    assert extract_json('```json\n{"a": 2}\n```') == {"a": 2}
    assert extract_json('```json\n{"a": 3}') == {"a": 3}
    with pytest.raises(InvalidOutput):
        extract_json("nothing here")


def test_a_lone_surrogate_in_an_answer_is_replaced() -> None:
    """A model can write half of a pair, as a JSON escape or as the character itself (the
    provider's JSON decodes to it): UTF-8 has no form for it, so Redis would refuse to store it.
    In a key, a value or a list it becomes U+FFFD; a whole pair stays what it is."""
    answer = '{"a\\ud800": ["x\\udfff", "\\ud83d\\ude00"], "b": "raw \ud800 half"}'
    assert extract_json(answer) == {"a\ufffd": ["x\ufffd", "\U0001f600"], "b": "raw \ufffd half"}
    assert extract_json('Sure: {"a": "\\udbff"} ok') == {"a": "\ufffd"}
    assert well_formed("raw \ud800 half \U0001f600") == "raw \ufffd half \U0001f600"


def test_an_answer_nested_deeper_than_python_reads_is_invalid_output() -> None:
    """Python's JSON parser gives up past about a thousand levels with a RecursionError, which
    ended the episode as "internal error in the worker"; it is an answer to ask again for."""
    with pytest.raises(InvalidOutput):
        parse_action("[" * 3000 + "]" * 3000, TYPES, "alice", ["bob"])


def test_parse_action_normalises() -> None:
    action = parse_action(
        '{"action_type": "non_verbal_communication", "argument": "nods", "to": ["bob"]}',
        TYPES,
        "Alice Smith",
        ["Bob Jones"],
    )
    assert action.action_type == "non-verbal communication"
    assert action.to == ["Bob Jones"]
    with pytest.raises(InvalidOutput, match="must not be empty"):
        parse_action('{"action_type": "speak", "argument": ""}', TYPES, "A", [])


def test_parse_text_action() -> None:
    prefill = 'Alice Smith: "'
    assert parse_text_action('Alice Smith: "Hi Bob.', prefill).argument == "Hi Bob."
    assert (
        parse_text_action(" Could you help me?\nBob: no", prefill).argument == "Could you help me?"
    )
    assert parse_text_action("*leaves the room*", prefill).action_type == "leave"
    assert (
        parse_text_action("I have to leave the conversation now.", prefill).action_type == "leave"
    )
    with pytest.raises(InvalidOutput):
        parse_text_action(' "', prefill)


def test_parse_dimension_score() -> None:
    assert parse_dimension_score("-3", DIM).score == -3
    assert parse_dimension_score('{"reasoning": "ok", "score": "-2"}', DIM).score == -2
    with pytest.raises(InvalidOutput, match="outside the range"):
        parse_dimension_score('{"reasoning": "ok", "score": 4}', DIM)
    with pytest.raises(InvalidOutput, match="integer"):
        parse_dimension_score('{"score": -2.5}', DIM)


@pytest.mark.parametrize(
    "answer",
    [
        '{"score": NaN}',
        '{"score": -Infinity}',
        '{"score": -1e400}',
        '[["ok", NaN]]',
        "NaN",
        '{"score": -1' + "0" * 400 + "}",
    ],
)
def test_a_score_that_is_no_number_is_invalid_output(answer: str) -> None:
    """Python's JSON reads NaN, Infinity and numbers too large for a float (as infinity): a
    judge answering one gave no usable score, as with any other score that is not an
    integer."""
    with pytest.raises(InvalidOutput):
        parse_dimension_score(answer, DIM)


@pytest.mark.parametrize(
    "answer",
    [
        '{"action_type": "dance", "argument": "x", "to": []}',
        '{"action_type": "speak", "argument": "", "to": []}',
    ],
)
def test_an_invalid_action_is_explained_in_the_words_the_model_writes(answer: str) -> None:
    """The reason goes to the model on the re-ask and, if that fails too, into the episode's
    error on its page: it names action types as an answer spells them ("speak",
    "non-verbal communication"), never as Python shows its enum members."""
    with pytest.raises(InvalidOutput) as raised:
        parse_action(answer, TYPES, "Alice Smith", ["Bob Jones"])
    message = str(raised.value)
    assert "ActionType" not in message and "<" not in message, message
    assert "speak" in message, message
