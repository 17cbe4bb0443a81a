"""Validation errors in a person's words: no pydantic phrasing, the list's noun, the limit."""

import pytest
from pydantic import BaseModel, Field, ValidationError

from parley.core.wording import problems, summary


class Start(BaseModel):
    agent_ids: list[str] = Field(min_length=2)
    dimensions: list[str] = Field(default_factory=list, max_length=1)
    turns: int = Field(default=1, ge=1, le=20)
    scenario_id: str = Field(default="s", min_length=1)


def errors_of(data: dict[str, object]) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        Start.model_validate(data)
    return caught.value


def test_sizes_name_what_the_list_holds_and_how_many_were_given() -> None:
    found = problems(errors_of({"agent_ids": ["a"], "dimensions": ["x", "y"]}))
    assert found == [
        (("agent_ids",), "pick at least 2 agents (1 given)"),
        (("dimensions",), "at most 1 dimension (2 given)"),
    ]


def test_numbers_and_choices_are_said_in_words() -> None:
    found = dict(problems(errors_of({"agent_ids": ["a", "b"], "turns": 0, "scenario_id": ""})))
    assert found == {("turns",): "must be at least 1", ("scenario_id",): "pick a scenario"}


def test_the_summary_is_one_line_with_each_place() -> None:
    text = summary(errors_of({"agent_ids": "no", "turns": "many"}))
    assert text == "agent_ids: must be a list; turns: must be a whole number"
    assert "pydantic" not in text
