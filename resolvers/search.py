"""RediSearch queries that fetch only the fields a reader needs, in one round trip.

redis-om's `FindQuery.page` sends every matching document whole and rebuilds each through its
own read-side converters (a walk over the whole document per record) before pydantic validates
it; `count` is a second round trip. Here one FT.SEARCH returns the total and the page, with
`RETURN` of just the JSON paths asked for, and each record is validated from those fields alone.
The query string and sort order are redis-om's own, so matches and their order are the same.
"""

import hashlib
import json
from collections.abc import Callable, Collection
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any

from pydantic import BaseModel, create_model

from storage.models import Record
from storage.tracking import Held, TrackedDocuments

DIALECT = "3"
"""For paths: every RETURN value comes back as a JSON array of its matches, so a string, a
number, a list and null read back unambiguously (dialects 1 and 2 send strings bare)."""
WHOLE_DIALECT = "2"
"""For whole documents, which come back as their JSON object either way: dialect 3 parses
queries as dialect 2 does but costs Redis three times as much to send a document (measured:
4.0 against 1.3 ms for 50 stored episodes of 20 turns)."""

WHOLE = "$"
MAX_RESULTS = 1_000_000
"""RediSearch refuses a LIMIT reaching past this (MAXSEARCHRESULTS); such a page is empty."""


class Hit[R: Record]:
    """One match: a digest of what was fetched of it, and its record, built when first read
    (a reader that can answer from the digest alone never pays for the parse)."""

    __slots__ = ("_build", "_record", "version")

    def __init__(self, version: bytes, build: Callable[[], R]) -> None:
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

    @property
    def records(self) -> list[R]:
        return [hit.record for hit in self.hits]


def _names(model: type[Record], fields: Collection[str]) -> frozenset[str]:
    return frozenset({"pk", *fields} & set(model.model_fields))


def _paths(model: type[Record], fields: Collection[str] | None) -> list[str]:
    return [WHOLE] if fields is None else [f"$.{name}" for name in sorted(_names(model, fields))]


def _mostly(model: type[Record], fields: Collection[str] | None) -> Collection[str] | None:
    """None (whole records) for more than half of a model's fields: Redis sends one document
    faster than that many paths of it (measured: 4.2 against 5.4 ms for 50 full episodes)."""
    if fields is None or 2 * len(_names(model, fields)) > len(model.model_fields):
        return None
    return fields


def search_args(
    query: Any, offset: int, limit: int, fields: Collection[str] | None, keys_only: bool = False
) -> list[str | int]:
    """FT.SEARCH for one page of a redis-om FindQuery, returning `fields` (None: all), or only
    the keys."""
    args: list[str | int] = ["FT.SEARCH", query.model.Meta.index_name, query.query]
    args += ["LIMIT", offset, limit]
    args += query.resolve_redisearch_sort_fields() or []
    if keys_only:
        return [*args, "NOCONTENT", "DIALECT", WHOLE_DIALECT]
    paths = _paths(query.model, fields)
    dialect = WHOLE_DIALECT if paths == [WHOLE] else DIALECT
    args += ["RETURN", len(paths), *paths, "DIALECT", dialect]
    return args


async def search(
    query: Any,
    offset: int,
    limit: int,
    fields: Collection[str] | None = None,
    documents: TrackedDocuments | None = None,
) -> Found[Any]:
    """The total number of matches and the hits of one page.

    With `fields`, each record holds those fields as stored (and its pk) and no others (unless
    they are most of the record's, when it is whole). Without, each record is whole, validated as
    `get` does. With `documents` tracking the model's keys, a page whose records are all held
    there costs a search for its keys alone.
    """
    model: type[Record] = query.model
    fields = _mostly(model, fields)
    if offset + limit > MAX_RESULTS:
        offset, limit = 0, 0
    if documents is not None and model.make_key("") in documents.prefixes:
        found = await _tracked_page(documents, query, offset, limit, fields)
        if found is not None:
            return found
    return _found(model, fields, *_hits(await _search(query, offset, limit, fields)))


async def _search(query: Any, offset: int, limit: int, fields: Collection[str] | None) -> Any:
    model: type[Record] = query.model
    args = search_args(query, offset, limit, fields)
    return await model.db().execute_command(*args)  # type: ignore[no-untyped-call]


async def _tracked_page(
    documents: TrackedDocuments,
    query: Any,
    offset: int,
    limit: int,
    fields: Collection[str] | None,
) -> Found[Any] | None:
    """The page through the tracking connection: its keys, each record from what is held or
    else read there (and held from then on); None when not tracking, or when a record went
    away between the search and its read."""
    model: type[Record] = query.model
    paths = tuple(_paths(model, fields))
    raw = await documents.ask(*search_args(query, offset, limit, fields, keys_only=True))
    if raw is None:
        return None
    total, hits = _hits(raw)
    keys = [key for key, _ in hits]
    held = {key: documents.held(key, paths) for key in keys}
    missing = [key for key, h in held.items() if h is None]
    if missing:
        ticket = documents.ticket()
        try:
            read = await documents.read(missing, paths)
            if read is None:
                return None
            for i, key in enumerate(missing):
                values = _as_searched(paths, [texts[i] for texts in read])
                held[key] = kept = Held(values, _version(key, values))
                documents.keep(ticket, key, paths, kept)
        finally:
            documents.release(ticket)
    page = [h for h in (held[key] for key in keys) if h is not None]
    hits = [(key, h.values) for key, h in zip(keys, page, strict=True)]
    return _found(model, fields, total, hits, [h.version for h in page])


def _as_searched(paths: tuple[str, ...], texts: list[str]) -> dict[str, str]:
    """JSON.MGET's answers for one record as FT.SEARCH returns them, so both digest alike: the
    document itself for the whole (dialect 2); for paths, the array of each path's matches
    (dialect 3), leaving out paths the record lacks, as RETURN does."""
    if paths == (WHOLE,):
        return {WHOLE: texts[0][1:-1]}
    return {path: text for path, text in zip(paths, texts, strict=True) if text != "[]"}


def _found(
    model: type[Record],
    fields: Collection[str] | None,
    total: int,
    hits: list[tuple[str, dict[str, str]]],
    versions: list[bytes] | None = None,
) -> Found[Any]:
    versions = versions or [_version(key, values) for key, values in hits]
    if fields is None:
        builds = [partial(_whole, model, key, values) for key, values in hits]
    else:
        part = _part_model(model, _names(model, fields))
        builds = [partial(_part, model, part, key, values) for key, values in hits]
    return Found(total, [Hit(v, b) for v, b in zip(versions, builds, strict=True)])


async def search_all(query: Any, batch: int = 1000) -> list[Any]:
    """Every match of a redis-om FindQuery as whole records, in its order (as `all()` gives)."""
    records: list[Any] = []
    while True:
        found = await search(query, len(records), batch)
        records += found.records
        if not found.hits or len(records) >= found.total:
            return records


def _version(key: str, values: dict[str, str]) -> bytes:
    """SHA-256 of `key NUL path NUL value NUL path ...` (no raw NUL appears in JSON text), fed
    in parts: hashing the stored text is most of a reused page's own work, and SHA-256 runs on
    the CPU's own instructions at about twice blake2b's speed here."""
    digest = hashlib.sha256(key.encode())
    for path in sorted(values):
        digest.update(f"\x00{path}\x00".encode())
        digest.update(values[path].encode())
    return digest.digest()[:16]


def _hits(raw: Any) -> tuple[int, list[tuple[str, dict[str, str]]]]:
    """(total, [(key, {path: JSON text})]) from a RESP3 map or a RESP2 array."""
    if isinstance(raw, dict):
        hits = [(r["id"], r.get("extra_attributes") or {}) for r in raw["results"]]
        return int(raw["total_results"]), hits
    pairs = [(raw[i], raw[i + 1]) for i in range(1, len(raw), 2)]
    return int(raw[0]), [(key, dict(zip(v[::2], v[1::2], strict=True))) for key, v in pairs]


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
