"""Random and hostile values for every mutation input and subscription argument (issue 5).

Hypothesis sends each mutation over real HTTP, and each subscription over a real websocket, a mix
of valid-looking values and junk: any unicode (empty, blank, NUL, lone surrogates, up to 30,000
characters), integers beyond 32 and 64 bits and beyond what a JSON parser reads, floats with NaN
and infinities, wrong types, wrong enum names, nested objects, long lists, and ids of records that
exist or not. Every answer must be clean: no HTTP 500, no traceback, no masked "Unexpected error."
(a crash), and a refused mutation (GraphQL errors or userErrors) leaves Redis exactly as it was.
"""

import asyncio
import copy
import json
import math
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pytest
import redis.asyncio as redis
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from websockets import Subprotocol
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from parley.core.limits import LIST_MAX, MAX_AGENTS, NAME_MAX, TEXT_MAX
from parley.engine.models import DEFAULT_MODEL
from parley.graph.settings import Settings
from parley.lifecycle.start import MAX_BATCH
from parley.storage.connection import open_client, prepare
from parley.storage.embedded import EmbeddedRedis
from parley.storage.keys import INDEXED_DIMENSIONS, relationship_pair
from parley.storage.keys import JOBS as STREAM
from tests.support.database import snapshot
from tests.support.fuzzing import (
    AGENTS,
    DIMENSION_LIST,
    DIMENSION_LIST_NAME,
    FINISHED,
    INT,
    JUNK,
    MISSING,
    QUEUED,
    RELATIONSHIP,
    SCALE,
    SCENARIO,
    SEARCH,
    TAG,
    TEXT,
    WRONG_ENUM,
    HugeNumber,
    S,
    check_errors,
    cycle,
    encode,
    has_huge_number,
    ids,
    repeat,
    weighted,
    world_records,
)
from tests.support.server import GraphQLClient, serve

FUZZ = settings(
    max_examples=50 * SCALE,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
MAX_BODY = Settings.model_fields["max_body_bytes"].default
CODES = {"NOT_FOUND", "INVALID", "CONFLICT", "IN_USE"}


# --- Encoding -------------------------------------------------------------------------------


def literal(value: object) -> str:
    """`value` as a GraphQL input literal; a string naming an enum value becomes that value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, HugeNumber):
        return "9" * value.digits
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else {"nan": "NaN"}.get(str(value), "1e999")
    if isinstance(value, str):
        return value if value in ENUM_VALUES else json.dumps(value)
    if isinstance(value, list):
        return f"[{', '.join(literal(v) for v in value)}]"
    assert isinstance(value, dict)
    return f"{{{', '.join(f'{k}: {literal(v)}' for k, v in value.items())}}}"


# --- Strategies -----------------------------------------------------------------------------

RELATIONSHIP_TYPES = ["STRANGER", "KNOW_BY_NAME", "ACQUAINTANCE", "FRIEND"]
RELATIONSHIP_TYPES += ["ROMANTIC_RELATIONSHIP", "FAMILY_MEMBER"]
TURN_ORDERS = ["ROUND_ROBIN", "SIMULTANEOUS", "RANDOM"]
ENUM_VALUES = frozenset(RELATIONSHIP_TYPES + TURN_ORDERS)
MODEL_NAMES = [DEFAULT_MODEL, "gpt-4o-mini", "o3-mini", "custom/m@http://127.0.0.1:9/v1"]
MODEL_NAMES += ["custom/x@ftp://nowhere", "custom/@http://", "local/other", "custom/a b@http://x"]
MODEL = weighted(
    st.sampled_from(MODEL_NAMES),
    st.one_of(
        TEXT,
        st.builds(lambda a, b: a + b, st.sampled_from(["custom/", "local/", "gpt-", "o1"]), TEXT),
    ),
    1,
)


def enum(names: Sequence[str]) -> S:
    return weighted(st.sampled_from(names), WRONG_ENUM)


def many(item: S, limit: int = LIST_MAX) -> S:
    """Short lists mostly; sometimes long ones around and beyond the limit, up to 200 items."""
    long = st.builds(
        cycle,
        st.lists(item, min_size=1, max_size=3),
        st.one_of(st.integers(limit - 1, limit + 1), st.integers(limit, 200)),
    )
    return weighted(st.lists(item, max_size=6), long)


def nullable(typed: S) -> S:
    return weighted(typed, st.none())


@st.composite
def input_object(
    draw: st.DrawFn, required: Mapping[str, S], optional: Mapping[str, S], spoil: int = 4
) -> dict[str, Any]:
    """An input object: required fields present, optional ones at random; one time in `spoil`
    one or two fields get junk or go missing, now and then an unknown field joins."""
    names = [*required, *optional]
    spoiled: set[str] = set()
    if draw(st.integers(1, spoil)) == 1:
        spoiled = draw(st.sets(st.sampled_from(names), min_size=1, max_size=2))
    value: dict[str, Any] = {}
    for name in names:
        if name in spoiled:
            drawn = draw(st.one_of(JUNK, st.just(MISSING)))
        elif name in required:
            drawn = draw(required[name])
        elif draw(st.booleans()):
            drawn = draw(optional[name])
        else:
            continue
        if drawn is not MISSING:
            value[name] = drawn
    if draw(st.integers(1, 4 * spoil)) == 1:
        value[draw(st.sampled_from(["unknown", "pk", "first_name", "__typename"]))] = draw(JUNK)
    return value


def arguments(name: str, value: S) -> S:
    """Variables for an operation taking one argument: the value, junk, or nothing."""
    wrong = st.one_of(st.fixed_dictionaries({name: JUNK}), st.just({}))
    return weighted(st.fixed_dictionaries({name: value}), wrong, 6)


AGENT_TEXT = ["occupation", "gender", "genderPronoun", "publicInfo", "bigFive"]
AGENT_TEXT += ["personalityAndValues", "decisionMakingStyle", "secret", "mbti", "modelId", "tag"]
AGENT_OPTIONAL: dict[str, S] = {name: TEXT for name in AGENT_TEXT}
AGENT_OPTIONAL |= {"age": INT, "moralValues": many(TEXT), "schwartzPersonalValues": many(TEXT)}
SCENARIO_OPTIONAL: dict[str, S] = {"codename": TEXT, "source": TEXT, "tag": TEXT}
SCENARIO_OPTIONAL |= {"relationship": enum(RELATIONSHIP_TYPES)}
SCENARIO_OPTIONAL |= {"ageConstraint": nullable(TEXT), "occupationConstraint": nullable(TEXT)}
DIMENSION_INPUT = input_object(
    {
        "name": TEXT,
        "rangeLow": weighted(st.integers(-5, 5), INT),
        "rangeHigh": weighted(st.integers(6, 20), INT),
    },
    {"description": TEXT},
    spoil=12,
)
SIMULATION_INPUT = input_object(
    {"scenarioId": ids(SCENARIO), "agentIds": many(ids(*AGENTS), MAX_AGENTS)},
    {
        "agentModels": nullable(many(MODEL, MAX_AGENTS)),
        "judgeModel": nullable(MODEL),
        "maxTurns": INT,
        "turnOrder": enum(TURN_ORDERS),
        "evaluationDimensionListId": nullable(ids(DIMENSION_LIST)),
        "tag": TEXT,
        "idempotencyKey": nullable(weighted(TEXT, st.just("fuzz-retry"))),
    },
    spoil=8,
)


def delete_input(*existing: str) -> S:
    return arguments("input", input_object({"id": ids(*existing)}, {}))


# --- Mutations --------------------------------------------------------------------------------

ERRORS = "userErrors { field message code }"
AGENT = "agent { id firstName lastName name age moralValues tag }"
SCENARIO_FIELDS = "scenario { id scenario agentGoals relationship tag }"
EPISODE = "episode { id status tag }"
Shape = Literal["record", "delete", "batch", "cancel"]


@dataclass(frozen=True, repr=False)
class Mutation:
    name: str
    input_type: str
    selection: str
    variables: S
    shape: Shape
    record: str = ""
    """The payload field holding the written record (shape record)."""
    argument: str = "input"

    def __repr__(self) -> str:
        return self.name

    @property
    def document(self) -> str:
        return (
            f"mutation(${self.argument}: {self.input_type}) {{\n"
            f"  {self.name}({self.argument}: ${self.argument}) {{ {self.selection} {ERRORS} }}\n}}"
        )

    def inline(self, variables: dict[str, Any]) -> str:
        """The document with the argument written in it, as a literal, instead of a variable."""
        given = f"({self.argument}: {literal(variables[self.argument])})" if variables else ""
        return f"mutation {{ {self.name}{given} {{ {self.selection} {ERRORS} }} }}"


def record_mutation(name: str, input_type: str, record: str, variables: S) -> Mutation:
    return Mutation(name, input_type, record, variables, "record", record.split()[0])


def delete_mutation(name: str, variables: S) -> Mutation:
    return Mutation(name, "DeleteInput!", "deletedId", variables, "delete")


MUTATIONS = [
    record_mutation(
        "createAgent",
        "CreateAgentInput!",
        AGENT,
        arguments(
            "input",
            input_object({"firstName": TEXT, "lastName": TEXT}, {"id": ids(), **AGENT_OPTIONAL}),
        ),
    ),
    record_mutation(
        "updateAgent",
        "UpdateAgentInput!",
        AGENT,
        arguments(
            "input",
            input_object(
                {"id": ids(*AGENTS)},
                {k: nullable(v) for k, v in AGENT_OPTIONAL.items()}
                | {"firstName": nullable(TEXT), "lastName": nullable(TEXT)},
            ),
        ),
    ),
    Mutation(
        "deleteAgent",
        "DeleteAgentInput!",
        "deletedId deletedRelationshipIds",
        arguments("input", input_object({"id": ids(*AGENTS)}, {"cascade": st.booleans()})),
        "delete",
    ),
    record_mutation(
        "createScenario",
        "CreateScenarioInput!",
        SCENARIO_FIELDS,
        arguments(
            "input",
            input_object(
                {"scenario": TEXT, "agentGoals": many(TEXT)}, {"id": ids(), **SCENARIO_OPTIONAL}
            ),
        ),
    ),
    record_mutation(
        "updateScenario",
        "UpdateScenarioInput!",
        SCENARIO_FIELDS,
        arguments(
            "input",
            input_object(
                {"id": ids(SCENARIO)},
                {k: nullable(v) for k, v in SCENARIO_OPTIONAL.items()}
                | {"scenario": nullable(TEXT), "agentGoals": nullable(many(TEXT))},
            ),
        ),
    ),
    delete_mutation("deleteScenario", delete_input(SCENARIO)),
    record_mutation(
        "createRelationship",
        "CreateRelationshipInput!",
        "relationship { id agentId otherAgentId relationship backgroundStory tag }",
        arguments(
            "input",
            input_object(
                {
                    "agentId": ids(*AGENTS),
                    "otherAgentId": ids(*AGENTS),
                    "relationship": enum(RELATIONSHIP_TYPES),
                },
                {"id": ids(RELATIONSHIP), "backgroundStory": nullable(TEXT), "tag": TEXT},
            ),
        ),
    ),
    record_mutation(
        "updateRelationship",
        "UpdateRelationshipInput!",
        "relationship { id relationship backgroundStory tag }",
        arguments(
            "input",
            input_object(
                {"id": ids(RELATIONSHIP)},
                {
                    "relationship": nullable(enum(RELATIONSHIP_TYPES)),
                    "backgroundStory": nullable(TEXT),
                    "tag": nullable(TEXT),
                },
            ),
        ),
    ),
    delete_mutation("deleteRelationship", delete_input(RELATIONSHIP)),
    record_mutation(
        "createEvaluationDimensionList",
        "CreateEvaluationDimensionListInput!",
        "evaluationDimensionList { id name dimensions { name rangeLow rangeHigh } }",
        arguments(
            "input",
            input_object(
                {
                    "name": st.one_of(TEXT, SEARCH, st.just(DIMENSION_LIST_NAME)),
                    "dimensions": many(DIMENSION_INPUT),
                },
                {"id": ids(DIMENSION_LIST)},
            ),
        ),
    ),
    delete_mutation("deleteEvaluationDimensionList", delete_input(DIMENSION_LIST)),
    record_mutation(
        "startSimulation", "StartSimulationInput!", EPISODE, arguments("input", SIMULATION_INPUT)
    ),
    Mutation(
        "startSimulations",
        "[StartSimulationInput!]!",
        "episodes { id status tag }",
        arguments(
            "inputs", weighted(st.lists(SIMULATION_INPUT, max_size=4), many(SIMULATION_INPUT))
        ),
        "batch",
        argument="inputs",
    ),
    Mutation("cancelSimulation", "DeleteInput!", EPISODE, delete_input(QUEUED, FINISHED), "cancel"),
    delete_mutation("deleteEpisode", delete_input(QUEUED, FINISHED)),
]


# --- Redis ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
async def own_redis_url(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    """A Redis of this module's own: every example reads every key before and after its
    mutation, so it must hold this module's world alone, not all the session has written."""
    server = EmbeddedRedis(tmp_path_factory.mktemp("fuzz-redis"))
    yield await server.start()
    await server.stop()


@pytest.fixture(scope="module")
async def redis_client(own_redis_url: str, redis_client: redis.Redis) -> AsyncIterator[redis.Redis]:
    """This module's client, its records' models bound to it; the session's binding is put
    back after it (`redis_client` inside is the session's)."""
    own = open_client(own_redis_url)
    try:
        await prepare(own)
        yield own
    finally:
        await prepare(redis_client)
        await own.aclose()


@pytest.fixture(scope="module")
async def api_url(
    own_redis_url: str, redis_client: redis.Redis, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[str]:
    """A uvicorn serving this module's Redis (bound after the models are)."""
    async with serve(own_redis_url, tmp_path_factory.mktemp("fuzz-data")) as url:
        yield url


async def assert_unchanged(client: redis.Redis, before: dict[str, str], what: str) -> None:
    after = await snapshot(client)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    assert not changed, f"{what} changed {changed}"


@dataclass(repr=False)
class World:
    client: redis.Redis
    baseline: set[str]

    def __repr__(self) -> str:
        return "World()"

    async def drop_new_keys(self) -> None:
        """Delete what the test wrote (the shared job stream stays: its jobs' episodes go; so do
        the claimed dimension names: the index fields they count stay too)."""
        extra = [k async for k in self.client.scan_iter(count=1000) if k not in self.baseline]
        extra = [k for k in extra if k not in (STREAM, INDEXED_DIMENSIONS)]
        if extra:
            await self.client.delete(*extra)

    async def restore(self) -> None:
        """Back to the baseline plus the world, whatever the previous example did."""
        await self.drop_new_keys()
        async with self.client.pipeline(transaction=True) as pipe:
            for record in world_records(time.time()):
                key = type(record).make_primary_key(record.pk)
                pipe.json().set(key, "$", record.model_dump(mode="json"))
            pipe.set(relationship_pair(AGENTS[0], AGENTS[1]), RELATIONSHIP)
            await pipe.execute()


@pytest.fixture
async def world(redis_client: redis.Redis) -> AsyncIterator[World]:
    baseline = {key async for key in redis_client.scan_iter(count=1000)}
    world = World(redis_client, baseline)
    await world.restore()
    yield world
    await world.drop_new_keys()


# --- Checks -----------------------------------------------------------------------------------


async def send(gql: GraphQLClient, document: str, variables: Any) -> dict[str, Any] | None:
    """Post a document; return its body, or None when the transport refused it (cleanly)."""
    body = encode({"query": document, "variables": variables}).encode()
    response = await gql.http.post(
        "/graphql", content=body, headers={"content-type": "application/json"}
    )
    assert "Traceback" not in response.text, response.text
    if len(body) > MAX_BODY:
        assert response.status_code == 413, response.text
        assert f"limit of {MAX_BODY} bytes" in response.text
        return None
    if has_huge_number(variables):
        assert response.status_code == 400, response.text
        assert "Unable to parse request body as JSON" in response.text
        return None
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def check_user_errors(errors: list[dict[str, Any]], argument: str) -> None:
    for error in errors:
        assert error["field"] and error["field"][0] == argument, error
        assert error["message"] and "Traceback" not in error["message"], error
        assert error["code"] in CODES, error


def check_payload(mutation: Mutation, payload: dict[str, Any], variables: dict[str, Any]) -> None:
    """The payload agrees with itself: a result exactly when there are no user errors."""
    refused = bool(payload["userErrors"])
    if mutation.shape == "record":
        assert (payload[mutation.record] is None) == refused, payload
    elif mutation.shape == "delete":
        sent = variables["input"]["id"]
        assert payload["deletedId"] == (None if refused else str(sent)), payload
    elif mutation.shape == "batch":
        expected = 0 if refused else len(variables["inputs"])
        assert len(payload["episodes"]) == expected, payload
    elif not refused:
        assert payload["episode"]["status"] == "CANCELLED", payload
    else:
        codes = {e["code"] for e in payload["userErrors"]}
        assert (payload["episode"] is None) == ("CONFLICT" not in codes), payload


async def check_mutation(
    gql: GraphQLClient,
    client: redis.Redis,
    mutation: Mutation,
    variables: dict[str, Any],
    inline: bool = False,
) -> None:
    """Send one mutation (its input in variables, or `inline` in the document) and check the
    invariants of issue 5 on its answer."""
    before = await snapshot(client)
    if inline:
        body = await send(gql, mutation.inline(variables), None)
    else:
        body = await send(gql, mutation.document, variables)
    if body is None:
        event("refused by the transport")
        await assert_unchanged(client, before, f"a {mutation.name} refused by the transport")
        return
    check_errors(body.get("errors", []))
    payload = (body.get("data") or {}).get(mutation.name)
    if payload is None:
        assert body.get("errors"), body
        event("GraphQL error")
    else:
        check_user_errors(payload["userErrors"], mutation.argument)
        check_payload(mutation, payload, variables)
        event("userErrors" if payload["userErrors"] else "accepted")
    if body.get("errors") or (payload and payload["userErrors"]):
        await assert_unchanged(client, before, f"a refused {mutation.name}")


# --- Tests: every mutation -------------------------------------------------------------------


@pytest.mark.parametrize("mutation", MUTATIONS, ids=[m.name for m in MUTATIONS])
@FUZZ
@given(data=st.data())
async def test_mutation_answers_random_input_cleanly(
    gql: GraphQLClient, world: World, mutation: Mutation, data: st.DataObject
) -> None:
    await world.restore()
    variables = data.draw(mutation.variables, label="variables")
    await check_mutation(gql, world.client, mutation, variables)


@pytest.mark.parametrize("mutation", MUTATIONS, ids=[m.name for m in MUTATIONS])
@settings(FUZZ, max_examples=20 * SCALE)
@given(data=st.data())
async def test_mutation_answers_random_literals_cleanly(
    gql: GraphQLClient, world: World, mutation: Mutation, data: st.DataObject
) -> None:
    """The same inputs written into the document, where the GraphQL parser reads them."""
    await world.restore()
    variables = data.draw(mutation.variables, label="variables")
    await check_mutation(gql, world.client, mutation, variables, inline=True)


# --- Tests: size limits -----------------------------------------------------------------------

Path = tuple[str | int, ...]


@dataclass(frozen=True, repr=False)
class Limit:
    mutation: Mutation
    base: Any
    """The argument's value, valid as it is."""
    path: Path
    kind: Literal["characters", "items"]
    limit: int
    item: Any = "x"

    def __repr__(self) -> str:
        return self.label

    @property
    def label(self) -> str:
        return f"{self.mutation.name}.{'.'.join(map(str, self.path))}"


def with_value(base: Any, path: Path, value: Any) -> Any:
    result = copy.deepcopy(base)
    target: Any = result
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return result


BY_NAME = {m.name: m for m in MUTATIONS}
NEW_AGENT = {"firstName": "Ada", "lastName": "Fuzz"}
NEW_SCENARIO = {"scenario": "A meeting.", "agentGoals": ["Talk", "Listen"]}
NEW_RELATIONSHIP = {"agentId": AGENTS[0], "otherAgentId": AGENTS[2], "relationship": "FRIEND"}
NEW_LIST = {"name": "Fuzz limits", "dimensions": [{"name": "d", "rangeLow": 0, "rangeHigh": 1}]}
SIMULATION = {"scenarioId": SCENARIO, "agentIds": AGENTS[:2]}
SHORT_AGENT = ["firstName", "lastName", "occupation", "gender", "genderPronoun", "mbti", "modelId"]
SHORT_AGENT += ["tag"]
LONG_AGENT = ["publicInfo", "bigFive", "personalityAndValues", "decisionMakingStyle", "secret"]


def text_limits(name: str, base: dict[str, Any], fields: dict[str, int]) -> list[Limit]:
    return [Limit(BY_NAME[name], base, (f,), "characters", n) for f, n in fields.items()]


def agent_limits(name: str, base: dict[str, Any]) -> list[Limit]:
    sizes = {f: NAME_MAX for f in SHORT_AGENT} | {f: TEXT_MAX for f in LONG_AGENT}
    return [
        *text_limits(name, base, sizes),
        Limit(BY_NAME[name], base, ("moralValues",), "items", LIST_MAX),
        Limit(BY_NAME[name], base, ("schwartzPersonalValues",), "items", LIST_MAX),
        Limit(
            BY_NAME[name],
            {**base, "moralValues": ["x"]},
            ("moralValues", 0),
            "characters",
            NAME_MAX,
        ),
    ]


def scenario_limits(name: str, base: dict[str, Any]) -> list[Limit]:
    sizes = {"codename": NAME_MAX, "source": NAME_MAX, "tag": NAME_MAX, "scenario": TEXT_MAX}
    sizes |= {"ageConstraint": TEXT_MAX, "occupationConstraint": TEXT_MAX}
    goals = {**base, "agentGoals": ["Talk", "Listen"]}
    return [
        *text_limits(name, base, sizes),
        Limit(BY_NAME[name], base, ("agentGoals",), "items", LIST_MAX),
        Limit(BY_NAME[name], goals, ("agentGoals", 1), "characters", TEXT_MAX),
    ]


def relationship_limits(name: str, base: dict[str, Any]) -> list[Limit]:
    return text_limits(name, base, {"backgroundStory": TEXT_MAX, "tag": NAME_MAX})


def simulation_limits(name: str, base: Any, at: Path) -> list[Limit]:
    mutation = BY_NAME[name]
    models = with_value(base, (*at, "agentModels"), [DEFAULT_MODEL])
    return [
        *[
            Limit(mutation, base, (*at, f), "characters", NAME_MAX)
            for f in ("judgeModel", "tag", "idempotencyKey")
        ],
        Limit(mutation, base, (*at, "agentIds"), "items", MAX_AGENTS, item=None),
        Limit(mutation, base, (*at, "agentModels"), "items", MAX_AGENTS, item=DEFAULT_MODEL),
        Limit(mutation, models, (*at, "agentModels", 0), "characters", NAME_MAX),
    ]


LIMITS = [
    *agent_limits("createAgent", NEW_AGENT),
    *agent_limits("updateAgent", {"id": AGENTS[2]}),
    *scenario_limits("createScenario", NEW_SCENARIO),
    *scenario_limits("updateScenario", {"id": SCENARIO}),
    *relationship_limits("createRelationship", NEW_RELATIONSHIP),
    *relationship_limits("updateRelationship", {"id": RELATIONSHIP}),
    *text_limits("createEvaluationDimensionList", NEW_LIST, {"name": NAME_MAX}),
    Limit(
        BY_NAME["createEvaluationDimensionList"],
        NEW_LIST,
        ("dimensions",),
        "items",
        LIST_MAX,
        item=NEW_LIST["dimensions"][0],
    ),
    Limit(
        BY_NAME["createEvaluationDimensionList"],
        NEW_LIST,
        ("dimensions", 0, "name"),
        "characters",
        NAME_MAX,
    ),
    Limit(
        BY_NAME["createEvaluationDimensionList"],
        NEW_LIST,
        ("dimensions", 0, "description"),
        "characters",
        TEXT_MAX,
    ),
    *simulation_limits("startSimulation", SIMULATION, ()),
    *simulation_limits("startSimulations", [SIMULATION], (0,)),
]
DENSE = st.characters(exclude_categories=["Z", "Cc", "Cs"])
"""Characters no validator strips, so a string's length is what the limit sees."""


def oversized(limit: Limit) -> S:
    beyond = st.one_of(
        st.integers(limit.limit + 1, limit.limit + 3), st.integers(limit.limit + 1, 200)
    )
    if limit.kind == "items":
        if limit.item is None:  # distinct valid ids
            return beyond.map(lambda n: [f"fuzz-id-{i}" for i in range(n)])
        return beyond.map(lambda n: [limit.item] * n)
    length = st.one_of(
        st.integers(limit.limit + 1, limit.limit + 3), st.integers(limit.limit + 1, 30_000)
    )
    return st.builds(repeat, st.text(DENSE, min_size=1, max_size=3), length)


def graphql_path(argument: str, path: Path) -> list[str]:
    return [argument, *(str(step) for step in path)]


@pytest.mark.parametrize("limit", LIMITS, ids=[item.label for item in LIMITS])
@settings(FUZZ, max_examples=6 * SCALE)
@given(data=st.data())
async def test_oversized_values_are_refused_naming_the_limit(
    gql: GraphQLClient, world: World, limit: Limit, data: st.DataObject
) -> None:
    mutation = limit.mutation
    value = data.draw(oversized(limit), label="value")
    before = await snapshot(world.client)
    body = await send(
        gql, mutation.document, {mutation.argument: with_value(limit.base, limit.path, value)}
    )
    assert body is not None and "errors" not in body, body
    payload = body["data"][mutation.name]
    path = graphql_path(mutation.argument, limit.path)
    # a list's message names what it holds ("at most 10 agents"), text its characters
    needle = f"at most {limit.limit} " + ("characters" if limit.kind == "characters" else "")
    matching = [e for e in payload["userErrors"] if e["field"] == path]
    assert matching and needle in matching[0]["message"], payload
    assert matching[0]["code"] == "INVALID"
    await assert_unchanged(world.client, before, f"a refused {mutation.name}")


async def test_batch_over_the_limit_is_refused_naming_it(gql: GraphQLClient, world: World) -> None:
    mutation = BY_NAME["startSimulations"]
    inputs = [SIMULATION] * (MAX_BATCH + 1)
    before = await snapshot(world.client)
    body = await send(gql, mutation.document, {"inputs": inputs})
    assert body is not None, body
    payload = body["data"]["startSimulations"]
    assert payload["episodes"] == []
    assert payload["userErrors"][0]["field"] == ["inputs"]
    assert f"at most {MAX_BATCH} simulations" in payload["userErrors"][0]["message"]
    await assert_unchanged(world.client, before, "a refused startSimulations")


# --- Tests: subscriptions ---------------------------------------------------------------------

EVENT = "kind episodeId sequence status attempt episode { id tag }"
SUBSCRIPTIONS = {
    "episodeStatus": (
        f"subscription($id: ID!) {{ episodeStatus(id: $id) {{ {EVENT} }} }}",
        arguments("id", ids(QUEUED, FINISHED)),
    ),
    "episodeEvents": (
        f"subscription($id: ID!) {{ episodeEvents(id: $id) {{ {EVENT} }} }}",
        arguments("id", ids(QUEUED, FINISHED)),
    ),
    "episodeUpdates": (
        f"subscription($tag: String) {{ episodeUpdates(tag: $tag) {{ {EVENT} }} }}",
        arguments(
            "tag",
            st.one_of(
                st.sampled_from([TAG, TAG.upper(), "fuzz", f"{TAG}|x", ""]), st.none(), TEXT, SEARCH
            ),
        ),
    ),
}
FIRST = 5.0
"""Seconds the server has to answer a subscription to one episode (it always answers)."""
QUIET = 0.1
"""Seconds without a message after which the client completes a subscription itself."""


@dataclass
class Conversation:
    messages: list[dict[str, Any]]
    closed: int | None = None
    """The server's close code, if it closed the connection."""


async def converse(url: str, document: str, variables: Any, first: float) -> Conversation:
    """Subscribe once over graphql-transport-ws; complete it after a quiet spell (`first` seconds
    before the first message), then ping to see the connection still serves."""
    talk = Conversation([])
    protocol = [Subprotocol("graphql-transport-ws")]
    async with connect(url, subprotocols=protocol, open_timeout=10) as ws:

        async def receive() -> dict[str, Any]:
            raw = await ws.recv()
            assert "Traceback" not in str(raw), raw
            message: dict[str, Any] = json.loads(raw)
            return message

        await ws.send(json.dumps({"type": "connection_init"}))
        assert (await receive())["type"] == "connection_ack"
        payload = {"query": document, "variables": variables}
        await ws.send(encode({"id": "1", "type": "subscribe", "payload": payload}))
        try:
            while not talk.messages or talk.messages[-1]["type"] not in ("complete", "error"):
                try:
                    async with asyncio.timeout(QUIET if talk.messages else first):
                        talk.messages.append(await receive())
                except TimeoutError:
                    await ws.send(json.dumps({"id": "1", "type": "complete"}))
                    break
            await ws.send(json.dumps({"type": "ping"}))
            async with asyncio.timeout(10):
                while (message := await receive())["type"] != "pong":
                    talk.messages.append(message)  # sent before the server saw "complete"
        except ConnectionClosed as closed:
            talk.closed = closed.rcvd.code if closed.rcvd else 1006  # no close frame
    return talk


def check_event(name: str, item: dict[str, Any], variables: dict[str, Any]) -> None:
    """An event is of a known kind and of what was asked for: the episode, or the tag."""
    assert item["kind"] in ("SNAPSHOT", "STATUS", "TURN"), item
    tag = variables.get("tag")
    if name == "episodeUpdates" and isinstance(tag, str):
        assert item["episode"] is not None and item["episode"]["tag"] == tag, (tag, item)
    elif name != "episodeUpdates":
        assert item["episodeId"] == str(variables["id"]), item


@pytest.mark.parametrize("name", list(SUBSCRIPTIONS))
@settings(FUZZ, max_examples=30 * SCALE)
@given(data=st.data())
async def test_subscription_answers_random_arguments_cleanly(
    api_url: str, world: World, name: str, data: st.DataObject
) -> None:
    document, strategy = SUBSCRIPTIONS[name]
    variables = data.draw(strategy, label="variables")
    url = api_url.replace("http://", "ws://") + "/graphql"
    talk = await converse(url, document, variables, QUIET if name == "episodeUpdates" else FIRST)
    if has_huge_number(variables):
        assert talk.closed == 4400, talk  # not JSON Python reads: refused as malformed
        return
    assert talk.closed is None, talk
    if name != "episodeUpdates":
        assert talk.messages, f"no answer to {name} with {variables!r}"
    for message in talk.messages:
        assert message["type"] in ("next", "error", "complete"), message
        assert message["id"] == "1", message
        if message["type"] == "error":
            check_errors(message["payload"])
        elif message["type"] == "next":
            check_errors(message["payload"].get("errors", []))
            result = message["payload"].get("data")
            if result is not None:
                check_event(name, result[name], variables)
            event("error" if message["payload"].get("errors") else "data")


LISTS_BY_TAG = ["episodes", "agents", "scenarios", "relationships"]


@pytest.mark.parametrize("tag", ["a\x7fb", "|"])
@pytest.mark.parametrize("field", LISTS_BY_TAG)
async def test_a_tag_filter_redis_cannot_search_is_refused(
    gql: GraphQLClient, field: str, tag: str
) -> None:
    """The index cannot look up a lone `|` or DEL (both found by the subscription fuzz test);
    `a|b` and other punctuation are searched (tests/resolvers/test_agents.py)."""
    query = f"query($tag: String) {{ {field}(filter: {{tag: $tag}}) {{ totalCount }} }}"
    body = await gql.post(query, {"tag": tag})
    assert [e["extensions"]["code"] for e in body["errors"]] == ["BAD_USER_INPUT"], body
    assert "A filter value or id cannot" in body["errors"][0]["message"], body


@pytest.mark.parametrize("tag", ["\x7f", "|"])
async def test_a_tag_subscription_redis_cannot_search_is_refused(api_url: str, tag: str) -> None:
    document, _ = SUBSCRIPTIONS["episodeUpdates"]
    url = api_url.replace("http://", "ws://") + "/graphql"
    talk = await converse(url, document, {"tag": tag}, QUIET)
    assert talk.closed is None, talk
    errors = [m for m in talk.messages if m["type"] in ("error", "next")]
    assert errors, talk
    payload = errors[0]["payload"]
    found = payload if isinstance(payload, list) else payload.get("errors", [])
    assert found and "A filter value or id cannot" in found[0]["message"], talk
    check_errors(found)
