"""The example games end to end on the fake LLM: phases, votes, endings, and what every agent
saw of every turn, in its prompts and in its perspective view."""

from __future__ import annotations

import re

import pytest

from bench.support.fake_llm import FakeLLM, RecordedRequest
from parley.engine.episode import simulate
from parley.engine.errors import EpisodeFailed
from parley.engine.llm import ModelRegistry
from parley.engine.types import EpisodeSetup, Transcript
from parley.resolvers.perspective import view
from parley.storage.models import EpisodeLog, StoredTurn
from tests.support.games import (
    LOCATION,
    Script,
    game_setup,
    may_see,
    replay_rules,
    seen_line,
)

INES, TOMAS, GRETA, OMAR, NELL, PAVEL = (
    "Ines Marlow",
    "Tomas Reyes",
    "Greta Lind",
    "Omar Haddad",
    "Nell Carver",
    "Pavel Orlov",
)
LENA, MARCO, RUTH, DEX, SAMI = (
    "Lena Brooks",
    "Marco Vitale",
    "Ruth Okafor",
    "Dex Moreau",
    "Sami Kallio",
)


def werewolf_first_round(script: Script) -> None:
    """Night: the werewolves take Greta. Day: everyone but Ines votes Ines out."""
    script.vote("night vote", 1, {INES: GRETA, TOMAS: "Greta"})
    script.whisper(1, {INES: TOMAS, TOMAS: OMAR, OMAR: NELL, NELL: PAVEL, PAVEL: INES})
    script.vote("day vote", 1, {INES: OMAR, TOMAS: NELL, OMAR: INES, NELL: INES, PAVEL: INES})


def villagers_win(script: Script) -> None:
    werewolf_first_round(script)
    script.vote("night vote", 2, {TOMAS: OMAR})
    script.whisper(2, {TOMAS: NELL, NELL: PAVEL, PAVEL: NELL})
    script.vote("day vote", 2, {TOMAS: NELL, NELL: TOMAS, PAVEL: TOMAS})


def werewolves_win(script: Script) -> None:
    """Round 1 as above but the day vote takes Pavel: two werewolves against two villagers."""
    script.vote("night vote", 1, {INES: GRETA, TOMAS: GRETA})
    script.whisper(1, {INES: TOMAS, TOMAS: OMAR, OMAR: NELL, NELL: PAVEL, PAVEL: INES})
    script.vote("day vote", 1, {INES: PAVEL, TOMAS: PAVEL, OMAR: PAVEL, NELL: INES, PAVEL: INES})


def spy_caught(script: Script) -> None:
    script.vote("accusation", 1, {LENA: DEX, MARCO: DEX, RUTH: DEX, DEX: LENA, SAMI: MARCO})


def spy_escapes(script: Script) -> None:
    script.vote("accusation", 1, {LENA: MARCO, MARCO: DEX, RUTH: MARCO, DEX: MARCO, SAMI: RUTH})


def requests_of(fake: FakeLLM, name: str) -> list[RecordedRequest]:
    return [r for r in fake.requests_of("action") if f"You are {name}." in r.text]


def asked_turn(request: RecordedRequest) -> int:
    return int(re.findall(r"Turn #(\d+)\. Game round", request.text)[-1])


def stored(transcript: Transcript) -> EpisodeLog:
    turns = [StoredTurn(**t.model_dump(), sequence=k + 1) for k, t in enumerate(transcript.actions)]
    return EpisodeLog(pk="game", environment="env", agents=["a"], turns=turns)


def check_visibility(
    fake: FakeLLM, setup: EpisodeSetup, script: Script, transcript: Transcript
) -> int:
    """For every turn and every agent: its prompts and its perspective view hold the turn when
    the game lets the agent see it, and never otherwise. Returns how many hidden pairs."""
    episode = stored(transcript)
    hidden = 0
    for seat, agent in enumerate(setup.agents):
        asked = requests_of(fake, agent.name)
        texts = "\n".join(r.text for r in asked)
        last = max(asked, key=asked_turn, default=None)
        seen = {(s.turn, s.speaker) for s in view(episode, setup, seat).seen}
        for turn in transcript.actions:
            allowed = may_see(setup, script, turn, seat)
            assert ((turn.turn, turn.agent_name) in seen) == allowed, (agent.name, turn)
            if turn.agent_index == seat:
                continue
            if not allowed:
                hidden += 1
                assert seen_line(turn) not in texts, (agent.name, turn)
                if turn.action_type == "speak":
                    assert turn.argument not in texts, (agent.name, turn)
            elif last is not None and asked_turn(last) > turn.turn:
                assert seen_line(turn) in last.text, (agent.name, turn)
    return hidden


async def play(
    fake: FakeLLM, registry: ModelRegistry, game: str, moves: object
) -> tuple[EpisodeSetup, Script, Transcript]:
    setup = game_setup(game, fake.model_name())
    script = Script(fake)
    moves(script)  # type: ignore[operator]
    transcript = await simulate(setup, registry)
    assert not fake._rules, "every scripted move was played"
    return setup, script, transcript


async def test_werewolf_villagers_vote_out_both_werewolves(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    setup, script, transcript = await play(fake_llm, registry, "werewolf", villagers_win)
    assert transcript.termination == ["game_over"]
    assert transcript.termination_reason.startswith(
        "The game is over: the villagers win (every member of the werewolves is out)"
    )
    phases = [(t.phase, t.agent_name) for t in transcript.actions]
    assert phases[:4] == [
        ("night", INES),
        ("night", TOMAS),
        ("night vote", INES),
        ("night vote", TOMAS),
    ]
    # Greta, taken at night, never acts again; Ines and Omar neither after they went out
    assert [t.agent_name for t in transcript.actions if t.phase == "whispers"] == [
        INES, TOMAS, OMAR, NELL, PAVEL, TOMAS, NELL, PAVEL,
    ]  # fmt: skip
    assert len(transcript.actions) == 30
    hidden = check_visibility(fake_llm, setup, script, transcript)
    assert hidden > 0
    # the night talk reached the werewolves and no villager
    night = [t for t in transcript.actions if t.phase == "night"]
    assert night[1].argument in requests_of(fake_llm, INES)[-1].text
    for villager in (GRETA, OMAR, NELL, PAVEL):
        assert all(t.argument not in r.text for t in night for r in requests_of(fake_llm, villager))
    # everyone is told who went out, and the villagers learn it only that way
    pavel = requests_of(fake_llm, PAVEL)[-1].text
    assert "Game: Round 1, night vote: Greta Lind was eliminated by the vote." in pavel
    assert "Game: Round 2, night vote: Omar Haddad was eliminated by the vote." in pavel


async def test_werewolf_werewolves_win_at_parity(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    setup, script, transcript = await play(fake_llm, registry, "werewolf", werewolves_win)
    assert transcript.termination == ["game_over"]
    assert "the werewolves win (the werewolves are as many as everyone else)" in (
        transcript.termination_reason
    )
    assert len(transcript.actions) == 19
    check_visibility(fake_llm, setup, script, transcript)


async def test_team_knowledge_is_given_to_the_members_that_share_it(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    await play(fake_llm, registry, "werewolf", werewolves_win)
    ines = requests_of(fake_llm, INES)[0].text
    assert "You are on the team werewolves, with Tomas Reyes." in ines
    for villager in (OMAR, NELL, PAVEL):  # Greta goes before her first turn
        first = requests_of(fake_llm, villager)[0].text
        assert "You are on the team villagers." in first
        assert "werewolves, with" not in first


@pytest.mark.parametrize(
    ("moves", "winner", "turns"),
    [(spy_caught, "the crew win", 15), (spy_escapes, "the spy win", 15)],
)
async def test_spyfall_ends_with_the_accusation(
    fake_llm: FakeLLM, registry: ModelRegistry, moves: object, winner: str, turns: int
) -> None:
    setup, script, transcript = await play(fake_llm, registry, "spyfall", moves)
    assert transcript.termination == ["game_over"]
    assert transcript.termination_reason.startswith(f"The game is over: {winner}")
    assert len(transcript.actions) == turns
    assert [t.phase for t in transcript.actions] == ["questions"] * 10 + ["accusation"] * 5
    check_visibility(fake_llm, setup, script, transcript)
    # the spy is never told the location; everyone else is, in their goal
    for request in requests_of(fake_llm, DEX):
        assert LOCATION not in request.text
    spy_view = view(stored(transcript), setup, 3)
    assert LOCATION not in spy_view.goal + spy_view.background
    assert all(LOCATION not in s.text for s in spy_view.seen)
    for name in (LENA, MARCO, RUTH, SAMI):
        assert LOCATION in requests_of(fake_llm, name)[0].text


async def test_a_move_the_phase_does_not_allow_is_asked_again(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    script = Script(fake_llm)
    # Lena speaks in the vote, Marco votes for himself: each is asked again
    script.move(LENA, "accusation", 1, "speak", "I think it is Dex.")
    script.move(MARCO, "accusation", 1, "action", "Marco Vitale")
    spy_caught(script)
    setup = game_setup("spyfall", fake_llm.model_name())
    transcript = await simulate(setup, registry)
    assert "the crew win" in transcript.termination_reason
    lena, marco = requests_of(fake_llm, LENA), requests_of(fake_llm, MARCO)
    assert "in the phase 'accusation' the action_type must be one of \"action\"" in lena[-1].text
    assert "vote with the argument set to one name of ['Lena Brooks', 'Ruth" in marco[-1].text
    votes = [t.argument for t in transcript.actions if t.phase == "accusation"]
    assert votes == [DEX, DEX, DEX, LENA, MARCO]
    # the phase's action types and a vote's names are in the request's schema
    schema = lena[-1].body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["action_type"] == {"enum": ["action"]}
    assert schema["properties"]["argument"] == {"enum": [MARCO, RUTH, DEX, SAMI]}


async def test_a_whisper_without_one_recipient_is_asked_again(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    script = Script(fake_llm)
    script.move(INES, "whispers", 1, "speak", "Everyone, listen to me.")
    werewolves_win(script)
    setup = game_setup("werewolf", fake_llm.model_name())
    transcript = await simulate(setup, registry)
    assert "the werewolves win" in transcript.termination_reason
    ines = requests_of(fake_llm, INES)
    assert any('"to" must name exactly one of' in r.text for r in ines)
    schema = next(
        r.body["response_format"]["json_schema"]["schema"]
        for r in ines
        if "phase 'whispers'" in r.text.rsplit("Turn #", 1)[-1]
    )
    assert schema["properties"]["to"]["minItems"] == schema["properties"]["to"]["maxItems"] == 1


@pytest.mark.parametrize("kept_turns", [3, 11, 17])
async def test_a_game_resumed_from_its_stored_turns_ends_the_same_way(
    fake_llm: FakeLLM, registry: ModelRegistry, kept_turns: int
) -> None:
    setup, _, whole = await play(fake_llm, registry, "werewolf", villagers_win)
    kept = [t for t in whole.actions if t.turn < kept_turns]
    fake_llm.reset()
    fake_llm.add_rule(*replay_rules([t for t in whole.actions if t.turn >= kept_turns]))
    resumed = await simulate(setup, registry, history=kept)
    assert resumed.actions == whole.actions
    assert resumed.messages == whole.messages
    assert resumed.termination_reason == whole.termination_reason
    assert len(fake_llm.requests_of("action")) == len(whole.actions) - len(kept)


async def test_rules_that_do_not_fit_the_agents_fail_the_episode(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    setup = game_setup("werewolf", fake_llm.model_name())
    setup.agents.pop()
    setup.agent_models.pop()
    with pytest.raises(EpisodeFailed, match=re.escape("teams.villagers.seats: seats are 0..4")):
        await simulate(setup, registry)
    assert fake_llm.requests == []
