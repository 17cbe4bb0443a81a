"""Record helpers shared by the resolvers: lookups, inserts, validated partial updates and
deletions."""

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import redis.asyncio as redis
from aredis_om import NotFoundError
from pydantic import BaseModel

from parley.core.errors import ErrorCode, UserError, not_found, validated
from parley.core.limits import has_utf8_form
from parley.storage import keys
from parley.storage.models import EpisodeLog, Record


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


async def get_many[R: Record](
    client: redis.Redis, model: type[R], pks: list[str]
) -> list[R | None]:
    """Several records in one round trip, in the order asked, None where missing."""
    if not pks:
        return []
    keys = [model.make_primary_key(pk) for pk in pks]
    documents: list[Any] = await client.json().mget(keys, "$")
    return [model.model_validate(doc[0]) if doc else None for doc in documents]


UPDATE_ATTEMPTS = 20
"""Reads of a record an update makes while other writers keep changing it, before it gives up."""


async def update_fields[R: Record](
    client: redis.Redis,
    model: type[R],
    pk: str,
    kind: str,
    schema: type[BaseModel],
    changes: dict[str, Any],
    check: Callable[[R], Awaitable[list[UserError]]] | None = None,
) -> tuple[R | None, list[UserError]]:
    """Change the fields `changes` names, and only them, at once; the record as stored after.

    The record is read under WATCH, checked (`check`, then the record with `changes` applied
    against `schema`), and each changed field written to its own JSON path in one MULTI/EXEC. A
    field another writer changes meanwhile is kept: a write to the record between the read and
    EXEC makes EXEC fail, and the update starts again from the record as it is then. Two
    writers of one field: the last to write wins. `kind` names the record in words (`agent`).
    """
    key = model.make_primary_key(pk)
    if not storable(pk):
        return None, [not_found(kind, pk)]
    for _ in range(UPDATE_ATTEMPTS):
        async with client.pipeline(transaction=True) as pipe:
            await pipe.watch(key)
            document: dict[str, Any] | None = await pipe.json().get(key)  # type: ignore[assignment]
            if document is None:
                return None, [not_found(kind, pk)]
            record = model.model_validate({**document, "pk": pk})
            errors = await check(record) if check is not None else []
            if errors:
                return None, errors
            current = {name: getattr(record, name) for name in schema.model_fields}
            valid, errors = validated(schema, {**current, **changes})
            if valid is None:
                return None, errors
            changed = set(changes) & set(schema.model_fields)
            for name, value in valid.model_dump(include=changed).items():
                setattr(record, name, value)
            pipe.multi()  # type: ignore[no-untyped-call]
            for name, value in record.model_dump(mode="json", include=changed).items():
                pipe.json().set(key, f"$.{name}", value)
            try:
                await pipe.execute()
            except redis.WatchError:
                continue
            return record, []
    message = f"the {kind} kept changing while this update was made: send it again"
    return None, [UserError(["input", "id"], message, ErrorCode.CONFLICT)]


async def insert[R: Record](record: R) -> tuple[R | None, list[UserError]]:
    """Save a new record: it, or None when its primary key is taken (a conflict, never an
    overwrite)."""
    if await record.save(nx=True) is None:
        return None, [UserError(["input", "id"], f"id {record.pk!r} is taken", ErrorCode.CONFLICT)]
    return record, []


async def save_all[R: Record](model: type[R], records: Sequence[R]) -> None:
    """Save records of one model in one round trip (a stored one is overwritten)."""
    await model.add(list(records))


async def remove(model: type[Record], *pks: str) -> None:
    """Delete the records of `model` with primary keys `pks`."""
    for pk in pks:
        await model.delete(pk)


async def insert_new(client: redis.Redis, records: Sequence[Record]) -> list[bool]:
    """Save each record unless its key is taken, in one round trip: whether each was saved.
    What redis-om's save(nx=True) writes, without its slow generic encoder. Episodes raise
    `keys.SCORES_VERSION` (a tag's episodes may have changed)."""
    async with client.pipeline(transaction=False) as pipe:
        for record in records:
            key = type(record).make_primary_key(str(record.pk))
            pipe.execute_command("JSON.SET", key, "$", record.model_dump_json(), "NX")
        if any(isinstance(record, EpisodeLog) for record in records):
            pipe.incr(keys.SCORES_VERSION)
        results: list[Any] = await pipe.execute()
    return [bool(result) for result in results[: len(records)]]


async def exist(client: redis.Redis, refs: list[tuple[type[Record], str]]) -> list[bool]:
    """Whether each (model, pk) is stored, in one round trip."""
    async with client.pipeline(transaction=False) as pipe:
        for model, pk in refs:
            pipe.exists(model.make_primary_key(pk))
        found: list[int] = await pipe.execute()
    return [bool(n) for n in found]
