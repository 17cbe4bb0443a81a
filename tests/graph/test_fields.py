"""Types and inputs derived from a record's exposed fields, on a tiny schema built here."""

from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Annotated

import pytest
import strawberry
from pydantic import BaseModel, Field, StringConstraints, ValidationError

from parley.graph.fields import copied, creates, reads, shows, stored, updates, wrapped
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


@dataclass
class Tally:
    """A record that is a dataclass, held by its type under its own name."""

    done: int
    rate: float | None
    note: str = ""


@strawberry.type(description="How far it got.")
@shows(Tally, held_as="tally")
class TallyType:
    tally: strawberry.Private[Tally]

    done = stored("Finished.")
    rate = stored("Per minute.")


@strawberry.type(description="The same, read where a record is held by default.")
@shows(Tally)
class MisheldTally:
    tally: strawberry.Private[Tally]

    done = stored("Finished.")


class Kind(Enum):
    FRIEND = "FRIEND"
    STRANGER = "STRANGER"


class Link(BaseModel):
    """A source with a field its GraphQL type leaves out."""

    kind: Kind
    story: str
    weight: float = 0.0


@strawberry.type(description="A link between two pets.")
class LinkType:
    kind: Kind = strawberry.field(description="What kind.")
    story: str = strawberry.field(description="How it came about.")


@strawberry.type
class Held:
    @strawberry.field
    def tally(self) -> TallyType:
        return TallyType(tally=Tally(done=3, rate=None, note="x"))

    @strawberry.field
    def misheld(self) -> MisheldTally:
        return MisheldTally(tally=Tally(done=3, rate=None))

    @strawberry.field
    def pet(self, name: str) -> PetType | None:
        return wrapped(PetType, Pet(name=name) if name != "nobody" else None)

    @strawberry.field
    def link(self) -> LinkType:
        return copied(LinkType, Link(kind=Kind.FRIEND, story="met at the park", weight=2.0))


HELD = strawberry.Schema(query=Held)


def test_shows_held_as_reads_the_record_from_the_named_field_typed_as_the_dataclass() -> None:
    tally = HELD.as_str().split("type TallyType {")[1].split("}")[0]
    assert (
        '"""Finished."""\n  done: Int!' in tally and '"""Per minute."""\n  rate: Float\n' in tally
    )
    result = HELD.execute_sync("{ tally { done rate } }")
    assert result.errors is None
    assert result.data == {"tally": {"done": 3, "rate": None}}
    assert Reads.of_type(TallyType).fields == {"done": ("done",), "rate": ("rate",)}


def test_a_record_held_elsewhere_than_shows_says_is_an_error_not_a_value() -> None:
    """Without held_as the field reads `self.record`, which this type does not have."""
    result = HELD.execute_sync("{ misheld { done } }")
    assert result.data is None
    assert result.errors is not None and "record" in result.errors[0].message


def test_a_stored_field_must_be_the_dataclass_records() -> None:
    with pytest.raises(ValueError, match="Tally has no field rating"):

        @shows(Tally, held_as="tally")
        class Rating:
            rating = stored("No such field.")


def test_wrapped_gives_null_for_no_record_and_the_type_around_a_record() -> None:
    pet = Pet(name="rex")
    made = wrapped(PetType, pet)
    assert isinstance(made, PetType) and made.record is pet
    assert wrapped(PetType, None) is None
    result = HELD.execute_sync(
        '{ rex: pet(name: "rex") { name loud } none: pet(name: "nobody") { name } }'
    )
    assert result.errors is None  # not PetType(record=None), whose fields fail to read
    assert result.data == {"rex": {"name": "rex", "loud": "REX"}, "none": None}


def test_copied_takes_each_field_of_the_type_from_the_source_and_nothing_else() -> None:
    result = HELD.execute_sync("{ link { kind story } }")
    assert result.errors is None
    assert result.data == {"link": {"kind": "FRIEND", "story": "met at the park"}}
    link = copied(LinkType, Link(kind=Kind.STRANGER, story="", weight=9.0))
    assert (link.kind, link.story) == (Kind.STRANGER, "")
    assert not hasattr(link, "weight")


def test_copied_passes_no_field_the_constructor_does_not_take() -> None:
    @dataclass
    class Totalled:
        done: int
        failed: int
        total: int = field(init=False)

        def __post_init__(self) -> None:
            self.total = self.done + self.failed

    source = Tally(done=2, rate=None)
    source.failed = 1  # type: ignore[attr-defined]
    source.total = 99  # type: ignore[attr-defined]
    assert copied(Totalled, source).total == 3  # computed, not the source's


def test_copied_from_a_source_missing_a_field_fails_by_its_name() -> None:
    """Never a type with a silently defaulted field."""

    class Partial(BaseModel):
        kind: Kind

    with pytest.raises(AttributeError, match="story"):
        copied(LinkType, Partial(kind=Kind.FRIEND))
