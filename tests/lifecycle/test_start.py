"""startSimulation and friends over real HTTP: validation, idempotency, batches, cancel, delete.

The API here runs without a worker, so every episode stays where the request left it.
"""

from typing import Any

import pytest
import redis.asyncio as redis

from bench.support.fake_llm import FakeLLM
from bench.support.simulation import EPISODE, START, make_world, start_input
from parley.storage.keys import JOBS as STREAM
from parley.storage.models import AgentProfile
from tests.support.server import GraphQLClient

BATCH = """
mutation($inputs: [StartSimulationInput!]!) {
  startSimulations(inputs: $inputs) { episodes { id status tag } userErrors { field code message } }
}"""
CANCEL = """
mutation($id: ID!) {
  cancelSimulation(input: {id: $id}) {
    episode { id status statusHistory { status reason } } userErrors { code message }
  }
}"""
DELETE = """
mutation($id: ID!) { deleteEpisode(input: {id: $id}) { deletedId userErrors { code message } } }"""
LIST = """
query($filter: EpisodeFilter, $first: Int) {
  episodes(filter: $filter, first: $first) { totalCount nodes { id status tag } }
}"""


@pytest.fixture
async def world() -> tuple[str, list[str]]:
    return await make_world("api")


async def test_start_returns_queued_at_once_in_sotopia_shape(
    gql: GraphQLClient, world: tuple[str, list[str]], fake_llm: FakeLLM, redis_client: Any
) -> None:
    scenario, agents = world
    before = await redis_client.xlen(STREAM)
    payload = await gql.data(
        START, {"input": start_input(scenario, agents, fake_llm.model_name(), tag="api-start")}
    )
    started = payload["startSimulation"]
    assert started["userErrors"] == []
    assert started["episode"]["status"] == "QUEUED" and started["episode"]["attempt"] == 0
    assert fake_llm.requests == []  # nothing slow happens in the request
    assert await redis_client.xlen(STREAM) == before + 1

    episode_id = started["episode"]["id"]
    stored = await redis_client.json().get(f":sotopia.database.logs.EpisodeLog:{episode_id}")
    assert stored["environment"] == scenario and stored["agents"] == agents
    assert stored["models"] == [fake_llm.model_name()] * 3
    assert stored["messages"] == [] and stored["rewards"] == [] and stored["status"] == "QUEUED"
    full = (await gql.data(EPISODE, {"id": episode_id}))["episode"]
    assert full["statusHistory"] == [
        {"status": "QUEUED", "attempt": 0, "reason": None, "sequence": 1, "resumedFromTurn": None}
    ]
    listed = await gql.data(LIST, {"filter": {"tag": "api-start", "status": "QUEUED"}})
    assert [n["id"] for n in listed["episodes"]["nodes"]] == [episode_id]
    by_agent = await gql.data(LIST, {"filter": {"agentId": agents[1]}})
    assert episode_id in [n["id"] for n in by_agent["episodes"]["nodes"]]
    await gql.data(CANCEL, {"id": episode_id})


def cases(scenario: str, agents: list[str], model: str) -> list[tuple[dict[str, Any], list[str]]]:
    base = start_input(scenario, agents, model)
    return [
        ({**base, "scenarioId": "no-such-scenario"}, ["input", "scenarioId"]),
        ({**base, "agentIds": [agents[0], "ghost"]}, ["input", "agentIds", "1"]),
        ({**base, "agentIds": [agents[0]]}, ["input", "agentIds"]),
        ({**base, "agentIds": [agents[0], agents[0]]}, ["input"]),
        ({**base, "maxTurns": 0}, ["input", "maxTurns"]),
        ({**base, "maxTurns": 101}, ["input", "maxTurns"]),
        ({**base, "agentModels": ["no-such-model"]}, ["input", "agentModels", "0"]),
        ({**base, "agentModels": [model, model, model]}, ["input"]),
        ({**base, "judgeModel": "custom/x@ftp://nowhere"}, ["input", "judgeModel"]),
        ({**base, "evaluationDimensionListId": "nope"}, ["input", "evaluationDimensionListId"]),
        ({**base, "tag": "t" * 201}, ["input", "tag"]),
    ]


async def test_bad_requests_write_nothing(
    gql: GraphQLClient, world: tuple[str, list[str]], fake_llm: FakeLLM, unchanged: Any
) -> None:
    scenario, agents = world
    async with unchanged():
        for variables, path in cases(scenario, agents, fake_llm.model_name()):
            payload = (await gql.data(START, {"input": variables}))["startSimulation"]
            assert payload["episode"] is None, variables
            assert payload["userErrors"][0]["field"] == path, payload
        for bad in ({"turnOrder": "SIDEWAYS"}, {"maxTurns": "many"}, {"agentIds": None}):
            await gql.errors(START, {"input": {**start_input(scenario, agents, "x"), **bad}})


async def test_idempotency_key_returns_the_same_episode(
    gql: GraphQLClient, world: tuple[str, list[str]], fake_llm: FakeLLM, redis_client: Any
) -> None:
    scenario, agents = world
    variables = {
        "input": start_input(scenario, agents, fake_llm.model_name(), idempotencyKey="retry-me")
    }
    before = await redis_client.xlen(STREAM)
    first = (await gql.data(START, variables))["startSimulation"]["episode"]["id"]
    second = (await gql.data(START, variables))["startSimulation"]["episode"]["id"]
    assert first == second
    assert await redis_client.xlen(STREAM) == before + 1
    await gql.data(CANCEL, {"id": first})


async def test_batch_is_all_or_nothing(
    gql: GraphQLClient, world: tuple[str, list[str]], fake_llm: FakeLLM, unchanged: Any
) -> None:
    scenario, agents = world
    good = start_input(scenario, agents, fake_llm.model_name(), tag="batch")
    async with unchanged():
        refused = await gql.data(BATCH, {"inputs": [good, {**good, "scenarioId": "x"}]})
    errors = refused["startSimulations"]["userErrors"]
    assert errors[0]["field"] == ["inputs", "1", "scenarioId"] and errors[0]["code"] == "NOT_FOUND"
    assert refused["startSimulations"]["episodes"] == []

    made = (await gql.data(BATCH, {"inputs": [good] * 3}))["startSimulations"]
    assert [e["status"] for e in made["episodes"]] == ["QUEUED"] * 3
    for item in made["episodes"]:
        await gql.data(CANCEL, {"id": item["id"]})


async def test_cancel_queued_then_delete(
    gql: GraphQLClient, world: tuple[str, list[str]], fake_llm: FakeLLM, unchanged: Any
) -> None:
    scenario, agents = world
    started = await gql.data(START, {"input": start_input(scenario, agents, fake_llm.model_name())})
    episode_id = started["startSimulation"]["episode"]["id"]

    refused = await gql.data(DELETE, {"id": episode_id})
    assert refused["deleteEpisode"]["userErrors"][0]["code"] == "IN_USE"

    cancelled = (await gql.data(CANCEL, {"id": episode_id}))["cancelSimulation"]
    assert cancelled["episode"]["status"] == "CANCELLED"
    assert cancelled["episode"]["statusHistory"][-1] == {
        "status": "CANCELLED",
        "reason": "cancelled",
    }
    async with unchanged():
        again = (await gql.data(CANCEL, {"id": episode_id}))["cancelSimulation"]
        assert again["userErrors"][0]["code"] == "CONFLICT"
        missing = (await gql.data(CANCEL, {"id": "nope"}))["cancelSimulation"]
        assert missing["userErrors"][0]["code"] == "NOT_FOUND"

    deleted = await gql.data(DELETE, {"id": episode_id})
    assert deleted["deleteEpisode"]["deletedId"] == episode_id
    assert (await gql.data(EPISODE, {"id": episode_id}))["episode"] is None


async def test_models_query_lists_the_embedded_model(gql: GraphQLClient) -> None:
    data = await gql.data("{ models { name provider available supportsJsonSchema } }")
    names = {m["name"]: m for m in data["models"]}
    assert names["local/gemma-3-270m"]["provider"] == "local"
    assert names["local/gemma-3-270m"]["available"] is True


async def test_sotopia_episode_loads_as_completed(
    gql: GraphQLClient, redis_client: redis.Redis
) -> None:
    raw: dict[str, Any] = {
        "pk": "01H9FG15A2NDTNH8K6F2T5MZN9",
        "environment": "env-x",
        "agents": ["a1", "a2"],
        "tag": "sotopia-made",
        "models": ["gpt-4", "gpt-4", "gpt-4"],
        "messages": [[["Environment", "A", "hello"]]],
        "reasoning": "fine",
        "rewards": [[3.0, {"goal": 3.0, "overall_score": 3.0}], 0.0],
        "rewards_prompt": "",
    }
    await redis_client.json().set(f":sotopia.database.logs.EpisodeLog:{raw['pk']}", "$", raw)
    data = (await gql.data(EPISODE, {"id": raw["pk"]}))["episode"]
    assert data["status"] == "COMPLETED" and data["judgeModel"] == "gpt-4"
    assert data["messages"] == [[["Environment", "A", "hello"]]]
    assert data["rewards"] == [
        {"agentIndex": 0, "overall": 3.0, "dimensions": [{"dimension": "goal", "score": 3.0}]},
        {"agentIndex": 1, "overall": None, "dimensions": []},
    ]


async def test_batch_honours_idempotency_keys(
    gql: GraphQLClient, world: tuple[str, list[str]], fake_llm: FakeLLM, redis_client: Any
) -> None:
    scenario, agents = world
    keyed = start_input(scenario, agents, fake_llm.model_name(), idempotencyKey="batch-key")
    first = (await gql.data(START, {"input": keyed}))["startSimulation"]["episode"]["id"]
    before = await redis_client.xlen(STREAM)
    plain = start_input(scenario, agents, fake_llm.model_name())
    made = (await gql.data(BATCH, {"inputs": [keyed, plain]}))["startSimulations"]
    ids = [e["id"] for e in made["episodes"]]
    assert ids[0] == first and ids[1] != first
    assert await redis_client.xlen(STREAM) == before + 1
    for episode_id in ids:
        await gql.data(CANCEL, {"id": episode_id})


async def test_two_agents_of_one_name_are_refused_at_the_door(
    gql: GraphQLClient, fake_llm: FakeLLM, unchanged: Any, redis_client: Any
) -> None:
    """A transcript tells agents apart by name: two of one name were accepted and the episode
    failed when it ran, in pydantic's words with a link; now the start is refused, naming them."""
    scenario, agents = await make_world("twins")
    twin = AgentProfile(first_name="Ava0", last_name="twins", tag="twins")  # agents[0]'s name
    await twin.save()
    model = fake_llm.model_name()
    alone = start_input(scenario, [agents[0], str(twin.pk)], model)
    fine = start_input(scenario, agents, model)
    async with unchanged():
        one = (await gql.data(START, {"input": alone}))["startSimulation"]
        batch = (await gql.data(BATCH, {"inputs": [fine, alone]}))["startSimulations"]
    assert one["episode"] is None
    [error] = one["userErrors"]
    assert error["field"] == ["input", "agentIds", "1"] and error["code"] == "INVALID"
    assert error["message"] == (
        f"agents {agents[0]!r} and {str(twin.pk)!r} are both named 'Ava0 twins': pick agents "
        "with different names (a transcript tells agents apart by name)"
    )
    assert batch["episodes"] == []
    assert [(e["field"], e["code"]) for e in batch["userErrors"]] == [
        (["inputs", "1", "agentIds", "1"], "INVALID")
    ]
