"""Streamed export of stored records in Sotopia's layout (resolvers/sotopia_format.py).

Reads go through a RediSearch cursor (FT.AGGREGATE … WITHCURSOR) that hands out the keys of
the matches a batch at a time, and each batch's documents come in one JSON.MGET; each batch is
turned into text and handed on before the next is read, so memory stays flat however many
records there are. An episode's scenario and agents come from a bounded cache.
"""

import contextlib
import dataclasses
import json
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import redis.asyncio as redis

from parley.core.errors import BadArgument
from parley.resolvers import annotation_exchange as ratings
from parley.resolvers import call_exchange as calls
from parley.resolvers import sotopia_format as fmt
from parley.resolvers.episodes import episode_query
from parley.resolvers.pagination import searchable
from parley.resolvers.search import tag_terms
from parley.storage.evaluations import experiment_rejudgings
from parley.storage.experiments import ExperimentStore
from parley.storage.keys import index_name
from parley.storage.models import (
    AgentProfile,
    CustomEvaluationDimension,
    CustomEvaluationDimensionList,
    EnvironmentProfile,
    EpisodeLog,
    EpisodeStatus,
    Experiment,
    Record,
    RelationshipProfile,
)
from parley.storage.records import storable

BATCH = 500
CACHED_PROFILES = 4096
DIALECT = "3"


class Format(StrEnum):
    JSONL = "jsonl"
    CSV = "csv"


@dataclass(frozen=True)
class EpisodeFilter:
    """Which episodes to export: with no status, every finished one (an unfinished episode
    cannot be imported: it would stand in the queue of a server with no job for it); the
    experiment and tag select experiments too."""

    tag: str | None = None
    experiment_id: str | None = None
    status: EpisodeStatus | None = None
    agent_id: str | None = None
    scenario_id: str | None = None

    def query(self) -> Any:
        return episode_query(**dataclasses.asdict(self), finished=self.status is None)

    def experiments(self) -> Any:
        """The experiments to export (one by id: see `experiment_id`)."""
        return Experiment.find(*tag_terms(Experiment, tag=self.tag))


ALL_KINDS = tuple(fmt.Kind)
MODELS: dict[fmt.Kind, type[Record]] = {
    fmt.Kind.AGENTS: AgentProfile,
    fmt.Kind.SCENARIOS: EnvironmentProfile,
    fmt.Kind.RELATIONSHIPS: RelationshipProfile,
    fmt.Kind.DIMENSION_LISTS: CustomEvaluationDimensionList,
    fmt.Kind.EPISODES: EpisodeLog,
    fmt.Kind.EXPERIMENTS: Experiment,
}


def parse_kinds(text: str) -> list[fmt.Kind]:
    """`all`, or a comma-separated list of the kinds (`fmt.Kind`)."""
    if text.strip() == "all":
        return list(ALL_KINDS)
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [n for n in names if n not in fmt.Kind.__members__.values()]
    if unknown or not names:
        raise BadArgument(
            f"unknown kind {', '.join(unknown) or text!r}: use all, or any of {', '.join(fmt.Kind)}"
        )
    return [fmt.Kind(n) for n in ALL_KINDS if n in names]


async def matching_keys(
    client: redis.Redis, model: type[Record], query: str, batch: int = BATCH
) -> AsyncIterator[list[str]]:
    """The keys of the documents that match `query`, a batch at a time, through a cursor.

    With RediSearch's default query timeout (500 ms) a cursor on a busy server ends early,
    without a warning, having returned only part of the matches: the query runs with none.
    """
    index = index_name(model.__name__)
    raw = await client.execute_command(  # type: ignore[no-untyped-call]
        "FT.AGGREGATE", index, query, "LOAD", 1, "@__key",
        "WITHCURSOR", "COUNT", batch, "TIMEOUT", 0, "DIALECT", DIALECT,
    )  # fmt: skip
    cursor = 0
    try:
        while True:
            rows, cursor = _cursor_page(raw)
            if rows:
                yield rows
            if not cursor:
                return
            raw = await client.execute_command(  # type: ignore[no-untyped-call]
                "FT.CURSOR", "READ", index, cursor, "COUNT", batch
            )
    finally:
        if cursor:
            with contextlib.suppress(redis.RedisError):  # else it expires on its own
                await client.execute_command("FT.CURSOR", "DEL", index, cursor)  # type: ignore[no-untyped-call]


def _cursor_page(raw: Any) -> tuple[list[str], int]:
    """(keys, next cursor) of one reply, RESP3 (a map) or RESP2 (arrays)."""
    page, cursor = raw[0], int(raw[1])
    if isinstance(page, dict):
        keys = [r["extra_attributes"]["__key"] for r in page["results"]]
        return keys, cursor
    rows = page[1:]
    return [dict(zip(row[::2], row[1::2], strict=True))["__key"] for row in rows], cursor


async def documents(client: redis.Redis, keys: Sequence[str]) -> list[dict[str, Any] | None]:
    """The stored JSON of each key (None for one deleted meanwhile), in one round trip."""
    if not keys:
        return []
    raw = await client.execute_command("JSON.MGET", *keys, "$")  # type: ignore[no-untyped-call]
    docs: list[dict[str, Any] | None] = []
    for key, text in zip(keys, raw, strict=True):
        value = json.loads(text) if isinstance(text, str | bytes) else text
        doc = value[0] if isinstance(value, list) and value else None
        if isinstance(doc, dict):
            doc.setdefault("pk", key.rsplit(":", 1)[-1])
            docs.append(doc)
        else:
            docs.append(None)
    return docs


class Profiles:
    """Scenarios and agents by id for the episodes being exported, at most CACHED_PROFILES."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self.cache: OrderedDict[str, dict[str, Any] | None] = OrderedDict()

    async def load(self, refs: list[tuple[type[Record], str]]) -> None:
        """Have every record `refs` names at hand; the least recently wanted go first."""
        wanted = {model.make_primary_key(pk) for model, pk in refs}
        missing = [key for key in wanted if key not in self.cache]
        for key in wanted - set(missing):
            self.cache.move_to_end(key)
        for key, doc in zip(missing, await documents(self.client, missing), strict=True):
            self.cache[key] = doc
        while len(self.cache) > max(CACHED_PROFILES, len(wanted)):
            self.cache.popitem(last=False)

    def get(self, model: type[Record], pk: str) -> dict[str, Any] | None:
        return self.cache.get(model.make_primary_key(pk))


async def lines(
    client: redis.Redis, kind: fmt.Kind, episodes: EpisodeFilter | None = None
) -> AsyncIterator[list[dict[str, Any]]]:
    """Batches of lines in Sotopia's layout of every record of `kind` (episodes and
    experiments: matching; annotations: of the matching episodes)."""
    chosen = episodes or EpisodeFilter()
    if kind == fmt.Kind.ANNOTATIONS:
        async for batch in ratings.lines(client, chosen.query()):
            yield batch
        return
    if kind == fmt.Kind.MODEL_CALLS:
        async for batch in _call_lines(client, chosen):
            yield batch
        return
    model = MODELS[kind]
    if kind == fmt.Kind.EXPERIMENTS:
        async for batch in _experiment_lines(client, chosen):
            yield batch
        return
    query = chosen.query() if kind == fmt.Kind.EPISODES else model.find()
    if not searchable(query):
        return
    profiles = Profiles(client)
    async for keys in matching_keys(client, model, str(query.query)):
        docs = [d for d in await documents(client, keys) if d is not None]
        if kind == fmt.Kind.AGENTS:
            yield [fmt.agent_line(d) for d in docs]
        elif kind == fmt.Kind.SCENARIOS:
            yield [fmt.scenario_line(d) for d in docs]
        elif kind == fmt.Kind.RELATIONSHIPS:
            yield [fmt.relationship_line(d) for d in docs]
        elif kind == fmt.Kind.DIMENSION_LISTS:
            yield [await _dimension_list_line(client, d) for d in docs]
        else:
            yield await _episode_lines(profiles, docs)


async def _call_lines(
    client: redis.Redis, chosen: EpisodeFilter
) -> AsyncIterator[list[dict[str, Any]]]:
    """The chosen episodes' model calls, each body once in the whole export."""
    query = chosen.query()
    if not searchable(query):
        return
    sent: set[str] = set()
    async for batch in matching_keys(client, EpisodeLog, str(query.query)):
        ids = [key.rsplit(":", 1)[-1] for key in batch]
        found = await calls.lines(client, ids, sent)
        if found:
            yield found


async def _experiment_lines(
    client: redis.Redis, chosen: EpisodeFilter
) -> AsyncIterator[list[dict[str, Any]]]:
    """Each chosen experiment's lines: its slots in parts, then its record."""
    if chosen.experiment_id:
        pk = chosen.experiment_id
        found = [[Experiment.make_primary_key(pk)]] if storable(pk) else []
        batches: AsyncIterator[list[str]] = _each(found)
    else:
        query = chosen.experiments()
        if not searchable(query):
            return
        batches = matching_keys(client, Experiment, str(query.query))
    store = ExperimentStore(client)
    async for keys in batches:
        for doc in await documents(client, keys):
            if doc is None:
                continue
            pk = str(doc["pk"])
            plan = [slot.model_dump(mode="json") for slot in await store.plan(pk)]
            rejudgings = await experiment_rejudgings(client, pk)
            yield fmt.experiment_lines(
                doc, plan, await store.slots(pk), rejudgings[-fmt.REJUDGINGS_PER_EXPERIMENT :]
            )


async def _each[T](items: list[T]) -> AsyncIterator[T]:
    for item in items:
        yield item


async def _dimension_list_line(client: redis.Redis, doc: dict[str, Any]) -> dict[str, Any]:
    pks = [str(pk) for pk in doc.get("dimension_pks") or []]
    found = await documents(client, [CustomEvaluationDimension.make_primary_key(pk) for pk in pks])
    return fmt.dimension_list_line(doc, [d for d in found if d is not None])


async def _episode_lines(profiles: Profiles, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    refs: list[tuple[type[Record], str]] = []
    for doc in docs:
        refs.append((EnvironmentProfile, str(doc.get("environment", ""))))
        refs += [(AgentProfile, str(a)) for a in doc.get("agents") or []]
    await profiles.load(refs)
    out = []
    for doc in docs:
        scenario = profiles.get(EnvironmentProfile, str(doc.get("environment", "")))
        agents = [profiles.get(AgentProfile, str(a)) for a in doc.get("agents") or []]
        out.append(fmt.episode_line(doc, scenario, agents))
    return out


def check(kinds: Sequence[fmt.Kind], form: Format) -> None:
    """Refuse an export that cannot be written (before anything is streamed)."""
    if form == Format.CSV and list(kinds) != [fmt.Kind.EPISODES]:
        raise BadArgument("CSV holds episodes only: export with kind episodes")


async def export_text(
    client: redis.Redis,
    kinds: Sequence[fmt.Kind],
    episodes: EpisodeFilter | None = None,
    form: Format = Format.JSONL,
) -> AsyncIterator[str]:
    """The export as text, a batch of lines at a time (CSV: episodes only, header first)."""
    check(kinds, form)
    if form == Format.CSV:
        yield fmt.csv_header()
        async for batch in lines(client, fmt.Kind.EPISODES, episodes):
            yield "".join(fmt.csv_row(line) for line in batch)
        return
    for kind in kinds:
        async for batch in lines(client, kind, episodes):
            yield "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in batch)


PARAMETERS = frozenset({"kind", "format", "tag", "experiment", "status", "agent", "scenario"})


def request(
    params: Mapping[str, str],
) -> tuple[list[fmt.Kind], EpisodeFilter, Format]:
    """An export asked for by name (the CLI's options, /export's query parameters)."""
    unknown = sorted(set(params) - PARAMETERS)
    if unknown:
        raise BadArgument(
            f"unknown parameter {', '.join(unknown)}: use {', '.join(sorted(PARAMETERS))}"
        )
    try:
        form = Format(params.get("format", "jsonl"))
    except ValueError:
        raise BadArgument("format must be jsonl or csv") from None
    # CSV holds episodes only: asking for it asks for them
    kinds = parse_kinds(params.get("kind", "episodes" if form == Format.CSV else "all"))
    status = params.get("status")
    try:
        state = EpisodeStatus(status.upper()) if status else None
    except ValueError:
        raise BadArgument(
            f"unknown status {status!r}: use one of {', '.join(s.value for s in EpisodeStatus)}"
        ) from None
    episodes = EpisodeFilter(
        tag=params.get("tag"),
        experiment_id=params.get("experiment"),
        status=state,
        agent_id=params.get("agent"),
        scenario_id=params.get("scenario"),
    )
    episodes.query()  # refuses a value no search can look up before anything is streamed
    check(kinds, form)
    return kinds, episodes, form
