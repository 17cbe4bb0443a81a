"""What the fuzz tests share: the world every example starts from, strategies for values of
every kind (valid-looking, hostile, junk), their encoding as JSON, and the check that no
answer is a masked crash."""

import json
import os
import re
import string
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from parley.engine.models import DEFAULT_MODEL
from parley.storage.episode_store import initial_history
from parley.storage.models import (
    AgentProfile,
    CustomEvaluationDimension,
    CustomEvaluationDimensionList,
    EnvironmentProfile,
    EpisodeLog,
    EpisodeStatus,
    Record,
    RelationshipProfile,
    StatusChange,
)

type S = st.SearchStrategy[Any]

SCALE = int(os.environ.get("PARLEY_FUZZ_SCALE", "1"))
"""Multiplies every example count, for a longer hunt than the default run of about a minute."""
MASKED = "Unexpected error."

# The world every example starts from: records with fixed ids, so strategies can name them.
TAG = "fuzz-world"
AGENTS = ["fuzz-agent-a", "fuzz-agent-b", "fuzz-agent-c"]
RELATIONSHIP = "fuzz-rel-ab"
SCENARIO = "fuzz-scenario"
DIMENSION = "fuzz-dimension"
DIMENSION_LIST = "fuzz-dimension-list"
DIMENSION_LIST_NAME = "Fuzz dimensions"
QUEUED = "fuzz-episode-queued"
FINISHED = "fuzz-episode-finished"
EVERY_ID = [*AGENTS, RELATIONSHIP, SCENARIO, DIMENSION, DIMENSION_LIST, QUEUED, FINISHED]


def world_records(now: float) -> list[Record]:
    agents: list[Record] = [
        AgentProfile(pk=pk, first_name=f"Fuzz{i}", last_name="World", age=30, tag=TAG)
        for i, pk in enumerate(AGENTS)
    ]
    queued = EpisodeLog(
        pk=QUEUED,
        environment=SCENARIO,
        agents=AGENTS[:2],
        tag=TAG,
        models=[DEFAULT_MODEL] * 3,
        status=EpisodeStatus.QUEUED,
        status_history=initial_history(now),
        sequence=1,
        max_turns=3,
        created_at=now,
    )
    cancelled = StatusChange(status=EpisodeStatus.CANCELLED, at=now, sequence=2, reason="cancelled")
    finished = EpisodeLog(
        **queued.model_dump(exclude={"pk", "status", "status_history", "sequence"}),
        pk=FINISHED,
        status=EpisodeStatus.CANCELLED,
        status_history=[*initial_history(now), cancelled],
        sequence=2,
    )
    return [
        *agents,
        RelationshipProfile(
            pk=RELATIONSHIP, agent_1_id=AGENTS[0], agent_2_id=AGENTS[1], relationship=3, tag=TAG
        ),
        EnvironmentProfile(
            pk=SCENARIO,
            codename="fuzz",
            scenario="Two people meet.",
            agent_goals=["Say hello", "Say goodbye"],
            tag=TAG,
        ),
        CustomEvaluationDimension(pk=DIMENSION, name="fuzziness", range_low=0, range_high=10),
        CustomEvaluationDimensionList(
            pk=DIMENSION_LIST, name=DIMENSION_LIST_NAME, dimension_pks=[DIMENSION]
        ),
        queued,
        finished,
    ]


# --- Encoding -------------------------------------------------------------------------------


@dataclass(frozen=True)
class HugeNumber:
    """An integer literal with more digits than Python's JSON parser converts (4,300)."""

    digits: int


@dataclass(frozen=True)
class Nested:
    """Empty arrays nested `levels` deep (json.dumps itself cannot write a thousand levels)."""

    levels: int


def encode(value: object) -> str:
    """JSON with lone surrogates escaped, NaN and infinities as Python writes them, and each
    HugeNumber and Nested as its text."""

    def marker(item: object) -> str:
        if isinstance(item, Nested):
            return f"@@nested:{item.levels}@@"
        assert isinstance(item, HugeNumber)
        return f"@@huge:{item.digits}@@"

    def text_of(found: re.Match[str]) -> str:
        size = int(found.group(2))
        return "9" * size if found.group(1) == "huge" else "[" * size + "]" * size

    return re.sub(
        r'"@@(huge|nested):(\d+)@@"', text_of, json.dumps(value, ensure_ascii=True, default=marker)
    )


def has_huge_number(value: object) -> bool:
    if isinstance(value, HugeNumber):
        return True
    if isinstance(value, dict):
        return any(has_huge_number(v) for v in value.values())
    if isinstance(value, list):
        return any(has_huge_number(v) for v in value)
    return False


# --- Strategies -----------------------------------------------------------------------------

MISSING = object()
"""A drawn value that means: leave the field out."""


def weighted(common: S, rare: S, weight: int = 3) -> S:
    """`common` about `weight` times as often as `rare` (and what shrinking heads for)."""
    choice: st.SearchStrategy[S] = st.sampled_from([common] * weight + [rare])
    return choice.flatmap(lambda chosen: chosen)


def repeat(unit: str, length: int) -> str:
    return (unit * (length // len(unit) + 1))[:length]


def cycle(items: list[Any], length: int) -> list[Any]:
    return [items[i % len(items)] for i in range(length)]


WORD = st.text(alphabet=string.ascii_letters + string.digits + " -_'.é", min_size=1, max_size=24)
BLANK = st.text(alphabet=" \t\n\r\x0b\x0c\u00a0\u2003\u3000", max_size=6)
SURROGATE = st.builds(
    lambda head, lone, tail: head + lone + tail,
    st.text(max_size=3),
    st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff"]),
    st.text(max_size=3),
)
LONG = st.builds(
    repeat,
    st.text(min_size=1, max_size=4),
    st.one_of(st.sampled_from([199, 200, 201, 20_000, 20_001, 30_000]), st.integers(100, 30_000)),
)
SPECIAL = st.sampled_from(["null", "None", "undefined", "-1", "0", "true", "{}", "[]", "@tag:{x}"])
SYNTAX = st.text(alphabet="*?|%@{}()[]-_:;~\\\"'`$&! \t\n\x00\x7f", min_size=1, max_size=4)
"""Characters with a meaning in search queries, alone or inside words."""
SEARCH = st.one_of(SYNTAX, st.builds(lambda a, b, c: a + b + c, WORD, SYNTAX, WORD))
HOSTILE = st.sampled_from(
    [
        *["|", "||", "| |", "a|b", "\x00", "a\x00b", "\x7f", "\ud800", "x\udfff", "*", "{"],
        *["}", "(", ")", "-", "~x", '"', "'", "`", "\\", "%", "@x:{y}", "$.x", "", " ", "\t"],
    ]
)
"""Short strings a query language, a parser or an encoder may choke on, each alone."""
EDGE_TEXT = st.one_of(st.just(""), BLANK, SPECIAL, SEARCH, st.text(max_size=40), SURROGATE, LONG)
TEXT = weighted(WORD, EDGE_TEXT)

FLOAT = st.one_of(st.floats(), st.sampled_from([1.0, 2.5, -0.0, 1e300]))
HUGE = st.integers(4_301, 6_000).map(HugeNumber)
BOUNDS = [0, -1, 1, 100, 101, 150, 151, 1000, 1001, -1000, -1001, 2**31 - 1, -(2**31)]
BEYOND_32_BITS = [2**31, -(2**31) - 1, 2**53 + 1, 2**63, -(2**63) - 1, 10**100]
INT = weighted(
    st.one_of(st.integers(-10, 200), st.sampled_from(BOUNDS)),
    st.one_of(st.sampled_from(BEYOND_32_BITS), st.integers(), HUGE),
)

JUNK_SCALAR = st.one_of(st.none(), st.booleans(), INT, FLOAT, EDGE_TEXT, WORD, HUGE)
JUNK = st.recursive(
    JUNK_SCALAR,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(WORD, inner, max_size=4),
    max_leaves=6,
)
"""A value of any JSON type (and a few no parser reads): mostly the wrong type for its field."""

WRONG_ENUM = st.one_of(
    st.sampled_from(["", "friend", "Friend", "FRIENDS", " FRIEND", "round-robin", "QUEUED", "3"]),
    st.text(max_size=12),
    st.integers(-1, 6),
)
RECORD_ID = st.from_regex(r"[A-Za-z0-9_\-.]{1,100}", fullmatch=True)


def ids(*existing: str) -> S:
    """Ids of records that exist (mostly of the expected kind) or not, or not ids at all."""
    known = st.sampled_from(existing) if existing else st.nothing()
    others = st.one_of(st.sampled_from(EVERY_ID), RECORD_ID, EDGE_TEXT, st.integers())
    return weighted(known, others, 2)


# --- Checks -----------------------------------------------------------------------------------


def check_errors(errors: list[dict[str, Any]]) -> None:
    for error in errors:
        assert isinstance(error["message"], str) and error["message"], error
        assert error["message"] != MASKED, errors
