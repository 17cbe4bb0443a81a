"""The limits every input that writes a record obeys."""

import pytest
from pydantic import TypeAdapter, ValidationError

from parley.core.limits import NAME_MAX, Name, RecordId, has_utf8_form


def test_a_lone_surrogate_has_no_utf8_form() -> None:
    assert has_utf8_form("Zoë 😀")
    assert not has_utf8_form("half \ud800 a pair")


def test_a_name_is_stripped_and_between_one_and_the_most_characters() -> None:
    names = TypeAdapter(Name)
    assert names.validate_python("  Ada  ") == "Ada"
    for bad in ("   ", "x" * (NAME_MAX + 1)):
        with pytest.raises(ValidationError):
            names.validate_python(bad)


@pytest.mark.parametrize("pk", ["a", "agent_1.v-2", "x" * 100])
def test_record_ids_of_the_pattern_are_accepted(pk: str) -> None:
    assert TypeAdapter(RecordId).validate_python(pk) == pk


@pytest.mark.parametrize("pk", ["", "has space", "a/b", "x" * 101, "ünï"])
def test_other_record_ids_are_refused(pk: str) -> None:
    with pytest.raises(ValidationError):
        TypeAdapter(RecordId).validate_python(pk)
