"""One FT.SEARCH with projected fields returns what redis-om's count and page returned."""

from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as redis

from resolvers.pagination import encode_cursor, fetch_page
from resolvers.search import Found, search
from storage.models import (
    LISTED,
    AgentProfile,
    EnvironmentProfile,
    EpisodeLog,
    EpisodeStatus,
    Record,
    RelationshipProfile,
)
from storage.tracking import TrackedDocuments
from tests.support.read_world import write_world

WORLD = "srch"
SOTOPIA, PARLEY = f"{WORLD}-sotopia", f"{WORLD}-parley"
A0, A1, S0 = f"{WORLD}A000000", f"{WORLD}A000001", f"{WORLD}S000000"


@pytest.fixture(scope="module")
async def world(redis_client: redis.Redis) -> None:
    await write_world(redis_client, WORLD, episodes=24, agents=12, scenarios=6, relationships=12)


def queries() -> list[tuple[str, Any]]:
    """Each filter shape the list resolvers build, over records of both writers."""
    e, a, r = EpisodeLog, AgentProfile, RelationshipProfile
    return [
        ("episodes sotopia", e.find(e.tag == SOTOPIA).sort_by("-created_at")),
        ("episodes parley", e.find(e.tag == PARLEY).sort_by("-created_at")),
        (
            "episodes status",
            e.find(e.tag == PARLEY, e.status == EpisodeStatus.FAILED.value).sort_by("-created_at"),
        ),
        ("episodes agent", e.find(e.agents << [A1]).sort_by("-created_at")),  # type: ignore[operator]
        ("episodes scenario", e.find(e.environment == S0).sort_by("-created_at")),
        ("agents tag", a.find(a.tag == PARLEY).sort_by("pk")),
        ("agents gender", a.find(a.gender == "Woman", a.occupation == "Nurse").sort_by("pk")),
        (
            "agents name",
            a.find((a.first_name == "Ada3") | (a.last_name == "Ada3")).sort_by("pk"),
        ),
        (
            "relationships agent",
            r.find((r.agent_1_id == A1) | (r.agent_2_id == A1)).sort_by("pk"),
        ),
        ("relationships type", r.find(r.relationship == 2).sort_by("pk")),
        ("scenarios", EnvironmentProfile.find().sort_by("pk")),
    ]


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
    offset: int,
    limit: int,
    fields: set[str] | None = None,
) -> Found[Any]:
    found = await search(query, offset, limit, fields, documents)
    if documents is None:
        return found
    hits = documents.hits
    again = await search(query, offset, limit, fields, documents)
    assert documents.hits - hits == len(again.hits)
    assert [h.version for h in again.hits] == [h.version for h in found.hits]
    assert [dump(r) for r in again.records] == [dump(r) for r in found.records]
    return again


@pytest.mark.parametrize(("name", "query"), queries(), ids=[n for n, _ in queries()])
@pytest.mark.parametrize(("offset", "limit"), [(0, 5), (3, 4), (0, 100), (2, 0), (10_000, 5)])
async def test_whole_records_match_redis_om(
    world: None,
    documents: TrackedDocuments | None,
    name: str,
    query: Any,
    offset: int,
    limit: int,
) -> None:
    expected_total = await query.count()
    expected = await query.page(offset=offset, limit=limit) if limit else []
    found = await searched(documents, query, offset, limit)
    assert found.total == expected_total
    assert [dump(r) for r in found.records] == [dump(r) for r in expected]
    if name != "scenarios" and offset == 0 and limit:
        assert found.records, "every filter here matches something"


@pytest.mark.parametrize(("name", "query"), queries(), ids=[n for n, _ in queries()])
async def test_each_projected_field_reads_as_stored(
    world: None, documents: TrackedDocuments | None, name: str, query: Any
) -> None:
    whole = await query.page(offset=0, limit=100)
    for field in query.model.model_fields:
        found = await searched(documents, query, 0, 100, {field})
        assert [r.pk for r in found.records] == [r.pk for r in whole]
        got = [getattr(r, field) for r in found.records]
        assert got == [getattr(r, field) for r in whole], field


async def test_sotopia_records_without_optional_fields_read_their_defaults(
    world: None, redis_client: redis.Redis
) -> None:
    """Older Sotopia records lack keys; a projection of them reads the record's defaults."""
    stored: dict[str, Any] = await redis_client.json().get(AgentProfile.make_primary_key(A1))  # type: ignore[assignment]
    assert "tag" not in stored and "mbti" not in stored and stored["written_by_sotopia"]
    a = AgentProfile
    query = a.find(a.first_name == "Ada1", a.last_name == f"{WORLD}Sotopia").sort_by("pk")
    found = await search(query, 0, 10, {"tag", "mbti", "first_name"})
    assert [(r.pk, r.tag, r.mbti, r.first_name) for r in found.records] == [(A1, "", "", "Ada1")]
    episode = (await search(EpisodeLog.find(EpisodeLog.tag == SOTOPIA), 0, 1, {"status"})).records
    assert episode[0].status is EpisodeStatus.COMPLETED  # Sotopia's records have no status


async def test_a_page_beyond_any_limit_is_empty(world: None) -> None:
    page = await fetch_page(EpisodeLog.find(EpisodeLog.tag == PARLEY), 5, encode_cursor(9_999_999))
    assert page.items == [] and page.total == 12 and not page.has_next


async def test_whole_records_read_every_kind_of_value_as_stored(
    world: None, redis_client: redis.Redis
) -> None:
    """Whole documents come back as their JSON object (dialect 2): strings that look like
    numbers or JSON, non-ASCII, escapes and nulls read as they were written."""
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
        (record,) = (await search(query, 0, 5)).records
        assert record == await EpisodeLog.get(pk)
        assert record.messages == [[tuple(3 * [t]) for t in tricky]]
        assert record.reasoning == tricky[3] and record.error is None
    finally:
        await redis_client.delete(key)
