"""Types and inputs derived from a record's exposed fields, on a tiny schema built here."""

from dataclasses import asdict
from typing import Annotated

import pytest
import strawberry
from pydantic import BaseModel, Field, StringConstraints, ValidationError

from parley.graph.fields import creates, reads, updates
from parley.resolvers.fields import Exposed, WithId, WriteModel

Short = Annotated[str, StringConstraints(max_length=5)]


class Pet(BaseModel):
    name: str = Field(description="What it answers to.")
    legs: int = Field(default=4, description="How many legs.")
    toys: list[str] = Field(default_factory=list, description="What it plays with.")
    private: str = Field(default="", description="Not exposed.")


PET = Exposed(Pet, {"name": Short, "legs": int, "toys": list[Short]})


@strawberry.type(description="A pet.")
@reads(PET)
class PetType:
    record: strawberry.Private[Pet]

    @strawberry.field(description="Shouted.")
    def loud(self) -> str:
        return self.record.name.upper()


@strawberry.input(description="A new pet.")
@creates(PET)
class NewPetInput:
    id: strawberry.ID | None = strawberry.field(default=None, description="Its id.")


@strawberry.input(description="Changes.")
@updates(PET)
class PetChangesInput:
    id: strawberry.ID = strawberry.field(description="Which pet.")


@strawberry.type
class Query:
    @strawberry.field
    def pet(self, new: NewPetInput, changes: PetChangesInput) -> PetType:
        values = {k: v for k, v in asdict(changes).items() if v is not strawberry.UNSET}
        values.pop("id")
        return PetType(record=Pet(**{**asdict(new), **values}))


SCHEMA = strawberry.Schema(query=Query)


def test_the_sdl_has_every_exposed_field_with_its_description_and_default() -> None:
    sdl = SCHEMA.as_str()
    assert '"""What it answers to."""\n  name: String!\n' in sdl.split("type PetType")[1]
    assert "private" not in sdl
    new = sdl.split("input NewPetInput {")[1].split("}")[0]
    assert '"""What it answers to. Required."""\n  name: String!\n' in new
    assert "legs: Int! = 4" in new and "toys: [String!]! = []" in new
    changes = sdl.split("input PetChangesInput {")[1].split("}")[0]
    assert '"""How many legs. Omit to keep the current value."""\n  legs: Int\n' in changes
    assert sdl.index("  id: ID = null") < sdl.index("name: String!\n", sdl.index("NewPetInput"))


def test_reads_and_writes_go_through_the_derived_fields() -> None:
    result = SCHEMA.execute_sync(
        '{ pet(new: {name: "rex"}, changes: {id: "1", legs: 3}) { name legs toys loud } }'
    )
    assert result.errors is None
    assert result.data == {"pet": {"name": "rex", "legs": 3, "toys": [], "loud": "REX"}}


def test_the_validator_applies_the_limits_and_refuses_unknown_keys() -> None:
    new_pet = PET.validator("NewPet", WithId)
    rex = {"name": "rex"}
    assert new_pet(**rex).model_dump() == {"pk": None, "name": "rex", "legs": 4, "toys": []}
    with pytest.raises(ValidationError, match="at most 5 characters"):
        new_pet(**{"name": "rexford"})
    with pytest.raises(ValidationError, match="Extra inputs"):
        PET.validator("Pet", WriteModel)(**rex, **{"private": "x"})
    with pytest.raises(ValidationError, match="name"):
        new_pet()


def test_an_exposed_field_must_exist_and_be_described() -> None:
    with pytest.raises(ValueError, match="no fields"):
        Exposed(Pet, {"tail": int})

    class Bare(BaseModel):
        colour: str = ""

    with pytest.raises(ValueError, match="no description"):
        Exposed(Bare, {"colour": str}).description("colour")
