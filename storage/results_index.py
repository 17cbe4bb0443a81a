"""The results indexes: each seat's model, agent and scores as fields RediSearch aggregates.

Two indexes of the same schema: one over the episodes themselves (Sotopia's EpisodeLog prefix,
so records Sotopia wrote are covered with no extra writes), one over the evaluation records a
re-judging writes. Rewards are Sotopia's `[[overall, {dimension: score}], ...]` per seat; a
failed evaluation's bare `0.0` has no such paths, so it simply has no score fields.

Only the first two seats are indexed (Sotopia's episodes have two). A dimension gets a field per
seat when its name first appears (`add_dimensions`: claimed, then FT.ALTER, before anything
that holds it is stored); Sotopia's seven are there from the start. RediSearch allows 1,024
fields per index and a field can never be taken out again, so the names are capped
(MAX_DIMENSIONS), and the cap is counted in Redis by one script over the set of claimed names,
so that processes creating dimension lists at once cannot together pass it.
"""

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

import redis.asyncio as redis

from parley.engine.types import SOTOPIA_DIMENSIONS
from parley.storage import keys
from parley.storage.scripts import Script

log = logging.getLogger(__name__)

SEATS = (0, 1)
OVERALL = "overall"
"""The per-seat overall score (Sotopia's `rewards[seat][0]`, the mean of its dimensions)."""
STANDARD = tuple(d.name for d in SOTOPIA_DIMENSIONS)
SEPARATOR = "\x1f"
"""Tags are never split: no stored value holds this control character."""

TAGS: dict[str, str] = {
    "scenario": "$.environment",
    "tag": "$.tag",
    "experiment": "$.experiment_id",
    "arm": "$.arm",
    "status": "$.status",
    "judge": "$.models[0]",
    "model_0": "$.models[1]",
    "model_1": "$.models[2]",
    "agent_0": "$.agents[0]",
    "agent_1": "$.agents[1]",
    "dim_list": "$.evaluation_dimension_list_id",
    "evaluation": "$.evaluation",
}
"""Field name -> JSONPath. Every field is SORTABLE, so GROUPBY reads the index, not the JSON."""

_PLAIN = re.compile(r"[A-Za-z0-9_]+")
BATCH = 1000


def score_field(seat: int, dimension: str) -> str:
    """The index field of one seat's score on a dimension (`overall` for the overall score)."""
    if dimension == OVERALL:
        return f"s{seat}_overall"
    if _PLAIN.fullmatch(dimension):
        return f"s{seat}_d_{dimension}"
    return f"s{seat}_h_{dimension.encode().hex()}"


def score_path(seat: int, dimension: str) -> str:
    if dimension == OVERALL:
        return f"$.rewards[{seat}][0]"
    quoted = dimension.replace("\\", "\\\\").replace('"', '\\"')
    return f'$.rewards[{seat}][1]["{quoted}"]'


def _score_schema(dimensions: Iterable[str]) -> list[str]:
    args: list[str] = []
    for dimension in dimensions:
        for seat in SEATS:
            args += [score_path(seat, dimension), "AS", score_field(seat, dimension)]
            args += ["NUMERIC", "SORTABLE"]
    return args


def _tag_schema(names: Iterable[str]) -> list[str]:
    args: list[str] = []
    for name in names:
        args += [TAGS[name], "AS", name, "TAG", "SEPARATOR", SEPARATOR, "CASESENSITIVE", "SORTABLE"]
    return args


def _schema(dimensions: Iterable[str]) -> list[str]:
    return _tag_schema(TAGS) + _score_schema(dimensions)


INDEXES = {
    keys.RESULTS_INDEX: f":{keys.SOTOPIA_LOGS_MODULE}.EpisodeLog:",
    keys.EVALUATIONS_INDEX: keys.EVALUATION_PREFIX,
}
"""Index name -> the key prefix it covers."""

FIELD_LIMIT = 1024
"""Fields RediSearch allows in one index."""
MAX_DIMENSIONS = 400
"""Distinct dimension names besides Sotopia's seven that get score fields (README, "Limits").
Each takes a field per seat, on top of the tag fields and those of the overall score and
Sotopia's seven: 11 + 2 * (1 + 7 + 400) = 827 of the 1,024, leaving room for fields to come."""
assert len(TAGS) + len(SEATS) * (1 + len(STANDARD) + MAX_DIMENSIONS) <= FIELD_LIMIT - 150


class ClaimKeys(NamedTuple):
    names: str
    """The set of indexed dimension names."""


class ClaimArgs(NamedTuple):
    cap: int


CLAIM = Script("claim_dimensions", ClaimKeys, ClaimArgs)


@dataclass(frozen=True)
class CapReached:
    """Dimension names refused: with them, more than MAX_DIMENSIONS would be indexed."""

    indexed: int
    new: int

    def __str__(self) -> str:
        return (
            f"at most {MAX_DIMENSIONS} dimension names besides Sotopia's seven can have "
            f"results: {self.indexed} have, and {self.new} would be new"
        )


def custom(dimensions: Iterable[str]) -> list[str]:
    """The distinct names among `dimensions` that are not always indexed."""
    fixed = {OVERALL, *STANDARD}
    return [d for d in dict.fromkeys(dimensions) if d not in fixed]


def dimension_of(field: str) -> str | None:
    """The dimension name of seat 0's score field (None for any other field)."""
    if field.startswith("s0_d_"):
        return field.removeprefix("s0_d_")
    if field.startswith("s0_h_"):
        try:
            return bytes.fromhex(field.removeprefix("s0_h_")).decode()
        except ValueError:
            return None
    return None


@dataclass
class ResultsIndex:
    """Creates the indexes, and adds a dimension's score fields the first time it is seen."""

    client: redis.Redis

    async def add_dimensions(self, dimensions: Iterable[str]) -> CapReached | None:
        """Claim the names, all or none, within MAX_DIMENSIONS, then give them score fields; a
        refusal writes nothing. Call it before storing what holds the names, so that results
        cover it from the start."""
        names = custom(dimensions)
        refused = await self._claim(names)
        if refused is None:
            await self.ensure_dimensions(names)
        return refused

    async def prepare(self) -> None:
        """At start-up: create the indexes, and give fields to every claimed name and to the
        stored dimensions that have none (a list Sotopia wrote) within the cap. Never fails on
        the data it finds: names past the cap, or an index RediSearch refuses, are logged as a
        warning and left out."""
        try:
            indexed = await self._indexed_names()
            if indexed:  # what an older Parley added without claiming counts too
                await self.client.sadd(keys.INDEXED_DIMENSIONS, *indexed)
            refused = []
            for name in sorted(set(custom(await self._stored_names())) - set(indexed)):
                if await self._claim([name]) is not None:
                    refused.append(name)
            await self.ensure_dimensions(await self._claimed())
        except redis.ResponseError as err:
            log.warning("results indexes not brought up to date (%s): results may miss scores", err)
            return
        if refused:
            log.warning(
                "%d stored dimension names have no results: at most %d besides Sotopia's "
                "seven can (first: %r)",
                len(refused),
                MAX_DIMENSIONS,
                refused[0],
            )

    async def _claim(self, names: list[str]) -> CapReached | None:
        if not names:
            return None
        if len(names) > MAX_DIMENSIONS:  # refused whatever is indexed (and too many for Lua)
            indexed = await self.client.scard(keys.INDEXED_DIMENSIONS)
            return CapReached(indexed=int(indexed), new=len(names))
        added, indexed, new = await CLAIM(
            self.client,
            ClaimKeys(keys.INDEXED_DIMENSIONS),
            ClaimArgs(MAX_DIMENSIONS),
            more_args=names,
        )
        return None if added else CapReached(indexed=int(indexed), new=int(new))

    async def _claimed(self) -> list[str]:
        members = await self.client.smembers(keys.INDEXED_DIMENSIONS)
        return sorted(str(name) for name in members)

    async def ensure_dimensions(self, dimensions: Iterable[str] = ()) -> None:
        """Create a missing index with every field, or add the tag fields an index created by
        an older Parley lacks and the score fields of dimensions it has none for yet (documents
        already stored are indexed for them too: RediSearch rescans on FT.ALTER)."""
        wanted = list(dict.fromkeys([OVERALL, *STANDARD, *dimensions]))
        for name, prefix in INDEXES.items():
            fields = await self._fields(name)
            if fields is None:
                names = custom([*wanted, *await self._claimed()])[:MAX_DIMENSIONS]
                await self._create(name, prefix, [OVERALL, *STANDARD, *names])
                continue
            tags = [t for t in TAGS if t not in fields]
            missing = [d for d in wanted if score_field(0, d) not in fields]
            if tags or missing:
                await self._alter(name, [*_tag_schema(tags), *_score_schema(missing)])

    async def _alter(self, name: str, schema: list[str]) -> None:
        try:
            await self.client.execute_command(  # type: ignore[no-untyped-call]
                "FT.ALTER", name, "SCHEMA", "ADD", *schema
            )
        except redis.ResponseError as err:  # another process added them first
            if "duplicate" not in str(err).lower():
                raise

    async def _create(self, name: str, prefix: str, dimensions: list[str]) -> None:
        try:
            await self.client.execute_command(  # type: ignore[no-untyped-call]
                "FT.CREATE", name, "ON", "JSON", "PREFIX", "1", prefix,
                "SCHEMA", *_schema(dimensions),
            )  # fmt: skip
        except redis.ResponseError as err:
            if "already exists" not in str(err).lower():
                raise

    async def _indexed_names(self) -> list[str]:
        """The dimension names with score fields in either index (besides Sotopia's seven)."""
        names: set[str] = set()
        for index in INDEXES:
            for field in await self._fields(index) or set():
                dimension = dimension_of(field)
                if dimension is not None:
                    names.add(dimension)
        return custom(sorted(names))

    async def _stored_names(self) -> list[str]:
        """The name of every stored CustomEvaluationDimension, read raw: a record that would
        not validate as a model still has its name read, and one without a name is passed by."""
        index = keys.index_name("CustomEvaluationDimension")
        names: list[str] = []
        offset = 0
        while True:
            reply: Any = await self.client.execute_command(  # type: ignore[no-untyped-call]
                "FT.SEARCH", index, "*", "RETURN", 3, "$.name", "AS", "name",
                "LIMIT", offset, BATCH, "DIALECT", 2,
            )  # fmt: skip
            found = search_fields(reply)
            names += [str(doc["name"]) for doc in found if doc.get("name") is not None]
            offset += len(found)
            if len(found) < BATCH:
                return names

    async def _fields(self, index: str) -> set[str] | None:
        """The index's field names, or None when it does not exist."""
        try:
            info = await self.client.execute_command("FT.INFO", index)  # type: ignore[no-untyped-call]
        except redis.ResponseError as err:
            if "unknown index" in str(err).lower() or "no such index" in str(err).lower():
                return None
            raise
        entries = info if isinstance(info, dict) else _pairs(info)
        attributes: list[Any] = entries["attributes"]
        names = set()
        for attribute in attributes:
            entry = attribute if isinstance(attribute, dict) else _pairs(attribute)
            names.add(str(entry["attribute"]))
        return names


def search_fields(reply: Any) -> list[dict[str, Any]]:
    """FT.SEARCH's returned fields per document, from a RESP3 or a RESP2 reply."""
    if isinstance(reply, dict):
        return [dict(doc.get("extra_attributes") or {}) for doc in reply.get("results", [])]
    return [_pairs(fields) for fields in reply[2::2]]


def _pairs(flat: list[Any]) -> dict[str, Any]:
    return {str(flat[i]): flat[i + 1] for i in range(0, len(flat) - 1, 2)}
