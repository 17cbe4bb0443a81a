"""The results indexes: each seat's model, agent and scores as fields RediSearch aggregates.

Two indexes of the same schema: one over the episodes themselves (Sotopia's EpisodeLog prefix,
so records Sotopia wrote are covered with no extra writes), one over the evaluation records a
re-judging writes. Rewards are Sotopia's `[[overall, {dimension: score}], ...]` per seat; a
failed evaluation's bare `0.0` has no such paths, so it simply has no score fields.

Only the first two seats are indexed (Sotopia's episodes have two). A dimension gets a field per
seat when its name first appears (`ensure_dimensions`, FT.ALTER); Sotopia's seven are there
from the start.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import redis.asyncio as redis

from engine.types import SOTOPIA_DIMENSIONS
from storage import keys

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


def _schema(dimensions: Iterable[str]) -> list[str]:
    args: list[str] = []
    for name, path in TAGS.items():
        args += [path, "AS", name, "TAG", "SEPARATOR", SEPARATOR, "CASESENSITIVE", "SORTABLE"]
    return args + _score_schema(dimensions)


INDEXES = {
    keys.RESULTS_INDEX: f":{keys.SOTOPIA_LOGS}.EpisodeLog:",
    keys.EVALUATIONS_INDEX: keys.EVALUATION_PREFIX,
}
"""Index name -> the key prefix it covers."""


@dataclass
class ResultsIndex:
    """Creates the indexes, and adds a dimension's score fields the first time it is seen."""

    client: redis.Redis

    async def ensure_dimensions(self, dimensions: Iterable[str] = ()) -> None:
        """Create a missing index with every field, or add the score fields of dimensions it
        has none for yet (documents already stored are indexed for them too: RediSearch
        rescans on FT.ALTER)."""
        wanted = list(dict.fromkeys([OVERALL, *STANDARD, *dimensions]))
        for name, prefix in INDEXES.items():
            fields = await self._fields(name)
            if fields is None:
                await self._create(name, prefix, wanted)
                continue
            missing = [d for d in wanted if score_field(0, d) not in fields]
            if missing:
                try:
                    await self.client.execute_command(  # type: ignore[no-untyped-call]
                        "FT.ALTER", name, "SCHEMA", "ADD", *_score_schema(missing)
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


def _pairs(flat: list[Any]) -> dict[str, Any]:
    return {str(flat[i]): flat[i + 1] for i in range(0, len(flat) - 1, 2)}
