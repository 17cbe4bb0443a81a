"""Evaluation dimension lists: Sotopia CustomEvaluationDimension[List] records."""

from collections.abc import Iterable, Sequence
from typing import Annotated, Any

import redis.asyncio as redis
from pydantic import AfterValidator, BaseModel, Field, model_validator

from parley.core.errors import ErrorCode, UserError, not_found, validated
from parley.core.limits import LIST_MAX, LongText, Name, RecordId, has_utf8_form
from parley.engine.types import OVERALL_SCORE
from parley.storage.models import CustomEvaluationDimension, CustomEvaluationDimensionList
from parley.storage.records import exist, get_or_none, insert, remove, save_all
from parley.storage.results_index import OVERALL, ResultsIndex

ScoreBound = Annotated[int, Field(ge=-1000, le=1000)]
RESERVED = (OVERALL, OVERALL_SCORE)
"""Names that mean the overall score: results call it `overall`, Sotopia's rewards keep it as
`overall_score` beside the dimensions' scores."""


def name_problem(name: str) -> str | None:
    """Why a judge's results could not carry a dimension of this name, in plain words; None when
    they can. RediSearch cuts the JSONPath of a score at a NUL (tests/storage/
    test_results_index.py: every other character reads back), and a lone surrogate has no
    UTF-8 form to store."""
    if "\x00" in name or not has_utf8_form(name):
        return "a dimension name cannot contain NUL or a lone surrogate"
    if name in RESERVED:
        return f"the dimension name {name!r} is reserved for the overall score: choose another"
    return None


def names_problem(names: Sequence[str]) -> str | None:
    """Why an episode cannot be judged on dimensions of these names (a list another writer
    stored may hold any), in plain words; None when it can."""
    for name in names:
        problem = name_problem(name)
        if problem is not None:
            return problem
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        return f"two dimensions are named {twice[0]!r}: each needs a name of its own"
    return None


def _usable(name: str) -> str:
    problem = name_problem(name)
    if problem is not None:
        raise ValueError(problem)
    return name


DimensionName = Annotated[Name, AfterValidator(_usable)]


class DimensionFields(BaseModel, extra="forbid"):
    name: DimensionName
    description: LongText = ""
    range_low: ScoreBound
    range_high: ScoreBound

    @model_validator(mode="after")
    def ordered_range(self) -> "DimensionFields":
        if self.range_low >= self.range_high:
            raise ValueError(
                f"range_low ({self.range_low}) must be below range_high ({self.range_high})"
            )
        return self


class NewDimensionList(BaseModel, extra="forbid"):
    pk: RecordId | None = None
    name: Name
    dimensions: Annotated[list[DimensionFields], Field(min_length=1, max_length=LIST_MAX)]

    @model_validator(mode="after")
    def unique_names(self) -> "NewDimensionList":
        names = [d.name.lower() for d in self.dimensions]
        if len(set(names)) != len(names):
            raise ValueError("dimension names must be unique within a list")
        return self


async def get_dimension_list(pk: str) -> CustomEvaluationDimensionList | None:
    return await get_or_none(CustomEvaluationDimensionList, pk)


async def list_dimension_lists() -> list[CustomEvaluationDimensionList]:
    return list(await CustomEvaluationDimensionList.find().sort_by("pk").all())


async def dimensions_of(record: CustomEvaluationDimensionList) -> list[CustomEvaluationDimension]:
    """The list's dimensions in stored order; dangling ids are skipped."""
    found = [await get_or_none(CustomEvaluationDimension, pk) for pk in record.dimension_pks]
    return [d for d in found if d is not None]


async def list_problem(list_id: str) -> str | None:
    """Why the stored list cannot judge an episode (names_problem), saying which list; None when
    it can or is not stored."""
    record = await get_dimension_list(list_id)
    if record is None:
        return None
    problem = names_problem([d.name for d in await dimensions_of(record)])
    return None if problem is None else f"evaluation dimension list {list_id!r}: {problem}"


async def index_dimensions(
    client: redis.Redis, names: Iterable[str], field: list[str]
) -> list[UserError]:
    """Give the names score fields in the results indexes, before anything that holds them is
    stored, so that results cover it from the start; a user error on `field` when that would
    pass the cap on indexed names (storage/results_index.py), and then nothing is written."""
    refused = await ResultsIndex(client).add_dimensions(names)
    return [] if refused is None else [UserError(field, str(refused), ErrorCode.INVALID)]


async def create_dimension_list(
    client: redis.Redis, fields: dict[str, Any]
) -> tuple[CustomEvaluationDimensionList | None, list[UserError]]:
    """Validate, give the dimensions results (index_dimensions), then store the list."""
    valid, errors = validated(NewDimensionList, fields)
    if valid is None:
        return None, errors
    # Compared here, not searched: redis-om leaves some characters (a tab, `?`, NUL) unescaped
    # in a query, which RediSearch then refuses.
    taken = [r for r in await list_dimension_lists() if r.name.lower() == valid.name.lower()]
    if taken:
        message = f"an evaluation dimension list named {valid.name!r} exists"
        return None, [UserError(["input", "name"], message, ErrorCode.CONFLICT)]
    if (
        valid.pk is not None
        and (await exist(client, [(CustomEvaluationDimensionList, valid.pk)]))[0]
    ):
        return None, [UserError(["input", "id"], f"id {valid.pk!r} is taken", ErrorCode.CONFLICT)]
    names = [d.name for d in valid.dimensions]
    errors = await index_dimensions(client, names, ["input", "dimensions"])
    if errors:
        return None, errors
    dimensions = [CustomEvaluationDimension(**d.model_dump()) for d in valid.dimensions]
    record = CustomEvaluationDimensionList(
        pk=valid.pk, name=valid.name, dimension_pks=[d.pk for d in dimensions]
    )
    stored, errors = await insert(record)
    if stored is not None:
        await save_all(CustomEvaluationDimension, dimensions)
    return stored, errors


async def delete_dimension_list(pk: str) -> list[UserError]:
    """Delete the list and those of its dimensions no other list uses."""
    record = await get_dimension_list(pk)
    if record is None:
        return [not_found("evaluation dimension list", pk)]
    others = [r for r in await list_dimension_lists() if r.pk != pk]
    shared = {d for other in others for d in other.dimension_pks}
    unshared = [d for d in record.dimension_pks if d not in shared]
    await remove(CustomEvaluationDimension, *unshared)
    await remove(CustomEvaluationDimensionList, pk)
    return []
