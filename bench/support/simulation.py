"""Simulations over the API, for tests and benchmarks: a small world, starting episodes and
following them."""

import asyncio
from collections.abc import Callable
from functools import partial
from typing import Any

import httpx
from gql import Client, GraphQLRequest
from gql.transport.websockets import WebsocketsTransport

from bench.support.polling import eventually
from parley.core.errors import camel
from parley.lifecycle.services import Services
from parley.lifecycle.start import start as start_episode
from parley.storage.models import AgentProfile, EnvironmentProfile

START = """
mutation($input: StartSimulationInput!) {
  startSimulation(input: $input) {
    episode { id status attempt progress { turn maxTurns } }
    userErrors { field message code }
  }
}"""
EPISODE = """
query($id: ID!) {
  episode(id: $id) {
    id status attempt error progress { turn maxTurns }
    statusHistory { status attempt reason sequence resumedFromTurn }
    turns { turn speaker actionType argument sequence }
    rewards { agentIndex overall dimensions { dimension score } }
    messages reasoning agentModels judgeModel
  }
}"""
CREATE_DIMENSION_LIST = """
mutation($input: CreateEvaluationDimensionListInput!) {
  createEvaluationDimensionList(input: $input) {
    evaluationDimensionList { id } userErrors { field message code }
  }
}"""
EVENTS = """
subscription($id: ID!) {
  episodeEvents(id: $id) {
    kind sequence status previousStatus attempt reason turn { turn speaker argument }
  }
}"""
STATUS = """
subscription($id: ID!) { episodeStatus(id: $id) { kind sequence status attempt } }"""


async def make_world(tag: str, agents: int = 2) -> tuple[str, list[str]]:
    """A scenario and `agents` agents, saved directly; returns their ids."""
    people = [
        AgentProfile(first_name=f"Ava{i}", last_name=tag, age=30 + i, occupation="Tester", tag=tag)
        for i in range(agents)
    ]
    for person in people:
        await person.save()
    scenario = EnvironmentProfile(
        codename=f"{tag}_lunch",
        scenario="Colleagues decide where to have lunch.",
        agent_goals=[f"Pick a place you like (seat {i})" for i in range(agents)],
        relationship=2,
        tag=tag,
    )
    await scenario.save()
    return str(scenario.pk), [str(p.pk) for p in people]


def start_fields(scenario: str, agents: list[str], model: str, **fields: Any) -> dict[str, Any]:
    """An episode's fields as the lifecycle takes them: these agents in a scenario, `model` in
    every seat and judging (`fields` adds others)."""
    return {
        "scenario_id": scenario,
        "agent_ids": agents,
        "agent_models": [model],
        "judge_model": model,
        **fields,
    }


def start_input(scenario: str, agents: list[str], model: str, **extra: Any) -> dict[str, Any]:
    """startSimulation's input: an episode of three turns of these, `model` in every seat and
    judging (`extra`, in the API's camelCase, adds or changes fields)."""
    fields = start_fields(scenario, agents, model, max_turns=3)
    return {**{camel(name): value for name, value in fields.items()}, **extra}


async def queue_episode(
    services: Services, scenario: str, agents: list[str], model: str, **fields: Any
) -> str:
    """An episode queued through the lifecycle, without HTTP: its pk."""
    episode, errors = await start_episode(services, start_fields(scenario, agents, model, **fields))
    assert not errors and episode is not None, errors
    return str(episode.pk)


async def post(base_url: str, query: str, variables: dict[str, Any]) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
        response = await http.post("/graphql", json={"query": query, "variables": variables})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert "errors" not in body, body
    data: dict[str, Any] = body["data"]
    return data


async def start(base_url: str, variables: dict[str, Any]) -> str:
    payload = (await post(base_url, START, {"input": variables}))["startSimulation"]
    assert payload["userErrors"] == [], payload
    assert payload["episode"]["status"] == "QUEUED"
    episode_id: str = payload["episode"]["id"]
    return episode_id


async def episode(base_url: str, episode_id: str, query: str = EPISODE) -> dict[str, Any]:
    """The episode as `query` (a document of `$id`) reads it."""
    data = await post(base_url, query, {"id": episode_id})
    found: dict[str, Any] = data["episode"]
    return found


async def wait_for(
    base_url: str,
    episode_id: str,
    predicate: Callable[..., object],
    timeout: float = 60,
    query: str = EPISODE,
) -> dict[str, Any]:
    """The episode once `predicate` accepts it (see `episode`)."""
    read = partial(episode, base_url, episode_id, query)
    return await eventually(read, predicate, timeout=timeout)


def websocket_transport(
    base_url: str, subprotocol: str = WebsocketsTransport.GRAPHQLWS_SUBPROTOCOL, **options: Any
) -> WebsocketsTransport:
    return WebsocketsTransport(
        url=base_url.replace("http://", "ws://") + "/graphql",
        subprotocols=[subprotocol],
        **options,
    )


async def collect(
    base_url: str, query: str, episode_id: str, started: asyncio.Event | None = None
) -> list[dict[str, Any]]:
    """Every message of a subscription until the server completes it."""
    events: list[dict[str, Any]] = []
    async with Client(transport=websocket_transport(base_url)) as session:
        request = GraphQLRequest(query, variable_values={"id": episode_id})
        async for result in session.subscribe(request):
            events.append(next(iter(result.values())))
            if started is not None:
                started.set()
    return events
