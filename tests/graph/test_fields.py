"""Types and inputs derived from a record's exposed fields, on a tiny schema built here."""

from dataclasses import asdict
from typing import Annotated

import pytest
import strawberry
from pydantic import BaseModel, Field, StringConstraints, ValidationError

from parley.graph.fields import creates, reads, shows, stored, updates
from parley.graph.projection import Reads, reading
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


class Visit(BaseModel):
    """A record clients only read."""

    pet: str
    minutes: float | None = None
    seconds: float = 0.0
    stats: dict[str, float] = {}
    hidden: str = ""


def whole(seconds: float) -> int:
    return round(seconds)


@strawberry.type(description="A visit.")
@shows(Visit)
class VisitType:
    record: strawberry.Private[Visit]

    minutes = stored("How long.")

    @strawberry.field(description="Whose.", metadata=reading("pet"))
    def who(self) -> str:
        return self.record.pet.title()

    seconds = stored("Seconds, rounded.", whole)
    stats = stored("Counts.")


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

    @strawberry.field
    def visit(self) -> VisitType:
        return VisitType(
            record=Visit(pet="rex", minutes=90, seconds=2.6, stats={"barks": 3}, hidden="x")
        )


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


def test_a_shown_record_gives_each_stored_field_in_its_place_typed_as_stored() -> None:
    visit = SCHEMA.as_str().split("type VisitType {")[1].split("}")[0]
    assert visit.split("\n\n") == [
        '\n  """How long."""\n  minutes: Float',
        '  """Whose."""\n  who: String!',
        '  """Seconds, rounded."""\n  seconds: Int!',
        '  """Counts."""\n  stats: JSON!\n',
    ]
    result = SCHEMA.execute_sync("{ visit { minutes who seconds stats } }")
    assert result.errors is None
    assert result.data == {
        "visit": {"minutes": 90.0, "who": "Rex", "seconds": 3, "stats": {"barks": 3.0}}
    }
    assert Reads.of_type(VisitType).fields == {
        "minutes": ("minutes",),
        "who": ("pet",),
        "seconds": ("seconds",),
        "stats": ("stats",),
    }


def test_a_stored_field_must_be_the_records() -> None:
    with pytest.raises(ValueError, match="Visit has no field tail"):

        @shows(Visit)
        class Tail:
            tail = stored("No such field.")
