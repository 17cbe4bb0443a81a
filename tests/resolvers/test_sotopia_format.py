"""What Sotopia added to its records after 0.1.5, in records shaped as Sotopia writes them:
`game_metadata` and `action_instruction` on scenarios, `agent_classes` on episodes, `to` on
actions. They load, are served, are kept on update and through export and import."""

import copy
import json
import uuid
from typing import Any

import redis.asyncio as redis

from parley.resolvers import exporter, importer
from parley.resolvers.sotopia_format import Kind
from tests.support import sotopia_records as sotopia
from tests.support.server import GraphQLClient

GAME: dict[str, Any] = {
    "game_name": "werewolves",
    "phases": [
        {"name": "night", "acting_agents": ["Nora Lindqvist"], "visibility": "team",
         "allowed_actions": ["speak", "action"]},
        {"name": "day", "acting_agents": ["Nora Lindqvist", "Emil Brandt"],
         "visibility": "public", "allowed_actions": ["speak", "leave"]},
    ],
    "teams": {"wolves": ["Nora Lindqvist"], "villagers": ["Emil Brandt"]},
    "end_condition": {"max_rounds": 3},
}  # fmt: skip
INSTRUCTION = "Speak only during your phase; vote with the action type."

QUERY = """
query($scenario: ID!, $episode: ID!, $tag: String) {
  scenario(id: $scenario) { id gameMetadata actionInstruction agentGoals }
  scenarios(filter: {tag: $tag}) { nodes { id gameMetadata actionInstruction } }
  episode(id: $episode) { agentClasses turns { speaker to actionType } }
}"""
UPDATE = """
mutation($input: UpdateScenarioInput!) {
  updateScenario(input: $input) { scenario { codename gameMetadata } userErrors { message } }
}"""


def records(suffix: str) -> tuple[tuple[str, dict[str, Any]], tuple[str, dict[str, Any]]]:
    """A scenario and an episode with Sotopia's newer fields, at their Sotopia keys."""
    scenario = copy.deepcopy(sotopia.SCENARIO)
    scenario.update(
        pk=f"newer-scenario-{suffix}",
        tag=f"newer-{suffix}",
        game_metadata=GAME,
        action_instruction=INSTRUCTION,
    )
    episode = copy.deepcopy(sotopia.EPISODE)
    episode.update(
        pk=f"newer-episode-{suffix}",
        environment=scenario["pk"],
        agent_classes=["LLMAgent", "LLMAgent"],
    )
    return (
        (f"{sotopia.PROFILES}.EnvironmentProfile:{scenario['pk']}", scenario),
        (f"{sotopia.LOGS}.EpisodeLog:{episode['pk']}", episode),
    )


async def store(client: redis.Redis, *items: tuple[str, dict[str, Any]]) -> None:
    for key, doc in items:
        await client.json().set(key, "$", doc)
    for key, doc in sotopia.RECORDS[:2]:  # the agents the episode names
        await client.json().set(key, "$", doc)


async def test_newer_fields_are_served(gql: GraphQLClient, redis_client: redis.Redis) -> None:
    suffix = uuid.uuid4().hex[:8]
    (skey, scenario), (ekey, episode) = records(suffix)
    await store(redis_client, (skey, scenario), (ekey, episode))
    variables = {"scenario": scenario["pk"], "episode": episode["pk"], "tag": scenario["tag"]}
    data = await gql.data(QUERY, variables)
    assert data["scenario"]["gameMetadata"] == GAME
    assert data["scenario"]["actionInstruction"] == INSTRUCTION
    assert data["scenarios"]["nodes"] == [
        {"id": scenario["pk"], "gameMetadata": GAME, "actionInstruction": INSTRUCTION}
    ]
    assert data["episode"]["agentClasses"] == ["LLMAgent", "LLMAgent"]
    private = [t for t in data["episode"]["turns"] if t["to"]]
    assert private == [{"speaker": "Nora Lindqvist", "to": ["Emil Brandt"], "actionType": "SPEAK"}]


async def test_an_update_keeps_the_newer_fields(
    gql: GraphQLClient, redis_client: redis.Redis
) -> None:
    suffix = uuid.uuid4().hex[:8]
    (skey, scenario), episode = records(suffix)
    await store(redis_client, (skey, scenario), episode)
    changed = {"id": scenario["pk"], "codename": "renamed"}
    result = (await gql.data(UPDATE, {"input": changed}))["updateScenario"]
    assert result["userErrors"] == [] and result["scenario"]["gameMetadata"] == GAME
    stored = await redis_client.json().get(skey)
    assert stored == {**scenario, "codename": "renamed"}


async def exported(client: redis.Redis, kind: Kind, pk: str) -> str:
    found = []
    async for batch in exporter.lines(client, kind):
        found += [line for line in batch if pk in (line.get("env_id"), line.get("episode_id"))]
    [line] = found
    return json.dumps(line)


async def test_export_and_import_keep_the_newer_fields(redis_client: redis.Redis) -> None:
    suffix = uuid.uuid4().hex[:8]
    (skey, scenario), (ekey, episode) = records(suffix)
    await store(redis_client, (skey, scenario), (ekey, episode))
    lines = [
        await exported(redis_client, Kind.SCENARIOS, scenario["pk"]),
        await exported(redis_client, Kind.EPISODES, episode["pk"]),
    ]
    assert json.loads(lines[0])["parley"]["game_metadata"] == GAME
    await redis_client.delete(skey, ekey)

    report = await importer.import_lines(redis_client, lines)

    assert report.created[Kind.SCENARIOS] == 1 and report.created[Kind.EPISODES] == 1
    assert await redis_client.json().get(skey) == scenario
    stored: dict[str, Any] = await redis_client.json().get(ekey)  # type: ignore[assignment]
    assert {k: stored[k] for k in episode} == episode
