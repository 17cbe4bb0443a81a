"""A scenario's game rules over real HTTP: checked field by field as they are written, kept on
other changes, served as rules, and never in the way of the scenario index."""

import json
from typing import Any

import pytest
import redis.asyncio as redis

from parley.resolvers.importer import import_lines
from parley.storage.models import EnvironmentProfile
from tests.support.games import game_lines
from tests.support.server import GraphQLClient

CREATE = """
mutation($input: CreateScenarioInput!) {
  createScenario(input: $input) {
    scenario { id gameMetadata game { name teams { name seats } phases { name vote } endings } }
    userErrors { field message code }
  }
}"""
UPDATE = """
mutation($input: UpdateScenarioInput!) {
  updateScenario(input: $input) {
    scenario { id codename gameMetadata game { name } }
    userErrors { field message code }
  }
}"""
LIST = """
query($tag: String) { scenarios(filter: {tag: $tag}) { totalCount nodes { id game { name } } } }"""


def spyfall() -> dict[str, Any]:
    (env,) = [line for line in game_lines("spyfall") if "env_id" in line]
    return {
        "scenario": env["scenario"],
        "agentGoals": env["agent_goals"],
        "gameMetadata": env["parley"]["game_metadata"],
    }


async def test_a_game_is_stored_served_and_listed(gql: GraphQLClient) -> None:
    made = (await gql.data(CREATE, {"input": {**spyfall(), "tag": "games-listed"}}))[
        "createScenario"
    ]
    assert made["userErrors"] == []
    game = made["scenario"]["game"]
    assert game["name"] == "spyfall"
    assert game["teams"] == [
        {"name": "spy", "seats": [3]},
        {"name": "crew", "seats": [0, 1, 2, 4]},
    ]
    assert game["phases"] == [
        {"name": "questions", "vote": False},
        {"name": "accusation", "vote": True},
    ]
    assert game["endings"][0] == "the crew win (every member of the spy is out)"
    listed = (await gql.data(LIST, {"tag": "games-listed"}))["scenarios"]
    assert listed["totalCount"] == 1 and listed["nodes"][0]["game"] == {"name": "spyfall"}

    pk = made["scenario"]["id"]
    renamed = (await gql.data(UPDATE, {"input": {"id": pk, "codename": "renamed"}}))[
        "updateScenario"
    ]
    assert renamed["userErrors"] == []
    assert renamed["scenario"]["gameMetadata"] == spyfall()["gameMetadata"]
    cleared = (await gql.data(UPDATE, {"input": {"id": pk, "gameMetadata": None}}))[
        "updateScenario"
    ]
    assert cleared["scenario"]["game"] is None


def broken(change: Any) -> dict[str, Any]:
    rules: dict[str, Any] = json.loads(json.dumps(spyfall()["gameMetadata"]))
    change(rules)
    return rules


@pytest.mark.parametrize(
    ("change", "path", "message"),
    [
        (
            lambda r: r["phases"][0].update(action_types=["shout"]),
            ["phases", "0", "actionTypes", "0"],
            "must be 'none', 'speak'",
        ),
        (
            lambda r: r["phases"][1].update(actors="team:pirates"),
            ["phases", "1", "actors"],
            "no team 'pirates'",
        ),
        (
            lambda r: r["phases"][0].update(visibility="team"),
            ["phases", "0", "visibility"],
            "team visibility needs the phase played by one team",
        ),
        (
            lambda r: r["phases"][1].update(action_types=["speak"]),
            ["phases", "1", "actionTypes"],
            'a vote takes ["action"]',
        ),
        (lambda r: r["phases"][0].update(next="dinner"), ["phases", "0", "next"], "no phase"),
        (lambda r: r["endings"][0].update(team=None), ["endings", "0", "team"], "needs one of"),
        (lambda r: r["endings"][1].update(winner="x"), ["endings", "1", "winner"], "no team 'x'"),
        (lambda r: r["teams"]["spy"].update(seats=[7]), ["teams", "spy", "seats"], "0..4"),
        (lambda r: r["teams"]["crew"].update(seats=[3]), ["teams", "crew", "seats"], "one team"),
        (lambda r: r.pop("format"), ["format"], 'need "format": "parley.game/1"'),
        (lambda r: r.update(colour="red"), ["colour"], "is not a field here"),
    ],
)
async def test_bad_rules_are_refused_field_by_field(
    gql: GraphQLClient, unchanged: Any, change: Any, path: list[str], message: str
) -> None:
    async with unchanged():
        payload = (
            await gql.data(CREATE, {"input": {**spyfall(), "gameMetadata": broken(change)}})
        )["createScenario"]
    assert payload["scenario"] is None
    (error,) = payload["userErrors"]
    assert error["field"] == ["input", "gameMetadata", *path]
    assert message in error["message"] and error["code"] == "INVALID"


async def test_an_update_is_checked_against_the_seats_it_leaves(gql: GraphQLClient) -> None:
    made = (await gql.data(CREATE, {"input": spyfall()}))["createScenario"]["scenario"]
    fewer = {"id": made["id"], "agentGoals": ["one", "two", "three"]}
    payload = (await gql.data(UPDATE, {"input": fewer}))["updateScenario"]
    assert payload["scenario"] is None
    assert payload["userErrors"][0]["field"] == ["input", "gameMetadata", "teams", "spy", "seats"]
    kept = (await gql.data(UPDATE, {"input": {"id": made["id"]}}))["updateScenario"]
    assert kept["scenario"]["game"] == {"name": "spyfall"}


async def test_another_writers_game_metadata_is_kept_and_indexed(gql: GraphQLClient) -> None:
    """Sotopia's own index cannot hold a scenario with an object in game_metadata; Parley's
    does not index it, so such a record is still listed (and is no game of Parley's)."""
    foreign = EnvironmentProfile(
        scenario="A social game configured the way another tool writes it.",
        agent_goals=["win", "win"],
        game_metadata={"mode": "werewolves", "roles": {"a": "wolf"}},
        tag="games-foreign",
    )
    await foreign.save()
    listed = (await gql.data(LIST, {"tag": "games-foreign"}))["scenarios"]
    assert listed["totalCount"] == 1 and listed["nodes"] == [{"id": foreign.pk, "game": None}]
    changed = (await gql.data(UPDATE, {"input": {"id": foreign.pk, "codename": "kept"}}))[
        "updateScenario"
    ]
    assert changed["userErrors"] == []
    assert changed["scenario"]["gameMetadata"] == {"mode": "werewolves", "roles": {"a": "wolf"}}


async def test_an_import_line_with_bad_rules_is_refused(redis_client: redis.Redis) -> None:
    (env,) = [line for line in game_lines("werewolf") if "env_id" in line]
    env = json.loads(json.dumps(env))
    env["env_id"] = "game-werewolf-broken"
    env["parley"]["game_metadata"]["phases"][0]["next"] = "breakfast"
    report = await import_lines(redis_client, [json.dumps(env)])
    assert report.invalid == 1 and not report.created
    assert "phases.0.next: no phase 'breakfast'" in report.problems[0].reason
    assert not await redis_client.exists(EnvironmentProfile.make_primary_key(env["env_id"]))
