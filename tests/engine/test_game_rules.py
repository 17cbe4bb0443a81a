"""A game's state from its rules and the actions played, without a model: rounds, ties, phases
nobody can play, leaving, and the round limit."""

import re
from typing import Any

import pytest

from parley.engine.games import GameError, GameState, game_rules
from parley.engine.types import ActionType, AgentAction

NAMES = ["Ann A", "Ben B", "Cy C", "Dee D"]


def rules(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "format": "parley.game/1",
        "teams": {"red": {"seats": [0], "members_know": True}, "blue": {"seats": [1, 2, 3]}},
        "roles": {"scout": [2]},
        "phases": [
            {"name": "talk", "actors": "alive", "action_types": ["speak"], "next": "vote"},
            {"name": "vote", "actors": "alive", "action_types": ["action"], "vote": {}},
        ],
        "endings": [
            {"when": "team_eliminated", "team": "red", "winner": "blue"},
            {"when": "rounds", "rounds": 2},
        ],
    }
    base.update(changes)
    return base


def state(**changes: Any) -> GameState:
    found = game_rules(rules(**changes))
    assert found is not None
    return GameState(found, NAMES)


def say(game: GameState, text: str = "hi") -> None:
    seat = game.actor()
    assert seat is not None
    game.advance(seat, AgentAction(action_type=ActionType.SPEAK, argument=text))


def vote(game: GameState, *targets: str) -> None:
    for target in targets:
        seat = game.actor()
        assert seat is not None
        action = game.check(seat, AgentAction(action_type=ActionType.ACTION, argument=target))
        game.advance(seat, action)


def test_a_tie_eliminates_nobody_and_the_round_limit_ends_the_game() -> None:
    game = state()
    for game_round in (1, 2):
        assert game.round == game_round
        for _ in NAMES:
            say(game)
        assert game.phase.name == "vote"
        vote(game, "Ben", "Ann", "Ben", "Ann")  # two against two
    assert game.out == [] and game.over and game.winner is None
    assert game.notices[-1] == "The game is over: nobody wins (2 rounds have been played)."
    assert "Round 2, vote: a tie; nobody was eliminated." in game.notices
    assert game.actor() is None


def test_the_last_member_out_ends_the_game_at_once() -> None:
    game = state()
    for _ in NAMES:
        say(game)
    vote(game, "Ben", "Ann", "Ann")
    assert not game.over  # Dee has not voted yet
    vote(game, "Ann")
    assert game.out == [0] and game.winner == "blue" and game.round == 1


def test_someone_who_leaves_is_out_and_not_asked_again() -> None:
    game = state()
    game.advance(0, AgentAction(action_type=ActionType.SPEAK, argument="hi"))
    game.advance(1, AgentAction(action_type=ActionType.LEAVE))
    assert game.out == [1] and game.actor() == 2
    say(game)
    say(game)
    assert game.phase.name == "vote"
    with pytest.raises(GameError, match=re.escape("one name of ['Cy C', 'Dee D']")):
        game.check(0, AgentAction(action_type=ActionType.ACTION, argument="Ben B"))


def test_a_phase_nobody_can_play_is_passed_over() -> None:
    phases = [
        {"name": "scouting", "actors": "role:scout", "action_types": ["speak"], "next": "talk"},
        {"name": "talk", "actors": "alive", "action_types": ["speak"], "next": "vote"},
        {"name": "vote", "actors": "alive", "action_types": ["action"], "vote": {}},
    ]
    game = state(phases=phases)
    assert game.phase.name == "scouting" and game.actor() == 2
    say(game)
    for _ in NAMES:
        say(game)
    vote(game, "Cy", "Cy", "Ann", "Cy")  # the scout is out
    assert game.round == 2 and game.phase.name == "talk" and game.actor() == 0


def test_an_action_out_of_turn_is_refused() -> None:
    game = state()
    with pytest.raises(GameError, match="not Ben B's turn"):
        game.advance(1, AgentAction(action_type=ActionType.SPEAK, argument="me first"))


def test_rules_of_another_format_are_no_game() -> None:
    assert game_rules({"mode": "werewolves", "phases": []}) is None
    assert game_rules(None) is None
    with pytest.raises(ValueError, match=re.escape("phases.0.next: no phase 'lunch'")):
        game_rules(rules(phases=[{"name": "a", "action_types": ["speak"], "next": "lunch"}]))
