"""Expected failures as data: field paths in GraphQL's names, and filter values a search can
express."""

import pytest
from pydantic import BaseModel, ValidationError

from parley.core.errors import (
    BadArgument,
    ErrorCode,
    UserError,
    camel,
    from_validation,
    not_found,
    searchable_tag,
)
from parley.core.limits import RecordId


class Pick(BaseModel):
    pk: RecordId
    agent_ids: list[str]


def test_stored_names_become_graphql_names() -> None:
    assert [camel(n) for n in ("pk", "first_name", "agent_goals", "age")] == [
        "id",
        "firstName",
        "agentGoals",
        "age",
    ]


def test_each_validation_error_is_an_invalid_user_error_on_its_graphql_path() -> None:
    with pytest.raises(ValidationError) as caught:
        Pick.model_validate({"pk": "a b", "agent_ids": ["x", 3]})
    assert from_validation(caught.value) == [
        UserError(
            ["input", "id"], "an id is 1 to 100 letters, digits, '_', '-' or '.'", ErrorCode.INVALID
        ),
        UserError(["input", "agentIds", "1"], "must be text", ErrorCode.INVALID),
    ]


def test_not_found_names_the_kind_and_the_id() -> None:
    assert not_found("agent", "a1") == UserError(
        ["input", "id"], "no agent with id 'a1'", ErrorCode.NOT_FOUND
    )


def test_a_value_a_search_can_express_passes_unchanged() -> None:
    assert searchable_tag("a|b c") == "a|b c"


@pytest.mark.parametrize("value", ["", "|", "||", "a\x00b", "a\x7fb", "\udc00"])
def test_a_value_no_search_can_express_is_a_bad_argument(value: str) -> None:
    with pytest.raises(BadArgument, match=r"cannot be '\|' alone or empty"):
        searchable_tag(value)
