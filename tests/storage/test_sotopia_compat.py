"""Records round-trip with Sotopia: its raw JSON is served, and ours has its field set and key."""

import json
from typing import Any

from parley.resolvers import sotopia_format
from tests.support.server import GraphQLClient
from tests.support.sotopia_records import PROFILES

AGENT_FIELDS = {"pk", *sotopia_format.AGENT_FIELDS, "tag"}
"""A stored agent holds Sotopia's agent fields, its key and Parley's tag."""


async def test_sotopia_written_records_are_served(gql: GraphQLClient, redis_client: Any) -> None:
    agent = {
        "pk": "01H5TNE5P83CZ1TDBVN74NGEEJ",
        "first_name": "Noor",
        "last_name": "Haddad",
        "age": 41,
        "occupation": "Pharmacist",
        "gender": "Woman",
        "gender_pronoun": "she/her",
        "public_info": "",
        "big_five": "",
        "moral_values": ["Fairness"],
        "schwartz_personal_values": [],
        "personality_and_values": "",
        "decision_making_style": "",
        "secret": "Keeps a second phone",
        "model_id": "",
        "mbti": "ISTJ",
        "tag": "sotopia-raw",
        "written_by_sotopia": True,
    }
    other = {**agent, "pk": "01H5TNE5P83CZ1TDBVN74NGEEK", "first_name": "Omar"}
    env = {
        "pk": "01H5TNE5P83CZ1TDBVN74NGEEM",
        "codename": "raw_env",
        "source": "",
        "scenario": "S",
        "agent_goals": ["g1", "g2"],
        "relationship": 2,
        "age_constraint": None,
        "occupation_constraint": None,
        "agent_constraint": None,
        "tag": "sotopia-raw",
    }
    rel = {
        "pk": "01H5TNE5P83CZ1TDBVN74NGEEN",
        "agent_1_id": agent["pk"],
        "agent_2_id": other["pk"],
        "relationship": 5,
        "background_story": "Siblings",
        "tag": "sotopia-raw",
    }
    for kind, doc in (
        ("AgentProfile", agent),
        ("AgentProfile", other),
        ("EnvironmentProfile", env),
        ("RelationshipProfile", rel),
    ):
        await redis_client.execute_command(
            "JSON.SET", f"{PROFILES}.{kind}:{doc['pk']}", "$", json.dumps(doc)
        )

    data = await gql.data(
        """query($a: ID!, $b: ID!, $e: ID!) {
          agent(id: $a) {
            name occupation secret moralValues relationships { type otherAgent { name } }
          }
          scenario(id: $e) { codename relationship agentGoals }
          relationshipBetween(agentId: $b, otherAgentId: $a) { backgroundStory relationship }
          agents(filter: {tag: "sotopia-raw"}) { totalCount }
        }""",
        {"a": agent["pk"], "b": other["pk"], "e": env["pk"]},
    )
    assert data["agent"] == {
        "name": "Noor Haddad",
        "occupation": "Pharmacist",
        "secret": "Keeps a second phone",
        "moralValues": ["Fairness"],
        "relationships": [{"type": "FAMILY_MEMBER", "otherAgent": {"name": "Omar Haddad"}}],
    }
    assert data["scenario"] == {
        "codename": "raw_env",
        "relationship": "ACQUAINTANCE",
        "agentGoals": ["g1", "g2"],
    }
    assert data["relationshipBetween"] == {
        "backgroundStory": "Siblings",
        "relationship": "FAMILY_MEMBER",
    }
    assert data["agents"]["totalCount"] == 2

    # Updating through Parley keeps the keys another writer added.
    await gql.data(
        'mutation { updateAgent(input: {id: "01H5TNE5P83CZ1TDBVN74NGEEJ", age: 42}) '
        "{ userErrors { code } } }"
    )
    stored = await redis_client.json().get(f"{PROFILES}.AgentProfile:{agent['pk']}")
    assert stored["age"] == 42 and stored["written_by_sotopia"] is True


async def test_api_records_have_sotopia_shape(gql: GraphQLClient, redis_client: Any) -> None:
    made = await gql.data(
        """mutation {
          a: createAgent(input: {firstName: "Lea", lastName: "Roux"}) { agent { id } }
          b: createAgent(input: {firstName: "Max", lastName: "Roux"}) { agent { id } }
          s: createScenario(input: {scenario: "A walk", agentGoals: ["x", "y"]}) { scenario { id } }
        }"""
    )
    a, b = made["a"]["agent"]["id"], made["b"]["agent"]["id"]
    stored = await redis_client.json().get(f"{PROFILES}.AgentProfile:{a}")
    assert set(stored) == AGENT_FIELDS
    assert stored["pk"] == a and stored["moral_values"] == [] and stored["age"] == 0
    assert await redis_client.type(f"{PROFILES}.AgentProfile:{a}") == "ReJSON-RL"

    env = await redis_client.json().get(
        f"{PROFILES}.EnvironmentProfile:{made['s']['scenario']['id']}"
    )
    assert env["relationship"] == 0 and env["agent_goals"] == ["x", "y"]
    assert set(env) >= {*sotopia_format.SCENARIO_FIELDS, "tag"}

    rel = await gql.data(
        "mutation($a: ID!, $b: ID!) { createRelationship(input: {agentId: $a, otherAgentId: $b, "
        "relationship: ROMANTIC_RELATIONSHIP}) { relationship { id } } }",
        {"a": a, "b": b},
    )
    rel_id = rel["createRelationship"]["relationship"]["id"]
    stored_rel = await redis_client.json().get(f"{PROFILES}.RelationshipProfile:{rel_id}")
    assert stored_rel == {
        "pk": rel_id,
        "agent_1_id": a,
        "agent_2_id": b,
        "relationship": 4,
        "background_story": None,
        "tag": "",
    }
