"""RediSearch pages in a list's order, fetching only the fields a reader needs.

A page is two commands sent together: FT.AGGREGATE for the keys of its items, in the list's
order after a position (resolvers/keyset.py), each with its position read from its stored JSON,
and FT.SEARCH ... LIMIT 0 0 for the list's total (FT.AGGREGATE's total_results is not the
number of matches). Each document then comes from what the process holds (storage/tracking.py)
or is read with a JSON.GET of its own, of just the JSON paths asked for, sent together; each
record is validated from those fields alone (redis-om's `FindQuery.page` sends every document
whole and rebuilds each through its own read-side converters before pydantic validates it). The
query string is redis-om's own, so the matches are the same.
"""

import hashlib
import json
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any

import redis.asyncio as redis
from pydantic import BaseModel, create_model
from redis.asyncio.client import Pipeline

from parley.core.errors import searchable_tag
from parley.resolvers.keyset import Keyset, Position, SortKey, SortOrder
from parley.storage.connection import indexes_ready, missing_index, restore_indexes
from parley.storage.models import Record
from parley.storage.tracking import Held, TrackedDocuments

DIALECT = "3"
"""Every JSON path loaded comes back as a JSON array of its matches, so a string, a number and
null read back unambiguously and exactly (dialect 2 prints a number to 12 digits); queries parse
as in dialect 2."""
KEY = "@__key"
WHOLE = "$"


class Hit[R: Record]:
    """One match: where it sits in the list, a digest of what was fetched of it, and its record,
    built when first read (a reader that can answer from the digest alone never pays for the
    parse)."""

    __slots__ = ("_build", "_record", "position", "version")

    def __init__(self, position: Position, version: bytes, build: Callable[[], R]) -> None:
        self.position = position
        """Its values of the list's sort keys, as stored."""
        self.version = version
        """A digest of the key and the stored JSON of the fields fetched: equal digests mean
        equal stored values of those fields."""
        self._build = build
        self._record: R | None = None

    @property
    def record(self) -> R:
        if self._record is None:
            self._record = self._build()
        return self._record


@dataclass(frozen=True)
class Found[R: Record]:
    total: int
    hits: list[Hit[R]]
    has_next: bool
    """More items follow the page."""

    @property
    def records(self) -> list[R]:
        return [hit.record for hit in self.hits]


def _names(model: type[Record], fields: Collection[str]) -> frozenset[str]:
    return frozenset({"pk", *fields} & set(model.model_fields))


def _paths(model: type[Record], fields: Collection[str] | None) -> tuple[str, ...]:
    return (
        (WHOLE,) if fields is None else tuple(f"$.{name}" for name in sorted(_names(model, fields)))
    )


def _mostly(model: type[Record], fields: Collection[str] | None) -> Collection[str] | None:
    """None (whole records) for more than half of a model's fields: Redis sends one document
    faster than that many paths of it (measured: 4.2 against 5.4 ms for 50 full episodes)."""
    if fields is None or 2 * len(_names(model, fields)) > len(model.model_fields):
        return None
    return fields


def page_args(
    query: Any, keyset: Keyset, order: SortOrder, after: Position | None, limit: int
) -> list[str | int]:
    """FT.AGGREGATE for the keys and positions of the first `limit` matches of a redis-om
    FindQuery in `order`, after `after` (None: from the first)."""
    args: list[str | int] = ["FT.AGGREGATE", query.model.Meta.index_name, query.query]
    if after is not None:
        args += ["FILTER", keyset.after(order, after)]
    args += [*keyset.sortby(order), "MAX", limit]
    # A string key's sorted value is the stored string itself (UNF); a number is printed to 12
    # digits, so its stored JSON is loaded. A LOAD after SORTBY reads the page's rows alone.
    loads = [KEY, *(f"$.{key.field}" for key in keyset.keys if key.kind is not str)]
    return [*args, "LOAD", len(loads), *loads, "DIALECT", DIALECT]


def count_args(query: Any) -> list[str | int]:
    """FT.SEARCH for the number of matches of a redis-om FindQuery."""
    index = query.model.Meta.index_name
    return ["FT.SEARCH", index, query.query, "LIMIT", 0, 0, "DIALECT", DIALECT]


async def search(
    query: Any,
    keyset: Keyset,
    order: SortOrder,
    after: Position | None,
    limit: int,
    fields: Collection[str] | None = None,
    documents: TrackedDocuments | None = None,
) -> Found[Any]:
    """The total number of matches, and the hits of the first `limit` after `after` in `order`.

    With `fields`, each record holds those fields as stored (and its pk) and no others (unless
    they are most of the record's, when it is whole). Without, each record is whole, validated as
    `get` does. With `documents` tracking the model's keys, a page whose records are all held
    there costs a search for its keys alone. A record deleted between the search and the read of
    its document is left out.
    """
    model: type[Record] = query.model
    client: redis.Redis = model.db()  # type: ignore[no-untyped-call]
    fields = _mostly(model, fields)
    paths = _paths(model, fields)
    commands = [page_args(query, keyset, order, after, limit + 1), count_args(query)]
    tracking = documents if documents and model.make_key("") in documents.prefixes else None
    await indexes_ready(client)
    try:
        replies, tracking = await _ask(client, tracking, commands)
    except redis.ResponseError as err:
        if not missing_index(err):
            raise
        await restore_indexes(client)  # Redis came back empty (storage/connection.py)
        replies, tracking = await _ask(client, tracking, commands)
    rows = _rows(replies[0], keyset)
    page = [(key, position) for key, position in rows[:limit] if key is not None]
    stored = await _documents(client, tracking, [key for key, _ in page], paths)
    build: Callable[[str, dict[str, str]], Any]
    if fields is None:
        build = partial(_whole, model)
    else:
        build = partial(_part, model, _part_model(model, _names(model, fields)))
    hits = [
        Hit(position, held.version, partial(build, key, held.values))
        for key, position in page
        if (held := stored.get(key)) is not None
    ]
    return Found(_total(replies[1]), hits, len(rows) > limit)


def tag_terms(model: Any, **values: str | None) -> list[Any]:
    """A query term `model.<name> == value` for each value given, its field a TAG field."""
    return [getattr(model, name) == searchable_tag(v) for name, v in values.items() if v]


async def search_all(query: Any, keyset: Keyset, batch: int = 1000) -> list[Any]:
    """Every match of a redis-om FindQuery as whole records, in the list's own order."""
    records: list[Any] = []
    after: Position | None = None
    while True:
        found = await search(query, keyset, keyset.default, after, batch)
        records += found.records
        if not found.has_next or not found.hits:
            return records
        after = found.hits[-1].position


async def _ask(
    client: redis.Redis, tracking: TrackedDocuments | None, commands: Sequence[Sequence[str | int]]
) -> tuple[list[Any], TrackedDocuments | None]:
    """The replies of `commands`, on the tracking connection if it tracks; and whether it did."""
    replies = await tracking.ask_all(commands) if tracking else None
    if replies is None:
        return await _send(client, commands), None
    return replies, tracking


async def _send(client: redis.Redis, commands: Sequence[Sequence[str | int]]) -> list[Any]:
    """The replies of `commands`, sent together on an ordinary connection, as Redis sent them:
    through a pipeline without the client's response callbacks (which parse JSON.GET's text
    once anything has used `client.json()`)."""
    async with Pipeline(client.connection_pool, {}, transaction=False, shard_hint=None) as pipe:
        for command in commands:
            pipe.execute_command(*command)
        return await pipe.execute()


async def _documents(
    client: redis.Redis,
    documents: TrackedDocuments | None,
    keys: list[str],
    paths: tuple[str, ...],
) -> dict[str, Held]:
    """The stored JSON at `paths` of each of `keys` still stored: what `documents` holds, the
    rest read there (and held from then on) or else on an ordinary connection."""
    found: dict[str, Held] = {}
    if documents is not None:
        for key in keys:
            held = documents.held(key, paths)
            if held is not None:
                found[key] = held
        keys = [key for key in keys if key not in found]
        if not keys:
            return found
        ticket = documents.ticket()
        try:
            texts = await documents.read(keys, paths)
            if texts is not None:
                for key, held in _stored(keys, paths, texts):
                    found[key] = held
                    documents.keep(ticket, key, paths, held)
                return found
        finally:
            documents.release(ticket)
    texts = await _send(client, [("JSON.GET", key, *paths) for key in keys])
    found.update(_stored(keys, paths, texts))
    return found


def _stored(
    keys: list[str], paths: tuple[str, ...], texts: list[str | None]
) -> list[tuple[str, Held]]:
    """Each key's JSON.GET answer as held, leaving out the keys that are gone."""
    out = []
    for key, text in zip(keys, texts, strict=True):
        if text is not None:
            values = _as_fetched(paths, text)
            out.append((key, Held(values, _version(key, values))))
    return out


def _as_fetched(paths: tuple[str, ...], text: str) -> dict[str, str]:
    """A JSON.GET answer per path: the document itself for the whole; for paths, the JSON
    array of each path's matches, leaving out paths the record lacks (several paths come as one
    object of such arrays, each written out again)."""
    if paths == (WHOLE,):
        return {WHOLE: text[1:-1]}
    if len(paths) == 1:
        return {paths[0]: text} if text != "[]" else {}
    matches: dict[str, list[Any]] = json.loads(text)
    return {
        path: json.dumps(found, ensure_ascii=False, separators=(",", ":"))
        for path, found in matches.items()
        if found
    }


def _rows(raw: Any, keyset: Keyset) -> list[tuple[str | None, Position]]:
    """(key, position) of each row of an FT.AGGREGATE reply, RESP3 (a map) or RESP2 (arrays).
    A row has no key when RediSearch cannot load it (a key holding a NUL)."""
    if isinstance(raw, dict):
        rows = [r.get("extra_attributes") or {} for r in raw["results"]]
    else:
        rows = [dict(zip(r[::2], r[1::2], strict=True)) for r in raw[1:]]
    if len(keyset.keys) == 1 and keyset.keys[0].kind is str:  # by id: the common case, quick
        field = keyset.keys[0].field
        return [(row.get(KEY[1:]), (row.get(field),)) for row in rows]
    return [(row.get(KEY[1:]), tuple(_value(key, row) for key in keyset.keys)) for row in rows]


def _value(key: SortKey, row: dict[str, str]) -> Any:
    """A row's value of a sort key, None when it has none."""
    if key.kind is str:
        return row.get(key.field)
    return _first(row.get(f"$.{key.field}"))


def _first(text: str | None) -> Any:
    """The first match of a loaded path (a JSON array), None when it has none."""
    matches = json.loads(text) if text is not None else []
    return matches[0] if matches else None


def _total(raw: Any) -> int:
    return int(raw["total_results"] if isinstance(raw, dict) else raw[0])


def _version(key: str, values: dict[str, str]) -> bytes:
    """SHA-256 of `key NUL path NUL value NUL path ...` (no raw NUL appears in JSON text), fed
    in parts: hashing the stored text is most of a reused page's own work, and SHA-256 runs on
    the CPU's own instructions at about twice blake2b's speed here."""
    digest = hashlib.sha256(key.encode())
    for path in sorted(values):
        digest.update(f"\x00{path}\x00".encode())
        digest.update(values[path].encode())
    return digest.digest()[:16]


def _pk(model: type[Record], key: str, doc: dict[str, Any]) -> str:
    pk = doc.get("pk")
    return pk if isinstance(pk, str) else key.removeprefix(model.make_key(""))


def _whole[R: Record](model: type[R], key: str, values: dict[str, str]) -> R:
    doc: dict[str, Any] = json.loads(values[WHOLE])
    return model.model_validate({**doc, "pk": _pk(model, key, doc)})


def _part[R: Record](model: type[R], part: type[BaseModel], key: str, values: dict[str, str]) -> R:
    doc = {path[2:]: json.loads(text)[0] for path, text in values.items()}
    doc["pk"] = _pk(model, key, doc)
    return _holding(model, part.model_validate(doc).__dict__)


def _holding[R: Record](model: type[R], values: dict[str, Any]) -> R:
    """A `model` holding just `values`, as `model_construct` makes one but without filling in
    the other fields' defaults (that cost more than the rest of the read). A field left out
    reads as redis-om's class attribute, a query expression, never as data; which fields each
    GraphQL field needs is declared beside it (graph/projection.py) and tested field by field."""
    record = model.__new__(model)
    object.__setattr__(record, "__dict__", dict(values))
    object.__setattr__(record, "__pydantic_fields_set__", set(values))
    object.__setattr__(record, "__pydantic_extra__", {})
    object.__setattr__(record, "__pydantic_private__", None)
    return record


@lru_cache(maxsize=512)
def _part_model(model: type[Record], fields: frozenset[str]) -> type[BaseModel]:
    """A model of some of `model`'s fields, validating each exactly as `model` does."""
    declared = {
        name: (model.model_fields[name].annotation, model.model_fields[name]) for name in fields
    }
    return create_model(f"{model.__name__}Part", __config__=model.model_config, **declared)  # type: ignore[call-overload,no-any-return]
