"""Record helpers shared by the resolvers: lookups and validated partial updates."""

from typing import Any

import redis.asyncio as redis
from aredis_om import NotFoundError
from pydantic import BaseModel, ValidationError

from resolvers.errors import ErrorCode, UserError, from_validation
from resolvers.limits import has_utf8_form
from storage.models import Record


def storable(pk: str) -> bool:
    """Whether `pk` could name a stored record: 1..200 characters with a UTF-8 form."""
    return 0 < len(pk) <= 200 and has_utf8_form(pk)


async def get_or_none[R: Record](model: type[R], pk: str) -> R | None:
    if not storable(pk):
        return None
    try:
        return await model.get(pk)
    except NotFoundError:
        return None


async def update_fields[R: Record](
    record: R, schema: type[BaseModel], changes: dict[str, Any]
) -> tuple[R | None, list[UserError]]:
    """Validate the record with `changes` applied against `schema`, then save it."""
    current = {name: getattr(record, name) for name in schema.model_fields}
    try:
        valid = schema(**{**current, **changes})
    except ValidationError as err:
        return None, from_validation(err)
    for name, value in valid.model_dump().items():
        setattr(record, name, value)
    await record.save()
    return record, []


async def insert[R: Record](record: R) -> list[UserError]:
    """Save a new record; a taken primary key is a conflict, never an overwrite."""
    if await record.save(nx=True) is None:
        return [UserError(["input", "id"], f"id {record.pk!r} is taken", ErrorCode.CONFLICT)]
    return []


async def exist(client: redis.Redis, refs: list[tuple[type[Record], str]]) -> list[bool]:
    """Whether each (model, pk) is stored, in one round trip."""
    async with client.pipeline(transaction=False) as pipe:
        for model, pk in refs:
            pipe.exists(model.make_primary_key(pk))
        found: list[int] = await pipe.execute()
    return [bool(n) for n in found]
