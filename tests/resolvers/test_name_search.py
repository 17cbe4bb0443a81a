"""Agents and scenarios found by what a person types (`nameContains`, `codenameContains`),
against the real RediSearch: every word a part of a name in any letter case, the characters of
RediSearch's query syntax taken as themselves, and what cannot be searched refused as
BAD_USER_INPUT. The server's own limits the search works within are pinned here too."""

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as redis

from parley.core.errors import BadArgument
from parley.resolvers.agents import list_agents
from parley.resolvers.name_search import MAX_LENGTH, spellings, words
from parley.resolvers.scenarios import list_scenarios
from parley.storage.models import AgentProfile, EnvironmentProfile, Record
from tests.support.server import GraphQLClient

TAG = f"typed-{uuid.uuid4().hex[:8]}"
NAMES = [
    ("Ann", "Smith"),
    ("Joanna", "Smits"),
    ("Annika", "Ör"),
    ("O'Brien", "Star*"),
    ("Stars", "Rangers"),
    ("Pipe|Line", "At@home"),
    ('Say"Hi"', "x-y"),
    ("Élodie", "ZOË"),
    ("Ösel", "Straße"),
    ("日本", "語"),
    ("Back\\slash", "Semi;colon"),
    ("Mary Ann", "(Paren)"),
]
CODENAMES = ["used_van_sale", "van-pool", "Ölfeld", "{brace}"]
MANY = 205
"""Agents whose first names share a part, more than RediSearch expands a part to."""


@pytest.fixture(scope="module")
async def stored(redis_client: redis.Redis) -> AsyncIterator[None]:
    records: list[Record] = [
        AgentProfile(first_name=f, last_name=last, tag=TAG) for f, last in NAMES
    ]
    records += [
        EnvironmentProfile(codename=c, scenario="s", agent_goals=["a", "b"], tag=TAG)
        for c in CODENAMES
    ]
    records += [AgentProfile(first_name=f"Qz{i:03d}", last_name="Crowd") for i in range(MANY)]
    for record in records:
        await record.save()
    yield
    await redis_client.delete(*[type(r).make_primary_key(str(r.pk)) for r in records])


async def agents(typed: str, tag: str | None = TAG, first: int = 100) -> list[str]:
    page = await list_agents(tag=tag, name_contains=typed, first=first)
    return sorted(f"{a.record.first_name} {a.record.last_name}" for a in page.items)


async def codenames(typed: str) -> list[str]:
    page = await list_scenarios(tag=TAG, codename_contains=typed, first=100)
    return sorted(s.record.codename for s in page.items)


EVERYONE = sorted(f"{first} {last}" for first, last in NAMES)


@pytest.mark.parametrize(
    ("typed", "found"),
    [
        ("ann smi", ["Ann Smith", "Joanna Smits"]),
        ("ANN", ["Ann Smith", "Annika Ör", "Joanna Smits", "Mary Ann (Paren)"]),
        ("smith ann", ["Ann Smith"]),
        ("  ann\tsmith ", ["Ann Smith"]),
        ("mary ann", ["Mary Ann (Paren)"]),
        ("élo", ["Élodie ZOË"]),
        ("ÉLODIE", ["Élodie ZOË"]),
        ("zoë", ["Élodie ZOË"]),
        ("ösel", ["Ösel Straße"]),
        ("STRAßE", ["Ösel Straße"]),
        ("ör", ["Annika Ör"]),
        ("本", ["日本 語"]),
        ("o'b", ["O'Brien Star*"]),
        ("r*", ["O'Brien Star*"]),  # a literal star: not Stars or Rangers
        ("pe|li", ["Pipe|Line At@home"]),  # two words, as the index keeps two values
        ("@home", ["Pipe|Line At@home"]),
        ('"hi"', ['Say"Hi" x-y']),
        ("x-y", ['Say"Hi" x-y']),
        ("-y", ['Say"Hi" x-y']),
        ("k\\s", ["Back\\slash Semi;colon"]),
        (";c", ["Back\\slash Semi;colon"]),
        ("(paren)", ["Mary Ann (Paren)"]),
        ("**", []),
        ("*a*", []),
        ("-ann", []),
        ("ann -smith", []),
        ("ann|smith", ["Ann Smith"]),
        ("@first_name:{ann}", []),
        ("ann zz", []),
    ],
)
async def test_each_word_is_found_in_a_name_as_typed(
    stored: None, typed: str, found: list[str]
) -> None:
    assert await agents(typed) == found


@pytest.mark.parametrize("typed", ["", "   ", "a", "*", "-", "|", "@", '"', "'", "\\"])
async def test_a_text_without_a_word_of_two_bytes_leaves_the_list_whole(
    stored: None, typed: str
) -> None:
    assert await agents(typed) == EVERYONE


async def test_a_one_character_word_is_left_out_of_a_longer_text(stored: None) -> None:
    assert await agents("ann s") == await agents("ann")


@pytest.mark.parametrize(
    ("typed", "found"),
    [
        ("van", ["used_van_sale", "van-pool"]),
        ("VAN SAL", ["used_van_sale"]),
        ("n-p", ["van-pool"]),
        ("_van_", ["used_van_sale"]),
        ("ölf", ["Ölfeld"]),
        ("{b", ["{brace}"]),
        ("e}", ["{brace}"]),
        ("*", CODENAMES[:0] + sorted(CODENAMES)),
    ],
)
async def test_scenarios_are_found_by_a_part_of_their_codename(
    stored: None, typed: str, found: list[str]
) -> None:
    assert await codenames(typed) == found


async def test_a_part_in_more_than_200_names_finds_200_and_more_of_it_finds_the_rest(
    stored: None,
) -> None:
    """RediSearch expands a part to at most 200 values (MAXEXPANSIONS): the documented cap."""
    page = await list_agents(name_contains="qz", first=0)
    assert page.total == 200
    last = f"Qz{MANY - 1:03d} Crowd"
    assert await agents(f"qz{MANY - 1:03d}", tag=None) == [last]
    assert await agents("qz20 crowd", tag=None) == [f"Qz20{i} Crowd" for i in range(MANY - 200)]


async def test_redisearch_looks_up_no_part_under_two_bytes_and_folds_only_ascii_case(
    stored: None,
) -> None:
    """What `words` and `spellings` are made for, as the server does it."""
    a: Any = AgentProfile  # redis-om field expressions are not typed

    async def count(*terms: Any) -> int:
        return len(await a.find(a.tag == TAG, *terms).all())

    assert await count(a.first_name.contains("n")) == 0  # though Ann has one
    assert await count(a.first_name.contains("nn")) == 4
    assert (
        await count(a.last_name.contains("ö")) == 0 and await count(a.first_name.contains("Ö")) == 1
    )  # two bytes
    assert await count(a.first_name.contains("ANN")) == 4  # ASCII letters: any case
    assert await count(a.first_name.contains("e|l")) == 0  # Pipe|Line is "pipe" and "line"
    assert await count(a.first_name.contains("élo")) == 0  # other letters: as stored
    assert await count(a.first_name.contains("Élo")) == 1


def test_words_and_their_spellings() -> None:
    assert words(" ann  s smi ") == ["ann", "smi"]
    assert words("pipe|line|") == ["pipe", "line"]
    assert words("e\u0301lo") == ["élo"]  # typed decomposed, stored composed
    assert words("ö") == ["ö"]  # one letter, two bytes
    assert spellings("zoë") == ["zoë", "zoË"]
    assert spellings("Élo") == ["Élo", "élo"]
    assert spellings("smith") == ["smith"]
    with pytest.raises(BadArgument, match=f"at most {MAX_LENGTH} characters"):
        words("x" * (MAX_LENGTH + 1))


LIST = """query($agents: AgentFilter, $scenarios: ScenarioFilter) {
  agents(filter: $agents) { totalCount }
  scenarios(filter: $scenarios) { totalCount }
}"""


@pytest.mark.parametrize(
    ("typed", "needle"),
    [
        ("ann\x00", "NUL"),
        ("ann\x7f", "DEL"),
        ("\ud800ann", "lone surrogate"),
        ("x" * (MAX_LENGTH + 1), "at most 100 characters"),
    ],
)
@pytest.mark.parametrize("root", ["agents", "scenarios"])
async def test_what_cannot_be_searched_is_bad_user_input(
    gql: GraphQLClient, root: str, typed: str, needle: str
) -> None:
    field = {"agents": "nameContains", "scenarios": "codenameContains"}[root]
    body = await gql.post(LIST, {root: {field: typed}})
    [error] = body["errors"]
    assert needle in error["message"] and error["extensions"]["code"] == "BAD_USER_INPUT", error
    assert error["path"] == [root]


async def test_the_api_finds_by_a_typed_part(stored: None, gql: GraphQLClient) -> None:
    found = await gql.data(
        LIST,
        {
            "agents": {"nameContains": "ANN SMI", "tag": TAG},
            "scenarios": {"codenameContains": "van", "tag": TAG},
        },
    )
    assert found == {"agents": {"totalCount": 2}, "scenarios": {"totalCount": 2}}
