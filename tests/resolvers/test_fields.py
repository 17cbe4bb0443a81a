"""`Exposed`: which fields of a record clients write, derived into a validation model."""

import pytest
from pydantic import BaseModel, Field, ValidationError

from parley.core.limits import Name, Tags
from parley.resolvers.fields import Exposed, WriteModel


class Pet(BaseModel):
    name: str = Field(description="What it answers to.")
    tags: list[str] = Field(default_factory=list, description="Labels.")
    owner: str = Field(default="", description="Who keeps it.")
    notes: str = ""


PET = Exposed(Pet, {"name": Name, "tags": Tags, "owner": Name}, must_give=frozenset({"owner"}))


def test_a_field_the_record_lacks_is_refused_at_once() -> None:
    with pytest.raises(ValueError, match=r"Pet has no fields \['color'\]"):
        Exposed(Pet, {"name": Name, "color": Name})


def test_the_record_declares_type_default_and_description() -> None:
    assert (PET.annotation("tags"), PET.default("tags"), PET.description("name")) == (
        list[str],
        [],
        "What it answers to.",
    )
    assert [PET.required(n) for n in ("name", "tags", "owner")] == [True, False, True]
    with pytest.raises(ValueError, match=r"Pet\.notes has no description"):
        PET.description("notes")


def test_the_validator_applies_the_limits_and_refuses_unknown_keys() -> None:
    PetInput = PET.validator("PetInput", WriteModel)
    good = PetInput.model_validate({"name": " Rex ", "owner": "Ann"})
    assert good.model_dump() == {"name": "Rex", "tags": [], "owner": "Ann"}
    for bad in (
        {"name": "Rex"},
        {"name": "", "owner": "Ann"},
        {"name": "Rex", "owner": "A", "notes": ""},
    ):
        with pytest.raises(ValidationError):
            PetInput.model_validate(bad)
