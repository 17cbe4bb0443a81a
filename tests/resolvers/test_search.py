"""Pages of projected fields, in each list's order after a position, read what redis-om's own
queries find, field by field, whether the documents are fetched or held; and a list answered
from held documents is what a fresh read finds, however writes and reads interleave."""

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.support.read_world import write_world
from parley.lifecycle.experiments import list_experiments
from parley.resolvers.agents import AGENTS, list_agents, update_agent
from parley.resolvers.episodes import EPISODES, find_episodes
from parley.resolvers.keyset import Keyset, Position, SortOrder
from parley.resolvers.pagination import Page
from parley.resolvers.relationships import RELATIONSHIPS, list_relationships, update_relationship
from parley.resolvers.scenarios import SCENARIOS, list_scenarios, update_scenario
from parley.resolvers.search import Found, search
from parley.storage.models import (
    LISTED,
    AgentProfile,
    EnvironmentProfile,
    EpisodeLog,
    EpisodeStatus,
    Experiment,
    Record,
    RelationshipProfile,
)
from parley.storage.tracking import TrackedDocuments
from tests.support.lists import in_order

WORLD = "srch"
SOTOPIA, PARLEY = f"{WORLD}-sotopia", f"{WORLD}-parley"
A0, A1, S0 = f"{WORLD}A000000", f"{WORLD}A000001", f"{WORLD}S000000"
TAGS = [SOTOPIA, PARLEY]
ORDERS = [SortOrder.ASCENDING, SortOrder.DESCENDING]


@pytest.fixture(scope="module")
async def world(redis_client: redis.Redis) -> None:
    await write_world(redis_client, WORLD, episodes=24, agents=12, scenarios=6, relationships=12)


def queries() -> list[tuple[str, Any, Keyset]]:
    """Each filter shape the list resolvers build, over records of both writers (Sotopia's
    episodes have no created_at: they sort after every episode that has one, either way)."""
    e, a, r = EpisodeLog, AgentProfile, RelationshipProfile
    return [
        ("episodes sotopia", e.find(e.tag == SOTOPIA), EPISODES),
        ("episodes parley", e.find(e.tag == PARLEY), EPISODES),
        (
            "episodes status",
            e.find(e.tag == PARLEY, e.status == EpisodeStatus.FAILED.value),
            EPISODES,
        ),
        ("episodes agent", e.find(e.agents << [A1]), EPISODES),  # type: ignore[operator]
        ("episodes scenario", e.find(e.environment == S0), EPISODES),
        ("agents tag", a.find(a.tag == PARLEY), AGENTS),
        ("agents gender", a.find(a.gender == "Woman", a.occupation == "Nurse"), AGENTS),
        ("agents name", a.find((a.first_name == "Ada3") | (a.last_name == "Ada3")), AGENTS),
        ("relationships agent", r.find((r.agent_1_id == A1) | (r.agent_2_id == A1)), RELATIONSHIPS),
        ("relationships type", r.find(r.relationship == 2), RELATIONSHIPS),
        ("scenarios", EnvironmentProfile.find(EnvironmentProfile.tag << TAGS), SCENARIOS),  # type: ignore[operator]
    ]


BY_QUERY = pytest.mark.parametrize(
    ("query", "keyset"), [pytest.param(query, keyset, id=name) for name, query, keyset in queries()]
)


def dump(record: Record, fields: set[str] | None = None) -> dict[str, Any]:
    return record.model_dump(mode="json", include=fields)


@pytest.fixture(params=[False, True], ids=["fetched", "tracked"])
async def documents(
    request: pytest.FixtureRequest, redis_client: redis.Redis
) -> AsyncIterator[TrackedDocuments | None]:
    """No held documents, or documents tracked and held (each search below runs twice then:
    once reading the records on the tracking connection, once from what it held)."""
    if not request.param:
        yield None
        return
    tracked = TrackedDocuments(redis_client, [model.make_key("") for model in LISTED])
    async with tracked.running():
        assert tracked.active
        yield tracked


async def searched(
    documents: TrackedDocuments | None,
    query: Any,
    keyset: Keyset,
    order: SortOrder,
    after: Position | None,
    limit: int,
    fields: set[str] | None = None,
) -> Found[Any]:
    found = await search(query, keyset, order, after, limit, fields, documents)
    if documents is None:
        return found
    hits = documents.hits
    again = await search(query, keyset, order, after, limit, fields, documents)
    assert documents.hits - hits == len(again.hits)
    assert [h.version for h in again.hits] == [h.version for h in found.hits]
    assert [dump(r) for r in again.records] == [dump(r) for r in found.records]
    return again


async def walked(
    documents: TrackedDocuments | None,
    query: Any,
    keyset: Keyset,
    order: SortOrder,
    size: int,
    fields: set[str] | None = None,
) -> list[Record]:
    """Every record, page by page, each page starting after the last one's last position."""
    records: list[Record] = []
    after: Position | None = None
    while True:
        found = await searched(documents, query, keyset, order, after, size, fields)
        assert found.total == await query.count()
        assert len(found.hits) == size or not found.has_next
        records += found.records
        if not found.has_next:
            return records
        after = found.hits[-1].position


async def expected(
    client: redis.Redis, query: Any, keyset: Keyset, order: SortOrder
) -> list[Record]:
    """redis-om's own matches, whole, in the order the list documents."""
    whole = {str(r.pk): r for r in await query.all()}
    return [whole[pk] for pk in await in_order(client, query.model, keyset, order, list(whole))]


@BY_QUERY
@pytest.mark.parametrize("order", ORDERS, ids=["asc", "desc"])
@pytest.mark.parametrize("size", [1, 5, 100])
async def test_whole_records_match_redis_om_in_the_lists_order(
    world: None,
    redis_client: redis.Redis,
    documents: TrackedDocuments | None,
    query: Any,
    keyset: Keyset,
    order: SortOrder,
    size: int,
) -> None:
    wanted = await expected(redis_client, query, keyset, order)
    found = await walked(documents, query, keyset, order, size)
    assert [dump(r) for r in found] == [dump(r) for r in wanted]
    assert wanted, "every filter here matches something"


@BY_QUERY
async def test_each_projected_field_reads_as_stored(
    world: None,
    redis_client: redis.Redis,
    documents: TrackedDocuments | None,
    query: Any,
    keyset: Keyset,
) -> None:
    whole = await expected(redis_client, query, keyset, keyset.default)
    for field in query.model.model_fields:
        found = await walked(documents, query, keyset, keyset.default, 100, {field})
        assert [r.pk for r in found] == [r.pk for r in whole]
        got = [getattr(r, field) for r in found]
        assert got == [getattr(r, field) for r in whole], field


async def test_sotopia_records_without_optional_fields_read_their_defaults(
    world: None, redis_client: redis.Redis
) -> None:
    """Older Sotopia records lack keys; a projection of them reads the record's defaults."""
    stored: dict[str, Any] = await redis_client.json().get(AgentProfile.make_primary_key(A1))  # type: ignore[assignment]
    assert "tag" not in stored and "mbti" not in stored and stored["written_by_sotopia"]
    a = AgentProfile
    query = a.find(a.first_name == "Ada1", a.last_name == f"{WORLD}Sotopia")
    found = await search(query, AGENTS, AGENTS.default, None, 10, {"tag", "mbti", "first_name"})
    assert [(r.pk, r.tag, r.mbti, r.first_name) for r in found.records] == [(A1, "", "", "Ada1")]
    sotopia = EpisodeLog.find(EpisodeLog.tag == SOTOPIA)
    episode = (await search(sotopia, EPISODES, EPISODES.default, None, 1, {"status"})).records
    assert episode[0].status is EpisodeStatus.COMPLETED  # Sotopia's records have no status


@pytest.mark.parametrize("order", ORDERS, ids=["asc", "desc"])
async def test_the_page_after_the_last_item_is_empty(world: None, order: SortOrder) -> None:
    query = EpisodeLog.find(EpisodeLog.tag == PARLEY)
    every = await search(query, EPISODES, order, None, 100)
    last = every.hits[-1].position
    after = await search(query, EPISODES, order, last, 5)
    assert after.hits == [] and after.total == 12 and not after.has_next and not every.has_next


async def test_whole_records_read_every_kind_of_value_as_stored(
    world: None, redis_client: redis.Redis
) -> None:
    """Whole documents read as they were written: strings that look like numbers or JSON,
    non-ASCII, escapes and nulls."""
    pk = f"{WORLD}Etricky"
    key = EpisodeLog.make_primary_key(pk)
    tricky = ["42", "null", '["a"]', 'caf\u00e9 "quoted" \\ \U0001f600', "line\nbreak", ""]
    doc: dict[str, Any] = {
        "pk": pk,
        "environment": S0,
        "agents": [A0, A1],
        "tag": "tricky-whole",
        "models": ["m", "m", "m"],
        "messages": [[[t, t, t] for t in tricky]],
        "reasoning": tricky[3],
        "rewards": [0.0, 0.0],
        "rewards_prompt": "",
        "error": None,
        "created_at": 1.5,
    }
    await redis_client.json().set(key, "$", doc)
    try:
        query = EpisodeLog.find(EpisodeLog.tag == "tricky-whole")
        (record,) = (await search(query, EPISODES, EPISODES.default, None, 5)).records
        assert record == await EpisodeLog.get(pk)
        assert record.messages == [[tuple(3 * [t]) for t in tricky]]
        assert record.reasoning == tricky[3] and record.error is None
    finally:
        await redis_client.delete(key)


# --- Random writes and reads: each list answered from held documents equals a fresh read ----

PROPERTY_WORLD = "heldprop"
EDITED = {
    "agents": "occupation",
    "scenarios": "scenario",
    "relationships": "background_story",
    "episodes": "reasoning",
    "experiments": "name",
}
MODELS: dict[str, type[Record]] = {
    "agents": AgentProfile,
    "scenarios": EnvironmentProfile,
    "relationships": RelationshipProfile,
    "episodes": EpisodeLog,
    "experiments": Experiment,
}
UPDATES = {
    "agents": update_agent,
    "scenarios": update_scenario,
    "relationships": update_relationship,
}


@pytest.fixture(scope="module")
async def stored(redis_client: redis.Redis) -> dict[str, dict[str, dict[str, Any]]]:
    """Kind -> pk -> the stored document, six of each, tagged f"{PROPERTY_WORLD}-parley"."""
    await write_world(
        redis_client, PROPERTY_WORLD, episodes=12, agents=12, scenarios=12, relationships=12
    )
    for i in range(6):
        experiment = Experiment(
            pk=f"{PROPERTY_WORLD}X{i}", name=f"x{i}", tag=f"{PROPERTY_WORLD}-parley", created_at=i
        )
        await experiment.save()
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for kind, model in MODELS.items():
        found = await model.find(model.tag == f"{PROPERTY_WORLD}-parley").all()  # type: ignore[attr-defined]
        out[kind] = {
            str(r.pk): await redis_client.json().get(model.make_primary_key(str(r.pk)))  # type: ignore[misc]
            for r in found
        }
        assert len(out[kind]) == 6, kind
    return out


@pytest.fixture
async def held(redis_client: redis.Redis) -> AsyncIterator[TrackedDocuments]:
    documents = TrackedDocuments(redis_client, [model.make_key("") for model in LISTED])
    async with documents.running():
        assert documents.active
        yield documents


async def list_kind(
    kind: str,
    documents: TrackedDocuments | None,
    first: int,
    after: str | None,
    order: SortOrder,
    fields: set[str] | None,
) -> Page[Any]:
    tag = f"{PROPERTY_WORLD}-parley"
    arguments: dict[str, Any] = {"first": first, "after": after, "order": order}
    arguments["documents"] = documents
    if kind == "experiments":
        return await list_experiments(name=None, tag=tag, **arguments)
    lister: Any = {
        "agents": list_agents,
        "scenarios": list_scenarios,
        "relationships": list_relationships,
        "episodes": find_episodes,
    }[kind]
    page: Page[Any] = await lister(tag=tag, fields=fields, **arguments)
    return page.with_items([hit.record for hit in page.items])


KIND = st.sampled_from(list(MODELS))
WRITE = st.tuples(
    st.just("write"),
    KIND,
    st.integers(0, 5),
    st.sampled_from(["parley", "another writer", "delete", "restore"]),
    st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=8),
)
READ = st.tuples(
    st.just("read"),
    KIND,
    st.integers(1, 6),
    st.sampled_from(list(SortOrder)),
    st.sampled_from(["whole", "edited", "edited and tag"]),
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(st.one_of(WRITE, READ), min_size=1, max_size=25))
async def test_a_held_list_is_what_an_uncached_read_of_it_finds(
    redis_client: redis.Redis,
    other_writer: redis.Redis,
    stored: dict[str, dict[str, dict[str, Any]]],
    held: TrackedDocuments,
    steps: list[tuple[Any, ...]],
) -> None:
    after: dict[str, str | None] = dict.fromkeys(MODELS)
    try:
        for step in steps:
            if step[0] == "write":
                await write(redis_client, other_writer, stored, *step[1:])
                continue
            _, kind, first, order, shape = step
            edited = EDITED[kind]
            fields = {"whole": None, "edited": {edited}, "edited and tag": {edited, "tag"}}[shape]
            cached = await list_kind(kind, held, first, after[kind], order, fields)
            fresh = await list_kind(kind, None, first, after[kind], order, fields)
            assert [r.model_dump(mode="json", include=fields) for r in cached.items] == [
                r.model_dump(mode="json", include=fields) for r in fresh.items
            ]
            assert (cached.total, cached.has_next) == (fresh.total, fresh.has_next)
            last = len(cached.items) - 1
            after[kind] = cached.cursor(last) if cached.has_next and cached.items else None
    finally:
        for kind, documents in stored.items():
            for pk, doc in documents.items():
                await redis_client.json().set(MODELS[kind].make_primary_key(pk), "$", doc)


async def write(
    client: redis.Redis,
    other_writer: redis.Redis,
    stored: dict[str, dict[str, dict[str, Any]]],
    kind: str,
    index: int,
    how: str,
    text: str,
) -> None:
    pk = sorted(stored[kind])[index]
    key = MODELS[kind].make_primary_key(pk)
    exists = await client.exists(key)
    if how == "delete":
        await other_writer.delete(key)
    elif how == "restore" or not exists:
        await other_writer.execute_command("JSON.SET", key, "$", json.dumps(stored[kind][pk]))  # type: ignore[no-untyped-call]
    elif how == "another writer":
        await other_writer.execute_command("JSON.SET", key, f"$.{EDITED[kind]}", json.dumps(text))  # type: ignore[no-untyped-call]
    elif kind in UPDATES:
        value = text.strip() or "x"
        _, errors = await UPDATES[kind](client, pk, {EDITED[kind]: value})
        assert not errors, errors
    else:  # an episode or an experiment saved whole, as Parley's records are
        record = await MODELS[kind].get(pk)
        setattr(record, EDITED[kind], text or "x")
        await record.save()
