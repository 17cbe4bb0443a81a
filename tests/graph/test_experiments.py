"""Experiments over real HTTP and websockets: create, start (twice, concurrently), cancel and
resume, progress, lists, the progress subscription, and the error paths."""

import asyncio
import json
import time
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio as redis

from bench.support.fake_llm import FakeLLM
from parley.engine.models import LOCAL_MODEL
from parley.storage import keys
from parley.storage.models import (
    AgentProfile,
    EnvironmentProfile,
    EpisodeLog,
    EpisodeStatus,
    Experiment,
    RelationshipProfile,
)
from tests.support.experiments import Worlds, sampled_design
from tests.support.server import GraphQLClient, init, receive, send, serve, socket

pytestmark = pytest.mark.usefixtures("redis_client")  # binds the records the tests save
CREATE = """
mutation($input: CreateExperimentInput!) {
  createExperiment(input: $input) {
    experiment { id name tag slotCount design
      slots(first: 100) { totalCount nodes { number scenarioId agentIds agentModels repeat model
                                             seat episode { id status } } } }
    userErrors { field message code }
  }
}"""
START = """
mutation($id: ID!) {
  startExperiment(input: {id: $id}) { changed experiment { id } userErrors { field message code } }
}"""
CANCEL = """
mutation($id: ID!) {
  cancelExperiment(input: {id: $id}) { changed userErrors { field message code } }
}"""
PROGRESS = """
query($id: ID!) {
  experiment(id: $id) {
    progress { total pending completed failed cancelled unfinished finished allCompleted
               episodesPerMinute secondsLeft counts { status count } }
  }
}"""
WATCH = """
subscription($id: ID!) {
  experimentProgress(id: $id) { total pending completed unfinished finished allCompleted }
}"""


design = sampled_design


@pytest.fixture
async def world() -> AsyncIterator[Worlds]:
    worlds = Worlds()
    yield worlds
    await worlds.drop()


async def create(gql: GraphQLClient, name: str, tag: str, plan: dict[str, Any]) -> dict[str, Any]:
    variables = {"input": {"name": name, "tag": tag, "design": plan}}
    payload: dict[str, Any] = (await gql.data(CREATE, variables))["createExperiment"]
    return payload


async def created(gql: GraphQLClient, name: str, tag: str, plan: dict[str, Any]) -> dict[str, Any]:
    payload = await create(gql, name, tag, plan)
    assert payload["userErrors"] == [], payload
    experiment: dict[str, Any] = payload["experiment"]
    return experiment


async def made(world: Worlds, gql: GraphQLClient, fake: FakeLLM, name: str) -> dict[str, Any]:
    """An experiment named and tagged `name`, of the sampled design over a new world of that
    name, the fake model playing every seat."""
    scenarios, _ = await world(name)
    return await created(gql, name, name, design(scenarios, fake.model_name()))


async def start(gql: GraphQLClient, pk: str) -> int:
    payload = (await gql.data(START, {"id": pk}))["startExperiment"]
    assert payload["userErrors"] == [], payload
    changed: int = payload["changed"]
    return changed


async def progress(gql: GraphQLClient, pk: str) -> dict[str, Any]:
    found: dict[str, Any] = (await gql.data(PROGRESS, {"id": pk}))["experiment"]["progress"]
    return found


async def episodes_of(pk: str) -> list[EpisodeLog]:
    found: list[EpisodeLog] = await EpisodeLog.find(EpisodeLog.experiment_id == pk).all()
    return found


async def test_design_expands_with_both_seat_orders_and_repeats(
    world: Worlds, gql: GraphQLClient, fake_llm: FakeLLM
) -> None:
    scenarios, agents = await world("expand")
    model, partner = fake_llm.model_name("a"), fake_llm.model_name("p")
    plan = design(scenarios, model, tag="expand", repeats=2)
    plan["models"] = {"compare": [model], "partner": partner}
    experiment = await created(gql, "expand", "expand", plan)
    # 2 scenarios x 2 sampled pairs x 2 seat orders x 2 repeats
    assert experiment["slotCount"] == 16
    slots = experiment["slots"]["nodes"]
    assert [s["number"] for s in slots] == list(range(16))
    assert {tuple(s["agentModels"]) for s in slots} == {(model, partner), (partner, model)}
    assert all(s["model"] == model for s in slots)
    assert Counter(s["seat"] for s in slots) == {0: 8, 1: 8}
    assert all(set(s["agentIds"]) <= set(agents) and len(set(s["agentIds"])) == 2 for s in slots)
    assert all(s["episode"] is None for s in slots)
    assert json.loads(experiment["design"])["repeats"] == 2


async def test_same_seed_same_slots_and_explicit_seats(
    world: Worlds, gql: GraphQLClient, fake_llm: FakeLLM
) -> None:
    scenarios, agents = await world("seed")
    model = fake_llm.model_name()
    one = await created(gql, "seed-a", "seed", design(scenarios, model, tag="seed"))
    two = await created(gql, "seed-b", "seed", design(scenarios, model, tag="seed"))
    other = design(scenarios, model, tag="seed")
    other["agents"]["seed"] = 8
    three = await created(gql, "seed-c", "seed", other)

    def drawn(e: dict[str, Any]) -> list[Any]:
        return [(s["scenarioId"], s["agentIds"]) for s in e["slots"]["nodes"]]

    assert drawn(one) == drawn(two)
    assert drawn(one) != drawn(three)  # 2 scenarios x 2 draws among 6 ordered pairs

    seats = design(scenarios, model)
    seats["models"] = {"seats": [[model, fake_llm.model_name("b")]]}
    seats["agents"] = {"pairs": [[agents[0], agents[1]], [agents[2], agents[0]]]}
    explicit = await created(gql, "seats", "seed", seats)
    slots = explicit["slots"]["nodes"]
    assert [s["agentIds"] for s in slots] == [[agents[0], agents[1]], [agents[2], agents[0]]] * 2
    assert all(s["agentModels"] == [model, fake_llm.model_name("b")] for s in slots)
    assert all(s["seat"] is None and s["model"] == "" for s in slots)


async def test_relationship_sampling_takes_only_matching_pairs(
    world: Worlds, gql: GraphQLClient, fake_llm: FakeLLM
) -> None:
    scenarios, agents = await world("kin", agents=4)
    friends = RelationshipProfile(agent_1_id=agents[0], agent_2_id=agents[1], relationship=3)
    strangers = RelationshipProfile(agent_1_id=agents[2], agent_2_id=agents[3], relationship=0)
    outsider = AgentProfile(first_name="Out", last_name="Sider")  # no tag: never drawn
    await outsider.save()
    outside = RelationshipProfile(agent_1_id=str(outsider.pk), agent_2_id=agents[1], relationship=3)
    for relationship in (friends, strangers, outside):
        await relationship.save()
    try:
        plan = design(scenarios, fake_llm.model_name())
        plan["agents"] = {"sample": "RELATIONSHIP", "seed": 1, "pairsPerScenario": 1, "tag": "kin"}
        experiment = await created(gql, "kin", "kin", plan)
        by_scenario = {s["scenarioId"]: s["agentIds"] for s in experiment["slots"]["nodes"]}
        # the first scenario assumes FRIEND, the second STRANGER
        assert by_scenario == {scenarios[0]: agents[:2], scenarios[1]: agents[2:]}
    finally:
        for relationship in (friends, strangers, outside):
            await RelationshipProfile.delete(str(relationship.pk))
        await AgentProfile.delete(str(outsider.pk))


async def test_start_twice_and_concurrently_makes_one_episode_per_slot(
    world: Worlds, gql: GraphQLClient, fake_llm: FakeLLM, redis_client: redis.Redis
) -> None:
    experiment = await made(world, gql, fake_llm, "twice")
    pk = experiment["id"]
    try:
        counts = await asyncio.gather(*(start(gql, pk) for _ in range(4)))
        assert sum(counts) == 8
        assert await start(gql, pk) == 0
        stored = await episodes_of(pk)
        assert len(stored) == 8
        assert all(e.tag == "twice" and e.status == "QUEUED" for e in stored)
        slots = await redis_client.hgetall(keys.experiment_slots(pk))
        assert sorted(slots.values()) == sorted(str(e.pk) for e in stored)
        found = await progress(gql, pk)
        assert found["total"] == 8 and found["pending"] == 0 and found["unfinished"] == 8
        queued = {c["status"]: c["count"] for c in found["counts"]}
        assert queued["QUEUED"] == 8 and not found["finished"]
    finally:
        await gql.data(CANCEL, {"id": pk})


async def test_cancel_then_start_refills_only_the_cancelled(
    world: Worlds, gql: GraphQLClient, fake_llm: FakeLLM
) -> None:
    experiment = await made(world, gql, fake_llm, "resume")
    pk = experiment["id"]
    assert await start(gql, pk) == 8
    first = {str(e.pk) for e in await episodes_of(pk)}
    # one episode completes as if run (the rest are still queued)
    done = await EpisodeLog.get(sorted(first)[0])
    done.status = EpisodeStatus.COMPLETED
    await done.save()
    cancelled = (await gql.data(CANCEL, {"id": pk}))["cancelExperiment"]
    assert cancelled == {"changed": 7, "userErrors": []}
    found = await progress(gql, pk)
    assert found["cancelled"] == 7 and found["completed"] == 1 and found["finished"]
    assert not found["allCompleted"]
    try:
        assert await start(gql, pk) == 7
        after = {str(e.pk) for e in await episodes_of(pk)}
        assert first < after and len(after) == 15  # the 7 cancelled stay, 7 new ones beside
        assert (await progress(gql, pk))["unfinished"] == 7
    finally:
        await gql.data(CANCEL, {"id": pk})


async def test_same_name_and_design_finds_it_another_design_conflicts(
    world: Worlds, gql: GraphQLClient, fake_llm: FakeLLM
) -> None:
    scenarios, _ = await world("again")
    plan = design(scenarios, fake_llm.model_name())
    one = await created(gql, "again", "again", plan)
    two = await created(gql, "again", "again", plan)
    assert one["id"] == two["id"]
    payload = await create(gql, "again", "again", {**plan, "repeats": 3})
    assert payload["experiment"] is None
    assert payload["userErrors"][0]["code"] == "CONFLICT"
    listed = await gql.data(
        """query { experiments(filter: {name: "again", tag: "again"}) {
             totalCount nodes { id name } } }"""
    )
    assert listed["experiments"] == {"totalCount": 1, "nodes": [{"id": one["id"], "name": "again"}]}


async def test_list_pages_newest_first(
    world: Worlds, gql: GraphQLClient, fake_llm: FakeLLM
) -> None:
    scenarios, _ = await world("pages")
    ids = [
        (await created(gql, f"page-{i}", "pages", design(scenarios, fake_llm.model_name())))["id"]
        for i in range(3)
    ]
    query = """query($after: String) {
               experiments(filter: {tag: "pages"}, first: 2, after: $after) {
                 totalCount pageInfo { hasNextPage endCursor } nodes { id } } }"""
    first = (await gql.data(query, {"after": None}))["experiments"]
    second = (await gql.data(query, {"after": first["pageInfo"]["endCursor"]}))["experiments"]
    assert first["totalCount"] == 3 and first["pageInfo"]["hasNextPage"]
    assert [n["id"] for n in first["nodes"] + second["nodes"]] == ids[::-1]


async def test_a_record_whose_design_does_not_validate_leaves_the_list_readable(
    gql: GraphQLClient,
) -> None:
    """Another writer's experiment (no design, or arms that are no arms) reads as one without
    arms: the list's progress column reads every experiment on the page."""
    tag = f"foreign-{time.time_ns()}"
    designs = [{}, {"arms": [{"name": "x"}]}, {"arms": "not a list"}]
    for i, foreign in enumerate(designs):
        await Experiment(name=f"foreign-{i}", tag=tag, design=foreign, slot_count=2).save()
    query = """query($tag: String) { experiments(filter: {tag: $tag}) {
                 nodes { name progress { total pending notReached } } } }"""
    nodes = (await gql.data(query, {"tag": tag}))["experiments"]["nodes"]
    assert sorted(n["name"] for n in nodes) == ["foreign-0", "foreign-1", "foreign-2"]
    assert {(n["progress"]["total"], n["progress"]["pending"]) for n in nodes} == {(2, 2)}


@pytest.mark.parametrize(
    ("change", "field", "code"),
    [
        (
            {"scenarios": {"ids": ["nope"]}},
            ["input", "design", "scenarios", "ids", "0"],
            "NOT_FOUND",
        ),
        ({"scenarios": {"tag": "no-such-tag"}}, ["input", "design", "scenarios"], "INVALID"),
        ({"scenarios": {}}, ["input", "design", "scenarios"], "INVALID"),
        (
            {"agents": {"pairs": [["ghost", "ghost2"]]}},
            ["input", "design", "agents", "pairs", "0", "0"],
            "NOT_FOUND",
        ),
        ({"agents": {}}, ["input", "design", "agents"], "INVALID"),
        (
            {"models": {"compare": ["no-such-model"], "partner": "x"}},
            ["input", "design", "models", "compare", "0"],
            "INVALID",
        ),
        ({"models": {}}, ["input", "design", "models"], "INVALID"),
        ({"repeats": 0}, ["input", "design", "repeats"], "INVALID"),
        ({"repeats": 101}, ["input", "design", "repeats"], "INVALID"),
        ({"maxTurns": 0}, ["input", "design", "maxTurns"], "INVALID"),
        ({"maxTurns": 101}, ["input", "design", "maxTurns"], "INVALID"),
        (
            {"evaluationDimensionListId": "nope"},
            ["input", "design", "evaluationDimensionListId"],
            "NOT_FOUND",
        ),
        (
            {"agents": {"sample": "UNIFORM", "tag": "nobody-has-this-tag"}},
            ["input", "design", "agents"],
            "INVALID",
        ),
    ],
)
async def test_invalid_designs_are_refused_and_write_nothing(
    world: Worlds,
    gql: GraphQLClient,
    fake_llm: FakeLLM,
    unchanged: Any,
    change: dict[str, Any],
    field: list[str],
    code: str,
) -> None:
    scenarios, _ = await world("bad")
    plan = {**design(scenarios, fake_llm.model_name()), **change}
    async with unchanged():
        payload = await create(gql, "bad", "bad", plan)
    assert payload["experiment"] is None
    assert [e["field"] for e in payload["userErrors"]][:1] == [field], payload
    assert payload["userErrors"][0]["code"] == code and payload["userErrors"][0]["message"]


async def test_empty_name_and_too_many_slots_are_refused(
    world: Worlds, gql: GraphQLClient, fake_llm: FakeLLM, unchanged: Any
) -> None:
    scenarios, _ = await world("huge")
    async with unchanged():
        empty = await create(gql, " ", "huge", design(scenarios, fake_llm.model_name()))
        big = design(scenarios, fake_llm.model_name(), repeats=100)
        big["agents"]["pairsPerScenario"] = 100
        huge = await create(gql, "huge", "huge", big)
    assert empty["userErrors"][0]["field"] == ["input", "name"]
    assert "more than 10000" in huge["userErrors"][0]["message"]


async def test_unknown_ids_are_clear_errors(gql: GraphQLClient, unchanged: Any) -> None:
    async with unchanged():
        started = (await gql.data(START, {"id": "nope"}))["startExperiment"]
        cancelled = (await gql.data(CANCEL, {"id": "nope"}))["cancelExperiment"]
        found = await gql.data('query { experiment(id: "nope") { id } }')
    for payload in (started, cancelled):
        assert payload["userErrors"] == [
            {
                "field": ["input", "id"],
                "message": "no experiment with id 'nope'",
                "code": "NOT_FOUND",
            }
        ]
    assert found == {"experiment": None}


async def test_start_after_a_scenario_was_deleted_names_the_slot(
    world: Worlds, gql: GraphQLClient, fake_llm: FakeLLM
) -> None:
    scenarios, _ = await world("gone")
    experiment = await created(gql, "gone", "gone", design(scenarios, fake_llm.model_name()))
    await EnvironmentProfile.delete(scenarios[1])
    payload = (await gql.data(START, {"id": experiment["id"]}))["startExperiment"]
    assert payload["changed"] == 0
    assert payload["userErrors"][0]["code"] == "NOT_FOUND"
    assert payload["userErrors"][0]["message"].startswith("slot 4: no scenario")
    assert await episodes_of(experiment["id"]) == []


async def test_progress_subscription_follows_a_run_to_the_end(
    world: Worlds, redis_url: str, tmp_path: Path, fake_llm: FakeLLM
) -> None:
    fake_llm.delay = 0.2  # each episode takes a few of these: a progress while they run
    scenarios, _ = await world("live")
    async with (
        serve(redis_url, tmp_path, worker=True) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as http,
    ):
        gql = GraphQLClient(http)
        plan = design(scenarios, fake_llm.model_name(), tag="live")  # distinct agent names
        experiment = await created(gql, "live", "live", plan)
        pk = experiment["id"]
        async with socket(url) as ws:
            await init(ws)
            payload = {"query": WATCH, "variables": {"id": pk}}
            await send(ws, {"type": "subscribe", "id": "1", "payload": payload})
            first = await receive(ws)
            assert first["payload"]["data"]["experimentProgress"]["pending"] == 8
            assert await start(gql, pk) == 8
            seen = []
            while True:
                message = await asyncio.wait_for(receive_any(ws), 60)
                if message["type"] == "complete":
                    break
                seen.append(message["payload"]["data"]["experimentProgress"])
        final = await progress(gql, pk)
    errors = [e.error for e in await episodes_of(pk) if e.status != EpisodeStatus.COMPLETED]
    assert seen and seen[-1]["finished"] and seen[-1]["allCompleted"], errors
    assert seen[-1]["completed"] == 8 and seen[-1]["unfinished"] == 0
    completed = [s["completed"] for s in seen]
    assert completed == sorted(completed)
    assert any(s["pending"] == 0 and s["unfinished"] > 0 for s in seen)  # queued, not done
    assert final["completed"] == 8 and final["episodesPerMinute"] > 0 and final["secondsLeft"] == 0
    assert len(await episodes_of(pk)) == 8


async def receive_any(ws: Any) -> dict[str, Any]:
    message: dict[str, Any] = json.loads(await ws.recv())
    return message


async def test_subscription_to_an_unknown_experiment_is_an_error(api_url: str) -> None:
    async with socket(api_url) as ws:
        await init(ws)
        payload = {"query": WATCH, "variables": {"id": "nope"}}
        await send(ws, {"type": "subscribe", "id": "1", "payload": payload})
        message = await receive(ws)
    assert message["type"] == "next", message
    assert message["payload"]["errors"][0]["message"] == "no experiment with id 'nope'"


@pytest.mark.parametrize("name", ["design.toml", "design-hosted.toml", "arms.toml"])
async def test_the_example_design_files_are_valid_inputs(gql: GraphQLClient, name: str) -> None:
    from parley.client.experiment import read_design
    from tests.support import repo_root

    request = read_design(repo_root() / "examples" / "experiments" / name)
    assert request["design"]["agents"]["sample"] == "RELATIONSHIP"
    assert request["design"]["turnOrder"] == "ROUND_ROBIN"
    payload = (await gql.data(CREATE, {"input": request}))["createExperiment"]
    # Its field names and values pass the schema; what it names may not be stored or usable
    # here (the sample data, a provider key), and is refused as data.
    if payload["experiment"] is None:
        assert payload["userErrors"] and all(e["message"] for e in payload["userErrors"])


def test_the_example_design_runs_offline_on_the_embedded_model() -> None:
    """The shipped example needs no key: every model it names is the embedded one."""
    from parley.client.experiment import read_design
    from tests.support import repo_root

    design = read_design(repo_root() / "examples" / "experiments" / "design.toml")["design"]
    named = {design["judgeModel"], *(m for seats in design["models"]["seats"] for m in seats)}
    assert named == {LOCAL_MODEL}
    assert design["maxTurns"] * design["repeats"] <= 8  # small enough for a first run


async def test_progress_subscription_sees_a_cancel_and_ends(
    world: Worlds, gql: GraphQLClient, api_url: str, fake_llm: FakeLLM
) -> None:
    scenarios, _ = await world("watch-cancel")
    plan = design(scenarios, fake_llm.model_name(), tag="watch-cancel")
    pk = (await created(gql, "watch-cancel", "watch-cancel", plan))["id"]
    assert await start(gql, pk) == 8
    async with socket(api_url) as ws:
        await init(ws)
        payload = {"query": WATCH, "variables": {"id": pk}}
        await send(ws, {"type": "subscribe", "id": "1", "payload": payload})
        first = (await receive(ws))["payload"]["data"]["experimentProgress"]
        assert first["unfinished"] == 8 and not first["finished"]
        assert (await gql.data(CANCEL, {"id": pk}))["cancelExperiment"]["changed"] == 8
        seen = []
        while (message := await receive(ws))["type"] != "complete":
            seen.append(message["payload"]["data"]["experimentProgress"])
    assert seen[-1]["finished"] and not seen[-1]["allCompleted"]
    assert seen[-1]["unfinished"] == 0 and seen[-1]["completed"] == 0
    assert (await progress(gql, pk))["cancelled"] == 8


async def test_two_agents_of_one_name_are_never_paired(
    world: Worlds, gql: GraphQLClient, fake_llm: FakeLLM, unchanged: Any
) -> None:
    """An explicit pair of two agents of one name is refused naming them; sampling draws
    around such agents (relationship sampling once drew one: 2 of 12 episodes failed)."""
    scenarios, agents = await world("names", agents=3)
    twin = AgentProfile(first_name="Exp0", last_name="names", tag="names")  # agents[0]'s name
    await twin.save()
    try:
        plan = design(scenarios, fake_llm.model_name())
        plan["agents"] = {"pairs": [[agents[1], agents[2]], [agents[0], str(twin.pk)]]}
        async with unchanged():
            refused = await create(gql, "names", "names", plan)
        assert refused["experiment"] is None
        assert refused["userErrors"] == [
            {
                "field": ["input", "design", "agents", "pairs", "1", "1"],
                "message": f"agents {agents[0]!r} and {str(twin.pk)!r} are both named "
                "'Exp0 names': pair agents with different names (a transcript tells agents "
                "apart by name)",
                "code": "INVALID",
            }
        ]
        plan["agents"] = {"sample": "UNIFORM", "seed": 3, "pairsPerScenario": 50, "tag": "names"}
        sampled = await created(gql, "names", "names", plan)
        pairs = {frozenset(s["agentIds"]) for s in sampled["slots"]["nodes"]}
        assert frozenset((agents[0], str(twin.pk))) not in pairs
        assert any(str(twin.pk) in pair for pair in pairs)  # the twin is drawn, with others
    finally:
        await AgentProfile.delete(str(twin.pk))


async def test_an_experiment_whose_episodes_all_failed_gives_no_rate(
    world: Worlds, gql: GraphQLClient, fake_llm: FakeLLM
) -> None:
    """Failed episodes end fast: counted in the rate, 12 that failed within a second read as
    "3111.3 episodes a minute, finished"."""
    experiment = await made(world, gql, fake_llm, "all-failed")
    pk = experiment["id"]
    assert await start(gql, pk) == 8
    for episode in await episodes_of(pk):
        episode.status = EpisodeStatus.FAILED
        episode.finished_at = time.time()
        await episode.save()
    found = await progress(gql, pk)
    assert (found["failed"], found["completed"], found["finished"], found["allCompleted"]) == (
        8,
        0,
        True,
        False,
    )
    assert (found["episodesPerMinute"], found["secondsLeft"]) == (0.0, 0.0)
