"""Turns read from Sotopia's `messages` for episodes that store none of Parley's own."""

import json
from typing import Any

from parley.engine.types import ActionType
from parley.resolvers.transcript import parse_action, turns_from_messages
from tests.support import sotopia_records as sotopia
from tests.support.server import GraphQLClient

EPISODE_TURNS = """
query($id: ID!) {
  episode(id: $id) { status turns { turn agentIndex speaker actionType argument to } }
}"""


def test_every_rendering_is_read() -> None:
    assert parse_action('said: "Hi, "you" there"') == (ActionType.SPEAK, 'Hi, "you" there', [])
    assert parse_action(' said: "newer data has a space"') == (
        ActionType.SPEAK,
        "newer data has a space",
        [],
    )
    assert parse_action("[non-verbal communication] nods") == (
        ActionType.NON_VERBAL_COMMUNICATION,
        "nods",
        [],
    )
    assert parse_action("[action] opens the door") == (ActionType.ACTION, "opens the door", [])
    assert parse_action("left the conversation") == (ActionType.LEAVE, "", [])
    assert parse_action("did nothing") == (ActionType.NONE, "", [])
    assert parse_action("[private to ['Bo Li', 'Ann']] said: \"psst\"") == (
        ActionType.SPEAK,
        "psst",
        ["Bo Li", "Ann"],
    )
    assert parse_action("shrugged") is None
    assert parse_action('[private to [oops]] said: "x"') is None


def test_round_robin_transcript_gives_one_turn_per_turn() -> None:
    turns = turns_from_messages(sotopia.MESSAGES)
    got = [(t.turn, t.agent_name, t.action_type.name, t.argument, t.to) for t in turns]
    assert got == sotopia.EXPECTED_TURNS
    assert [t.agent_index for t in turns] == [0, 1, 0, 1, 0]
    assert [t.sequence for t in turns] == [1, 2, 3, 4, 5]


def test_a_silent_turn_of_round_robin_is_kept_and_simultaneous_silence_is_not() -> None:
    intro = [["Environment", "A B", "x"], ["Environment", "C D", "y"]]
    round_robin = [
        [*intro, ["A B", "Environment", "did nothing"], ["C D", "Environment", "did nothing"]],
        [["C D", "Environment", 'said: "hello"'], ["A B", "Environment", "did nothing"]],
        [["Environment", "A B", "end"]],
    ]
    turns = turns_from_messages(round_robin)
    assert [(t.turn, t.agent_name, t.action_type) for t in turns] == [
        (0, "A B", ActionType.NONE),
        (1, "C D", ActionType.SPEAK),
    ]
    simultaneous = [
        [*intro, ["A B", "Environment", 'said: "one"'], ["C D", "Environment", 'said: "two"']],
        [["A B", "Environment", "did nothing"], ["C D", "Environment", 'said: "three"']],
    ]
    turns = turns_from_messages(simultaneous)
    assert [(t.turn, t.agent_index, t.argument) for t in turns] == [
        (0, 0, "one"),
        (0, 1, "two"),
        (1, 1, "three"),
    ]


async def test_a_sotopia_written_episode_is_served_with_its_turns(
    gql: GraphQLClient, redis_client: Any
) -> None:
    doc = {**sotopia.EPISODE, "pk": "01H9FG15A2NDTNH8K6F2T5XB05"}
    key = f"{sotopia.LOGS}.EpisodeLog:{doc['pk']}"
    await redis_client.execute_command("JSON.SET", key, "$", json.dumps(doc))
    try:
        data = await gql.data(EPISODE_TURNS, {"id": doc["pk"]})
    finally:
        await redis_client.delete(key)
    turns = data["episode"]["turns"]
    assert data["episode"]["status"] == "COMPLETED"
    got = [(t["turn"], t["speaker"], t["actionType"], t["argument"], t["to"]) for t in turns]
    assert got == sotopia.EXPECTED_TURNS
