"""Drafts over real HTTP with the fake model: a world drafted, checked against the create
mutations' limits (one re-ask carrying the errors), returned unsaved; an edited draft saved all
at once or not at all."""

import copy
import json
from typing import Any

import redis.asyncio as redis

from bench.support.fake_llm import FakeLLM, Rule, draft_person, draft_world_answer
from parley.storage.models import AgentProfile, EnvironmentProfile, RelationshipProfile
from tests.support.server import GraphQLClient

DRAFT_FIELDS = """
draft {
  agents { firstName lastName age occupation gender genderPronoun publicInfo bigFive moralValues
           schwartzPersonalValues personalityAndValues decisionMakingStyle secret mbti }
  scenarios { codename scenario agentGoals relationship }
  relationships { agentIndex otherAgentIndex relationship backgroundStory }
}
userErrors { field message code }"""
DRAFT_WORLD = f"""
mutation($input: DraftWorldInput!) {{ draftWorld(input: $input) {{ {DRAFT_FIELDS} }} }}"""
DRAFT_AGENTS = f"""
mutation($prompt: String!, $count: Int!, $model: String) {{
  draftAgents(prompt: $prompt, count: $count, model: $model) {{ {DRAFT_FIELDS} }}
}}"""
DRAFT_SCENARIOS = f"""
mutation($prompt: String!, $count: Int!, $agentIds: [ID!], $model: String) {{
  draftScenarios(prompt: $prompt, count: $count, agentIds: $agentIds, model: $model) {{
    {DRAFT_FIELDS}
  }}
}}"""
SAVE = """
mutation($input: SaveDraftInput!) {
  saveDraft(input: $input) {
    agentIds scenarioIds relationshipIds userErrors { field message code }
  }
}"""
PROMPT = "Two roommates argue about the rent; one of them is secretly moving out."


def camel_keys(item: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for key, value in item.items():
        head, *rest = key.split("_")
        out[head + "".join(p.title() for p in rest)] = value
    return out


def world(**changes: Any) -> str:
    answer = draft_world_answer(2, 1, 2, True)
    answer["agents"][0].update(changes)
    return json.dumps(answer)


async def draft(gql: GraphQLClient, fake: FakeLLM, **extra: Any) -> dict[str, Any]:
    variables = {"input": {"prompt": PROMPT, "model": fake.model_name(), **extra}}
    result: dict[str, Any] = (await gql.data(DRAFT_WORLD, variables))["draftWorld"]
    return result


def saveable(drafted: dict[str, Any]) -> dict[str, Any]:
    """A draft as the app sends it back to saveDraft."""
    return copy.deepcopy({key: drafted[key] for key in ("agents", "scenarios", "relationships")})


async def test_a_world_is_drafted_in_full_and_not_stored(
    gql: GraphQLClient, fake_llm: FakeLLM, unchanged: Any
) -> None:
    async with unchanged():
        result = await draft(gql, fake_llm, relationship="FRIEND")
    assert result["userErrors"] == []
    drafted = result["draft"]
    assert [a["firstName"] for a in drafted["agents"]] == ["Maya", "Jonas"]
    assert drafted["agents"][0]["secret"] and drafted["agents"][0]["moralValues"] == ["Care"]
    [scenario] = drafted["scenarios"]
    assert len(scenario["agentGoals"]) == 2 and scenario["relationship"] == "FRIEND"
    assert "<extra_info>" in scenario["agentGoals"][0]
    assert drafted["relationships"] == [
        {
            "agentIndex": 0,
            "otherAgentIndex": 1,
            "relationship": "FRIEND",
            "backgroundStory": "Shared a flat for 3 years.",
        }
    ]
    [request] = fake_llm.requests
    schema = request.body["response_format"]["json_schema"]["schema"]
    agent = schema["properties"]["agents"]["items"]["properties"]
    assert {"big_five", "schwartz_personal_values", "decision_making_style", "mbti"} <= set(agent)
    assert PROMPT in request.text


async def test_an_invalid_draft_is_asked_again_once_with_its_errors(
    gql: GraphQLClient, fake_llm: FakeLLM
) -> None:
    fake_llm.add_rule(Rule(contains=[PROMPT], content=world(first_name="", age=400)))
    result = await draft(gql, fake_llm)
    assert result["userErrors"] == []
    assert result["draft"]["agents"][0]["firstName"] == "Maya"
    first, second = fake_llm.requests
    assert "agents.0.first_name" in second.text and "agents.0.age" in second.text
    assert "agents.0.first_name" not in first.text


async def test_a_draft_invalid_twice_is_returned_with_its_errors_per_field(
    gql: GraphQLClient, fake_llm: FakeLLM, unchanged: Any
) -> None:
    fake_llm.add_rule(Rule(contains=[PROMPT], content=world(age=400), times=2))
    async with unchanged():
        result = await draft(gql, fake_llm)
    assert result["draft"]["agents"][0]["age"] == 400
    [error] = result["userErrors"]
    assert error["field"] == ["draft", "agents", "0", "age"] and error["code"] == "INVALID"
    assert "150" in error["message"]
    assert len(fake_llm.requests) == 2


async def test_malformed_output_twice_is_a_clear_error(
    gql: GraphQLClient, fake_llm: FakeLLM, unchanged: Any
) -> None:
    fake_llm.add_rule(Rule(contains=[PROMPT], content="Sure! {not json", times=2))
    async with unchanged():
        result = await draft(gql, fake_llm)
    assert result["draft"] is None
    [error] = result["userErrors"]
    assert error["field"] == ["input", "model"]
    assert "no usable draft" in error["message"] and "re-ask" in error["message"]
    assert len(fake_llm.requests) == 2


async def test_a_wrong_count_of_parts_is_asked_again(gql: GraphQLClient, fake_llm: FakeLLM) -> None:
    short = draft_world_answer(1, 1, 2, False)
    fake_llm.add_rule(Rule(contains=[PROMPT], content=json.dumps(short)))
    result = await draft(gql, fake_llm)
    assert result["userErrors"] == [] and len(result["draft"]["agents"]) == 2
    assert "exactly 2 items, not 1" in fake_llm.requests[1].text


async def test_unknown_models_and_counts_out_of_range_are_refused_without_a_request(
    gql: GraphQLClient, fake_llm: FakeLLM, unchanged: Any
) -> None:
    async with unchanged():
        unknown = await draft(gql, fake_llm, model="no-such-model")
        too_many = await draft(gql, fake_llm, agents=7)
        no_scenario = await draft(gql, fake_llm, scenarios=0)
        agents = (await gql.data(DRAFT_AGENTS, {"prompt": PROMPT, "count": 0}))["draftAgents"]
        empty = await draft(gql, fake_llm, prompt="")
    assert unknown["draft"] is None and unknown["userErrors"][0]["field"] == ["input", "model"]
    assert "unknown model 'no-such-model'" in unknown["userErrors"][0]["message"]
    assert too_many["userErrors"][0]["field"] == ["input", "agents"]
    assert "must be at most 6" in too_many["userErrors"][0]["message"]
    assert no_scenario["userErrors"][0]["field"] == ["input", "scenarios"]
    assert agents["userErrors"][0]["field"] == ["count"]
    assert empty["userErrors"][0]["field"] == ["input", "prompt"]
    assert fake_llm.requests == []


async def test_agents_and_scenarios_are_drafted_alone(
    gql: GraphQLClient, fake_llm: FakeLLM
) -> None:
    model = fake_llm.model_name()
    agents = await gql.data(DRAFT_AGENTS, {"prompt": PROMPT, "count": 3, "model": model})
    drafted = agents["draftAgents"]
    assert drafted["userErrors"] == [] and len(drafted["draft"]["agents"]) == 3
    assert drafted["draft"]["scenarios"] == [] and drafted["draft"]["relationships"] == []
    trio = draft_world_answer(3, 0, 0, False)["agents"]
    saved = await gql.data(SAVE, {"input": {"agents": [camel_keys(a) for a in trio]}})
    ids = saved["saveDraft"]["agentIds"]
    variables = {"prompt": PROMPT, "count": 2, "agentIds": ids, "model": model}
    scenes = (await gql.data(DRAFT_SCENARIOS, variables))["draftScenarios"]
    assert scenes["userErrors"] == []
    assert [len(s["agentGoals"]) for s in scenes["draft"]["scenarios"]] == [3, 3]
    asked = fake_llm.requests[-1].text
    assert "1. Maya Okafor, 25 years old, Nurse" in asked and "3. Priya Raman" in asked
    missing = {**variables, "agentIds": [ids[0], "no-such-agent"]}
    refused = (await gql.data(DRAFT_SCENARIOS, missing))["draftScenarios"]
    assert refused["userErrors"][0]["field"] == ["agentIds", "1"]
    assert refused["userErrors"][0]["code"] == "NOT_FOUND"


async def test_an_edited_draft_is_saved_whole(
    gql: GraphQLClient, fake_llm: FakeLLM, redis_client: redis.Redis
) -> None:
    drafted = (await draft(gql, fake_llm))["draft"]
    drafted["agents"][1]["firstName"] = "Edited"
    drafted["scenarios"][0]["codename"] = "edited_rent"
    result = (await gql.data(SAVE, {"input": saveable(drafted)}))["saveDraft"]
    assert result["userErrors"] == []
    first, second = [await AgentProfile.get(pk) for pk in result["agentIds"]]
    assert first.first_name == "Maya" and second.first_name == "Edited"
    assert first.secret == "Maya is planning to move abroad." and first.mbti == "INFJ"
    [scenario_id] = result["scenarioIds"]
    scenario = await EnvironmentProfile.get(scenario_id)
    assert scenario.codename == "edited_rent" and len(scenario.agent_goals) == 2
    [relationship_id] = result["relationshipIds"]
    relation = await RelationshipProfile.get(relationship_id)
    assert [relation.agent_1_id, relation.agent_2_id] == result["agentIds"]
    assert relation.relationship == 3
    between = await gql.data(
        "query($a: ID!, $b: ID!) { relationshipBetween(agentId: $a, otherAgentId: $b) { id } }",
        {"a": result["agentIds"][1], "b": result["agentIds"][0]},
    )
    assert between["relationshipBetween"] == {"id": relationship_id}


async def test_a_draft_with_one_bad_part_saves_nothing(
    gql: GraphQLClient, fake_llm: FakeLLM, unchanged: Any
) -> None:
    drafted = (await draft(gql, fake_llm))["draft"]
    bad_age = saveable(drafted)
    bad_age["agents"][1]["age"] = 151
    bad_index = saveable(drafted)
    bad_index["relationships"][0]["otherAgentIndex"] = 5
    no_goals = saveable(drafted)
    no_goals["scenarios"][0]["agentGoals"] = ["only one"]
    same = saveable(drafted)
    same["relationships"].append(dict(same["relationships"][0]))
    async with unchanged():
        errors = [
            (await gql.data(SAVE, {"input": case}))["saveDraft"]
            for case in (bad_age, bad_index, no_goals, same)
        ]
        empty = (await gql.data(SAVE, {"input": {}}))["saveDraft"]
    assert all(e["agentIds"] == [] and e["scenarioIds"] == [] for e in errors)
    fields = [[e["field"] for e in result["userErrors"]] for result in errors]
    assert fields == [
        [["input", "agents", "1", "age"]],
        [["input", "relationships", "0", "otherAgentIndex"]],
        [["input", "scenarios", "0", "agentGoals"]],
        [["input", "relationships", "1", "otherAgentIndex"]],
    ]
    assert "no agent at position 5" in errors[1]["userErrors"][0]["message"]
    assert empty["userErrors"][0]["message"] == "the draft has nothing to save"


async def test_a_taken_id_saves_nothing(gql: GraphQLClient, unchanged: Any) -> None:
    taken = AgentProfile(first_name="Already", last_name="Here")
    await taken.save()
    people = [camel_keys(draft_person(0)), {**camel_keys(draft_person(1)), "id": taken.pk}]
    async with unchanged():
        result = (await gql.data(SAVE, {"input": {"agents": people}}))["saveDraft"]
    [error] = result["userErrors"]
    assert error["field"] == ["input", "agents", "1", "id"] and error["code"] == "CONFLICT"
    assert result["agentIds"] == []


def garbage() -> dict[str, Any]:
    """What the embedded model drafted: both agents "James Covey", an MBTI of ".1,1", a date
    for the situation, numbers for a goal and a background story; within every limit of the
    records."""
    answer = draft_world_answer(2, 1, 2, True)
    for agent in answer["agents"]:
        agent.update(first_name="James", last_name="Covey", mbti=".1,1")
    answer["scenarios"][0].update(codename="James", scenario="19/10/2017-18:00:00")
    answer["scenarios"][0]["agent_goals"][1] = "4, 6, 11, 13, 15"
    answer["relationships"][0]["background_story"] = "1937-1965.000m"
    return answer


IMPLAUSIBLE = [
    (["agents", "0", "mbti"], "give one of the sixteen MBTI types, such as INTJ or ESFP"),
    (["agents", "1", "mbti"], "give one of the sixteen MBTI types, such as INTJ or ESFP"),
    (
        ["agents", "1", "firstName"],
        "another agent of this draft is named 'James Covey' too: give each agent a name of its own",
    ),
    (
        ["scenarios", "0", "scenario"],
        "describe the situation in a sentence or more, not a date or numbers",
    ),
    (["scenarios", "0", "agentGoals", "1"], "say what this agent wants in words, not numbers"),
    (
        ["relationships", "0", "backgroundStory"],
        "tell how they know each other in words, not numbers",
    ),
]


async def test_an_implausible_draft_is_asked_again_with_what_fails(
    gql: GraphQLClient, fake_llm: FakeLLM
) -> None:
    fake_llm.add_rule(Rule(contains=[PROMPT], content=json.dumps(garbage())))
    result = await draft(gql, fake_llm)
    assert result["userErrors"] == []
    assert [a["firstName"] for a in result["draft"]["agents"]] == ["Maya", "Jonas"]
    first, second = fake_llm.requests
    for needle in (
        "agents.0.mbti: give one of the sixteen MBTI types",
        "agents.1.first_name: another agent of this draft is named 'James Covey' too",
        "scenarios.0.scenario: describe the situation in a sentence or more",
        "scenarios.0.agent_goals.1: say what this agent wants in words",
    ):
        assert needle in second.text and needle not in first.text
    schema = first.body["response_format"]["json_schema"]["schema"]
    mbti = schema["properties"]["agents"]["items"]["properties"]["mbti"]
    assert len(mbti["enum"]) == 16 and "INTJ" in mbti["enum"]  # asked for one of them


async def test_an_implausible_draft_twice_comes_back_with_each_failure_and_saves_nothing(
    gql: GraphQLClient, fake_llm: FakeLLM, unchanged: Any
) -> None:
    fake_llm.add_rule(Rule(contains=[PROMPT], content=json.dumps(garbage()), times=2))
    async with unchanged():
        result = await draft(gql, fake_llm)
        saved = (await gql.data(SAVE, {"input": saveable(result["draft"])}))["saveDraft"]
    assert result["draft"]["scenarios"][0]["scenario"] == "19/10/2017-18:00:00"
    shown = [(e["field"], e["message"]) for e in result["userErrors"]]
    assert sorted(shown) == sorted((["draft", *path], m) for path, m in IMPLAUSIBLE)
    assert all(e["code"] == "INVALID" for e in result["userErrors"])
    assert saved["agentIds"] == [] and saved["scenarioIds"] == []
    refused = [(e["field"], e["message"]) for e in saved["userErrors"]]
    assert sorted(refused) == sorted((["input", *path], m) for path, m in IMPLAUSIBLE)


def placeholder_world() -> dict[str, Any]:
    """What the embedded model drafted for a sentence about roommates and the rent: placeholder
    names with digits in them and a goal that is an identifier, not words."""
    answer = draft_world_answer(2, 1, 2, True)
    answer["agents"][0].update(first_name="agent1", last_name="agent2")
    answer["agents"][1].update(first_name="agent2", last_name="agent3")
    answer["scenarios"][0]["agent_goals"][1] = "agent_role_goals"
    return answer


async def test_a_draft_of_placeholder_names_and_an_identifier_for_a_goal_is_not_plausible(
    gql: GraphQLClient, fake_llm: FakeLLM
) -> None:
    """Such a draft (the embedded model's, twice) came back with no user error, so the page
    offered it for saving as it was: agents called "agent1 agent2" and "agent2 agent3", one
    wanting "agent_role_goals". A name has no digits and a goal is said in words."""
    fake_llm.add_rule(Rule(contains=[PROMPT], content=json.dumps(placeholder_world()), times=2))
    result = await draft(gql, fake_llm)
    flagged = {tuple(e["field"]) for e in result["userErrors"]}
    for agent in ("0", "1"):
        names = {("draft", "agents", agent, "firstName"), ("draft", "agents", agent, "lastName")}
        assert flagged & names, result["userErrors"]
    assert ("draft", "scenarios", "0", "agentGoals", "1") in flagged, result["userErrors"]
