"""A small world made over GraphQL, as a client makes it: agents, a scenario, an episode."""

from typing import Any

from bench.support.simulation import start_input
from tests.support.server import GraphQLClient


async def create_agents(gql: GraphQLClient, *names: str, **fields: Any) -> list[str]:
    """An agent per name ("First Last"), each with `fields`; their ids."""
    ids = []
    for name in names:
        first, last = name.split(" ")
        input = {"firstName": first, "lastName": last, **fields}
        made = await gql.mutate("createAgent", "CreateAgentInput", input, "agent { id }")
        ids.append(str(made["agent"]["id"]))
    return ids


async def create_scenario(gql: GraphQLClient, **fields: Any) -> str:
    """A scenario of two seats (`fields` change it); its id."""
    input = {"scenario": "Two meet.", "agentGoals": ["Greet", "Leave"], **fields}
    made = await gql.mutate("createScenario", "CreateScenarioInput", input, "scenario { id }")
    return str(made["scenario"]["id"])


async def start_episode(gql: GraphQLClient, model: str, last_name: str, **extra: Any) -> str:
    """Two new agents of this last name and a new scenario, and an episode of two turns of
    theirs started with `model` (and `extra` input); its id."""
    agents = await create_agents(gql, f"Ada {last_name}", f"Bo {last_name}")
    input = start_input(await create_scenario(gql), agents, model, maxTurns=2, **extra)
    started = await gql.mutate("startSimulation", "StartSimulationInput", input, "episode { id }")
    return str(started["episode"]["id"])
