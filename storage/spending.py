"""What episodes spent, read for estimates and budgets without loading an episode.

`recorded_usage` finds COMPLETED episodes in some scenarios through the episode index and reads
only the fields an estimate needs (`FT.SEARCH ... RETURN` of JSON paths); `costs` reads the cost
so far of some episodes in one command.
"""

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import redis.asyncio as redis

from parley.storage.connection import TAG_SPECIALS
from parley.storage.models import EpisodeLog, EpisodeStatus
from parley.storage.results_index import search_fields

BATCH = 1_000
RECENT = 5_000
"""Most episodes read for one estimate (the newest first)."""
_PATHS = ("environment", "models", "max_turns", "usage", "generation_stats", "parent_id")
MAX_COUNT = 10**12
"""The most tokens or requests one episode's record is believed to hold."""


@dataclass(frozen=True)
class RecordedUsage:
    """What one COMPLETED episode spent."""

    scenario_id: str
    models: tuple[str, ...]
    """Sotopia's `models`: the judge (a panel's label), then each seat's model."""
    max_turns: int
    requests: int
    """Requests sent to models (`generation_stats.requests`: retries included)."""
    tokens: dict[str, tuple[int, int]]
    """Per model: (prompt tokens, completion tokens)."""


def _tag(value: str) -> str:
    return TAG_SPECIALS.sub(lambda m: "\\" + m.group(0), value)


def _json(value: Any) -> Any:
    """A returned field's value: RediSearch sends arrays and objects as JSON text, and a string
    as itself."""
    if not isinstance(value, str | bytes):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value.decode() if isinstance(value, bytes) else value


def _count(value: Any) -> int:
    """A count another writer stored: a whole number from 0 to MAX_COUNT, else ValueError."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise ValueError(value)
    if not 0 <= value <= MAX_COUNT or value != int(value):
        raise ValueError(value)
    return int(value)


def _parsed(fields: dict[str, Any]) -> RecordedUsage | None:
    """One search result's fields; None when they are not what Parley writes (another writer's
    record, counts out of any plausible range) or the episode is a fork (it played only the
    turns from its parent's, so it is no whole episode to compare with)."""
    try:
        if _json(fields.get("parent_id")):
            return None
        stats = _json(fields.get("generation_stats")) or {}
        rows = _json(fields.get("usage")) or []
        tokens: dict[str, tuple[int, int]] = {}
        for row in rows:
            prompt, reply = _count(row["prompt_tokens"]), _count(row["completion_tokens"])
            before = tokens.get(str(row["model"]), (0, 0))
            tokens[str(row["model"])] = (before[0] + prompt, before[1] + reply)
        return RecordedUsage(
            scenario_id=str(_json(fields["environment"])),
            models=tuple(str(m) for m in _json(fields.get("models")) or []),
            max_turns=_count(_json(fields.get("max_turns")) or 0),
            requests=_count(stats.get("requests", 0)),
            tokens=tokens,
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


async def recorded_usage(
    client: redis.Redis, scenario_ids: Sequence[str], limit: int = RECENT
) -> list[RecordedUsage]:
    """The newest COMPLETED episodes (at most `limit`) in these scenarios, with what they spent."""
    if not scenario_ids:
        return []
    query = (
        "@environment:{" + "|".join(_tag(s) for s in sorted(set(scenario_ids))) + "} "
        "@status:{" + EpisodeStatus.COMPLETED.value + "}"
    )
    returned: list[Any] = ["RETURN", 2 * len(_PATHS) + len(_PATHS)]
    for name in _PATHS:
        returned += [f"$.{name}", "AS", name]
    out: list[RecordedUsage] = []
    offset = 0
    while offset < limit:
        size = min(BATCH, limit - offset)
        reply: Any = await client.execute_command(  # type: ignore[no-untyped-call]
            "FT.SEARCH", EpisodeLog.Meta.index_name, query, *returned,
            "SORTBY", "created_at", "DESC", "LIMIT", offset, size, "DIALECT", 2,
        )  # fmt: skip
        found = search_fields(reply)
        offset += len(found)
        out += [u for u in map(_parsed, found) if u is not None]
        if len(found) < size:
            break
    return out


async def costs(client: redis.Redis, episode_ids: Sequence[str]) -> list[float]:
    """Each episode's cost so far (0 for one with none, or gone), in one command."""
    if not episode_ids:
        return []
    names = [EpisodeLog.make_primary_key(pk) for pk in episode_ids]
    found: list[Any] = await client.json().mget(names, "$.cost")
    return [float(c[0] or 0.0) if c else 0.0 for c in found]
