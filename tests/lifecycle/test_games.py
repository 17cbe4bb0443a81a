"""The example games imported, run by the worker against a real Redis, served over HTTP: the
stored turns' phases, each seat's perspective, the game's state, and a resumed game."""

import asyncio
from typing import Any

from bench.support.fake_llm import FakeLLM
from bench.support.simulation import queue_episode
from parley.core.errors import ErrorCode
from parley.lifecycle import start
from parley.lifecycle.seats import Seats
from parley.lifecycle.services import Services
from parley.resolvers.episode_setup import load_setup
from parley.resolvers.importer import import_lines
from parley.resolvers.perspective import perspective
from parley.storage.models import EpisodeLog, EpisodeStatus
from tests.engine.test_games import spy_caught, villagers_win
from tests.lifecycle.conftest import burst
from tests.lifecycle.test_worker import die_holding
from tests.support.games import EXAMPLES, Script, game_lines, may_see, replay_rules
from tests.support.server import GraphQLClient

EPISODE = """
query($id: ID!) {
  episode(id: $id) {
    status terminationReason
    turns { turn speaker phase to }
    game { round phase over winner result out notices teams { name members out } }
    scenario { game { name teams { name seats membersKnow } phases { name actors actionTypes
      visibility rounds vote next } endings } }
  }
}"""


async def imported(services: Services, game: str) -> tuple[str, list[str]]:
    report = await import_lines(services.client, (EXAMPLES / f"{game}.jsonl").open())
    assert report.invalid == 0, report.problems
    lines = game_lines(game)
    agents = [line["agent_id"] for line in lines if "agent_id" in line]
    (scenario,) = [line["env_id"] for line in lines if "env_id" in line]
    return scenario, agents


async def queued(services: Services, game: str, model: str) -> str:
    scenario, agents = await imported(services, game)
    return await queue_episode(services, scenario, agents, model, max_turns=80)


async def test_a_werewolf_game_runs_and_is_served_with_its_phases_and_teams(
    services: Services, fake_llm: FakeLLM, gql: GraphQLClient
) -> None:
    script = Script(fake_llm)
    villagers_win(script)
    pk = await queued(services, "werewolf", fake_llm.model_name())
    await burst(services)
    episode = await EpisodeLog.get(pk)
    assert episode.status == EpisodeStatus.COMPLETED, episode.error
    assert [t.phase for t in episode.turns][:5] == ["night"] * 2 + ["night vote"] * 2 + ["whispers"]
    # every seat's perspective holds exactly what the game lets it see
    setup = await load_setup(episode)
    for seat in range(len(episode.agents)):
        seen, errors = await perspective(episode, seat)
        assert not errors and seen is not None
        got = {(s.turn, s.speaker) for s in seen.seen}
        expected = {
            (t.turn, t.agent_name) for t in episode.turns if may_see(setup, script, t, seat)
        }
        assert got == expected

    data = (await gql.data(EPISODE, {"id": pk}))["episode"]
    assert data["terminationReason"].startswith("The game is over: the villagers win")
    game = data["game"]
    assert game["over"] and game["winner"] == "villagers" and game["phase"] is None
    assert game["out"] == ["Greta Lind", "Ines Marlow", "Omar Haddad", "Tomas Reyes"]
    assert game["teams"][0] == {
        "name": "werewolves",
        "members": ["Ines Marlow", "Tomas Reyes"],
        "out": ["Ines Marlow", "Tomas Reyes"],
    }
    assert game["round"] == 2 and game["notices"][-1].startswith("The game is over")
    night = [t for t in data["turns"] if t["phase"] == "night"]
    assert night[0]["to"] == ["Tomas Reyes"] and night[1]["to"] == ["Ines Marlow"]
    rules = data["scenario"]["game"]
    assert rules["name"] == "werewolf" and [p["name"] for p in rules["phases"]] == [
        "night",
        "night vote",
        "whispers",
        "day",
        "day vote",
    ]
    assert rules["phases"][1]["vote"] and rules["phases"][2]["visibility"] == "agent"


async def test_a_game_whose_worker_died_resumes_and_ends_the_same_way(
    services: Services, fake_llm: FakeLLM, gql: GraphQLClient
) -> None:
    spy_caught(Script(fake_llm))
    first = await queued(services, "spyfall", fake_llm.model_name())
    await burst(services)
    whole = await EpisodeLog.get(first)
    assert whole.status == EpisodeStatus.COMPLETED, whole.error

    fake_llm.reset()
    again = await queued(services, "spyfall", fake_llm.model_name())
    await die_holding(services, again)
    kept = 7
    for k, turn in enumerate(whole.turns[:kept]):
        row: dict[str, Any] = turn.model_dump(mode="json", exclude={"sequence", "at"})
        assert await services.store.append_turn(again, 1, row, k + 1, []) is not None
    fake_llm.add_rule(*replay_rules(whole.turns[kept:]))
    await asyncio.sleep(1.1)
    await burst(services)
    resumed = await EpisodeLog.get(again)
    assert resumed.status == EpisodeStatus.COMPLETED and resumed.attempt == 2
    strip = {"sequence", "at"}
    assert [t.model_dump(exclude=strip) for t in resumed.turns] == [
        t.model_dump(exclude=strip) for t in whole.turns
    ]
    assert resumed.termination_reason == whole.termination_reason
    assert len(fake_llm.requests_of("action")) == len(whole.turns) - kept
    served = (await gql.data(EPISODE, {"id": again}))["episode"]["game"]
    assert served["winner"] == "crew" and served["out"] == ["Dex Moreau"]


async def test_a_person_in_a_game_acts_within_its_phase_and_is_seen_by_its_team_only(
    services: Services, fake_llm: FakeLLM
) -> None:
    scenario, agents = await imported(services, "werewolf")
    fields = {
        "scenario_id": scenario,
        "agent_ids": agents,
        "agent_models": [fake_llm.model_name()],
        "judge_model": fake_llm.model_name(),
        "max_turns": 80,
        "human_seats": [0],
    }
    started = await start.start_many(services, [fields], prefix=("input",))
    assert not started.errors, started.errors
    pk = str(started.episodes[0].pk)
    token = started.seat_tokens[pk][0]
    await burst(services)
    waiting = await EpisodeLog.get(pk)
    assert waiting.status == EpisodeStatus.WAITING
    view, _ = await perspective(waiting, 0)
    assert view is not None and view.your_turn is not None
    assert view.your_turn.action_types == ["speak"]

    seats = Seats(services.client, services.store)
    act = {"episode_id": pk, "seat": 0, "seat_token": token, "to": []}
    _, refused = await seats.act({**act, "action_type": "action", "argument": "Greta Lind"})
    assert [(e.field, e.code) for e in refused] == [(["input", "actionType"], ErrorCode.INVALID)]
    assert "in the phase 'night' the action_type must be one of" in refused[0].message
    assert (await EpisodeLog.get(pk)).turns == []

    words = "We take the teacher tonight."
    sequence, errors = await seats.act({**act, "action_type": "speak", "argument": words})
    assert not errors and sequence is not None
    (turn,) = (await EpisodeLog.get(pk)).turns
    assert (turn.phase, turn.to, turn.argument) == ("night", ["Tomas Reyes"], words)
    await burst(services)  # Tomas answers at night; then the night vote waits on Ines again
    episode = await EpisodeLog.get(pk)
    assert episode.status == EpisodeStatus.WAITING and len(episode.turns) == 2
    tomas, _ = await perspective(episode, 1)
    greta, _ = await perspective(episode, 2)
    assert tomas is not None and greta is not None
    assert tomas.seen[0].text.endswith(f'said: "{words}"')
    assert greta.seen == [] and greta.your_turn is None
    assert tomas.your_turn is None
    ines, _ = await perspective(episode, 0)
    assert ines is not None and ines.your_turn is not None
    assert ines.your_turn.action_types == ["action"]
    assert not any(words in r.text for r in fake_llm.requests if "You are Greta" in r.text)
