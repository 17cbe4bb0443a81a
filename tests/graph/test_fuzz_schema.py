"""Every argument of every root field of Query and Mutation, fuzzed from the schema itself.

Each argument's strategy is derived from its GraphQL type, input objects field by field, with
the values of tests/support/fuzzing.py: text with RediSearch syntax (`|@{}()*-~"'`), NUL, DEL
and lone surrogates, numbers past 32 bits and past what a JSON parser reads, junk of the wrong
type, lists long, lone or nested past the JSON depth limit, alongside well-formed values and the
ids of a small stored world. Each example is one POST to a real `parley serve` (no worker) on a
Redis of this module's own, so what it writes stays there. No answer may be an HTTP 5xx, hold a
traceback, or carry an error coded INTERNAL ("Unexpected error."); userErrors carry the known
codes. A root field or an argument added later is fuzzed with no line here.

tests/graph/test_fuzz.py holds the stricter checks of the mutations it knows (a refusal leaves
Redis as it was, the size limits name themselves) and the subscriptions.
"""

import time
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import httpx
import pytest
import redis.asyncio as redis
from graphql import (
    GraphQLArgument,
    GraphQLEnumType,
    GraphQLField,
    GraphQLInputField,
    GraphQLInputObjectType,
    GraphQLInputType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLScalarType,
    get_named_type,
    is_leaf_type,
    is_required_argument,
    is_required_input_field,
)
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from bench.support.fake_llm import FakeLLM
from bench.support.processes import api_process, parley_env
from parley.core.limits import LIST_MAX
from parley.graph.schema import schema
from parley.resolvers.client_json import MAX_DEPTH
from parley.storage.keys import relationship_pair
from tests.support.fuzzing import (
    AGENTS,
    EDGE_TEXT,
    EVERY_ID,
    FLOAT,
    HOSTILE,
    INT,
    JUNK,
    MISSING,
    RELATIONSHIP,
    SCALE,
    TEXT,
    WRONG_ENUM,
    Nested,
    S,
    check_errors,
    cycle,
    encode,
    ids,
    weighted,
    world_records,
)
from tests.support.spare_redis import spare_redis

FUZZ = settings(
    max_examples=15 * SCALE,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
)
USER_ERROR_CODES = {"NOT_FOUND", "INVALID", "CONFLICT", "IN_USE", "FORBIDDEN"}
GRAPH = schema._schema
FIELDS: list[tuple[str, str, GraphQLField]] = [
    (operation, name, field)
    for operation, root in (("query", GRAPH.query_type), ("mutation", GRAPH.mutation_type))
    if root is not None
    for name, field in sorted(root.fields.items())
]


# --- Values by type ---------------------------------------------------------------------------


DEEP = st.one_of(st.integers(2, MAX_DEPTH + 40), st.just(5_000)).map(Nested)
"""Lists in lists: past MAX_DEPTH in all, the body is malformed (HTTP 400)."""
SCALARS: dict[str, S] = {
    "String": st.one_of(TEXT, HOSTILE),
    "ID": st.one_of(ids(*EVERY_ID), HOSTILE),
    "Int": INT,
    "Float": FLOAT,
    "Boolean": weighted(st.booleans(), JUNK, 10),
    "JSON": st.one_of(JUNK, DEEP, st.dictionaries(TEXT, JUNK, max_size=4)),
    "DateTime": weighted(st.sampled_from(["2025-01-01T00:00:00Z", "0001-01-01"]), EDGE_TEXT),
}


def by_name(fake_model: str) -> dict[str, S]:
    """Strategies for arguments and input fields by name, where the type alone says too little:
    a `model` a draft asks at once is never left to the default (the embedded model, which
    would start llama.cpp), but the fake one, an unknown name or junk."""
    return {
        "model": weighted(
            st.sampled_from([fake_model, "no-such-model", "custom/x@ftp://nowhere"]), TEXT
        )
    }


def value_of(kind: GraphQLInputType, name: str, named: dict[str, S], nullable: bool = True) -> S:
    """Values of GraphQL type `kind` (hostile ones among them), and null where it may be."""
    if isinstance(kind, GraphQLNonNull):
        return value_of(kind.of_type, name, named, nullable=False)
    if name in named:
        return named[name]
    typed = of_type(kind, name, named)
    return weighted(typed, st.none(), 8) if nullable else typed


def of_type(kind: GraphQLInputType, name: str, named: dict[str, S]) -> S:
    if isinstance(kind, GraphQLList):
        item = value_of(kind.of_type, name, named)
        long = st.builds(cycle, st.lists(item, min_size=1, max_size=2), st.integers(LIST_MAX, 60))
        shapes = st.one_of(item, long, DEEP)  # GraphQL takes a lone item as a list of one
        return weighted(st.lists(item, max_size=4), shapes, 6)
    if isinstance(kind, GraphQLInputObjectType):
        return fields_of(kind.fields, named)
    if isinstance(kind, GraphQLEnumType):
        return weighted(st.sampled_from(sorted(kind.values)), WRONG_ENUM, 5)
    assert isinstance(kind, GraphQLScalarType), kind
    return SCALARS[kind.name]


@st.composite
def fields_of(
    draw: st.DrawFn,
    fields: Mapping[str, GraphQLArgument | GraphQLInputField],
    named: dict[str, S],
) -> dict[str, Any]:
    """An input object, or a field's arguments: the required ones (and those named) present,
    the others at random; one time in four one or two of them get junk, null or go missing,
    and now and then a name the type does not have joins."""
    spoiled: set[str] = set()
    if fields and draw(st.integers(1, 4)) == 1:
        spoiled = draw(st.sets(st.sampled_from(sorted(fields)), min_size=1, max_size=2))
    value: dict[str, Any] = {}
    for name, field in fields.items():
        if name in spoiled:
            drawn = draw(st.one_of(JUNK, st.none(), st.just(MISSING)))
        elif required(field) or name in named or draw(st.booleans()):
            drawn = draw(value_of(field.type, name, named))
        else:
            continue
        if drawn is not MISSING:
            value[name] = drawn
    if draw(st.integers(1, 20)) == 1:
        value[draw(st.sampled_from(["unknown", "pk", "__typename"]))] = draw(JUNK)
    return value


def required(field: GraphQLArgument | GraphQLInputField) -> bool:
    if isinstance(field, GraphQLArgument):
        return is_required_argument(field)
    return is_required_input_field(field)


# --- Documents ---------------------------------------------------------------------------------


def selection(kind: GraphQLOutputType, depth: int = 0) -> str:
    """Every field of the returned type that needs no argument, and one level below."""
    named = get_named_type(kind)
    if is_leaf_type(named):
        return ""
    if not isinstance(named, GraphQLObjectType):
        return "{ __typename }"
    parts = ["__typename"]
    for name, field in named.fields.items():
        if any(is_required_argument(a) for a in field.args.values()):
            continue
        inner = get_named_type(field.type)
        if is_leaf_type(inner):
            parts.append(name)
        elif depth == 0:
            parts.append(f"{name} {selection(field.type, depth + 1)}")
    return "{ " + " ".join(parts) + " }"


def document(operation: str, name: str, field: GraphQLField) -> str:
    declared = ", ".join(f"${a}: {argument.type}" for a, argument in field.args.items())
    passed = ", ".join(f"{a}: ${a}" for a in field.args)
    head = f"{operation}({declared})" if declared else operation
    call = f"{name}({passed})" if passed else name
    return f"{head} {{ {call} {selection(field.type)} }}"


# --- The server and its world -------------------------------------------------------------------


@pytest.fixture(scope="module")
async def spare(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[str, redis.Redis]]:
    async with spare_redis(tmp_path_factory.mktemp("fuzz-redis")) as found:
        yield found


@pytest.fixture(scope="module")
def api(spare: tuple[str, redis.Redis], tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    directory = tmp_path_factory.mktemp("fuzz-api")
    env = parley_env(spare[0], directory / "data", worker="false")
    with api_process(env, directory / "api.log") as process:
        yield process.url
        log = process.output()
    assert "Traceback" not in log, log


async def restore(client: redis.Redis) -> None:
    """The world's records as they were (what examples wrote beside them stays)."""
    async with client.pipeline(transaction=True) as pipe:
        for record in world_records(time.time()):
            key = type(record).make_primary_key(str(record.pk))
            pipe.json().set(key, "$", record.model_dump(mode="json"))
        pipe.set(relationship_pair(AGENTS[0], AGENTS[1]), RELATIONSHIP)
        await pipe.execute()


def user_errors(data: Any) -> Iterator[dict[str, Any]]:
    if isinstance(data, dict):
        for key, item in data.items():
            if key == "userErrors" and isinstance(item, list):
                yield from item
            else:
                yield from user_errors(item)
    elif isinstance(data, list):
        for item in data:
            yield from user_errors(item)


# --- The test -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("operation", "name", "field"), FIELDS, ids=[f[1] for f in FIELDS])
@FUZZ
@given(data=st.data())
async def test_every_argument_is_answered_cleanly(
    spare: tuple[str, redis.Redis],
    api: str,
    fake_llm_server: FakeLLM,
    operation: str,
    name: str,
    field: GraphQLField,
    data: st.DataObject,
) -> None:
    await restore(spare[1])
    named = by_name(fake_llm_server.model_name())
    variables = data.draw(fields_of(field.args, named), "variables")
    body = encode({"query": document(operation, name, field), "variables": variables})
    async with httpx.AsyncClient(base_url=api, timeout=60) as http:
        response = await http.post(
            "/graphql", content=body, headers={"content-type": "application/json"}
        )
    assert response.status_code < 500, response.text
    assert "Traceback" not in response.text, response.text
    if response.status_code != 200:  # a body too large, too deep, or with a number too long
        assert response.status_code in (400, 413), response.text
        event(f"HTTP {response.status_code}")
        return
    answer = response.json()
    errors = answer.get("errors") or []
    check_errors(errors)
    codes = {(e.get("extensions") or {}).get("code") for e in errors}
    assert "INTERNAL" not in codes, answer
    for error in user_errors(answer.get("data")):
        assert error["code"] in USER_ERROR_CODES, error
    event("errors" if errors else "user errors" if any(user_errors(answer)) else "data")
