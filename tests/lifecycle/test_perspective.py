"""An episode as each of its agents saw it never shows what that agent could not see.

One real episode (the worker and the fake model): seven agents, each with its own secret,
goal, personality and public facts; seat 0 related to seats 1..6 at each of Sotopia's six
relationship levels; public turns, private ones between several pairs, and environment
messages to everyone and to one agent. Every agent's view is checked against every turn.
"""

import json
import uuid
from dataclasses import asdict

from bench.support.fake_llm import FakeLLM, Rule
from bench.support.simulation import queue_episode
from parley.engine.types import RelationshipType
from parley.lifecycle import start
from parley.lifecycle.control import RunControl
from parley.lifecycle.services import Services
from parley.resolvers.perspective import View, perspective
from parley.storage.models import AgentProfile, EnvironmentProfile, EpisodeLog, RelationshipProfile
from tests.lifecycle.conftest import burst

SEATS = 7


def marker(kind: str, seat: int) -> str:
    return f"{kind}{seat}x{kind[::-1]}"


async def world(tag: str) -> tuple[str, list[str], list[str]]:
    agents = [
        AgentProfile(
            first_name=f"Agent{i}",
            last_name=tag,
            age=30 + i,
            occupation=marker("Occupation", i),
            public_info=marker("Public", i),
            personality_and_values=marker("Personality", i),
            secret=marker("Secret", i),
        )
        for i in range(SEATS)
    ]
    for agent in agents:
        await agent.save()
    for level in RelationshipType:  # seat 0 with seat level+1, at every level
        await RelationshipProfile(
            agent_1_id=str(agents[0].pk), agent_2_id=str(agents[level + 1].pk), relationship=level
        ).save()
    scenario = EnvironmentProfile(
        scenario="A long dinner party.",
        agent_goals=[marker("Goal", i) for i in range(SEATS)],
        relationship=RelationshipType.STRANGER,
    )
    await scenario.save()
    names = [f"Agent{i} {tag}" for i in range(SEATS)]
    return str(scenario.pk), [str(a.pk) for a in agents], names


def text_of(view: View) -> str:
    return json.dumps(asdict(view), default=str)


async def test_every_view_shows_exactly_what_its_agent_could_see(
    services: Services, fake_llm: FakeLLM
) -> None:
    scenario, agents, names = await world(uuid.uuid4().hex[:8])
    private = {  # speaker -> (recipient, argument): private turns of the first round
        0: (3, marker("Whisper", 0)),
        2: (0, marker("Whisper", 2)),
        4: (5, marker("Whisper", 4)),
    }
    for speaker, (to, words) in private.items():
        fake_llm.add_rule(Rule.action(names[speaker], "speak", words, to=[names[to]]))
    model = fake_llm.model_name()
    pk = await queue_episode(services, scenario, agents, model, max_turns=SEATS + 2)
    control = RunControl(services.client, services.store)
    told_all, told_six = marker("Notice", 9), marker("Notice", 6)
    for notice, recipients in ((told_all, []), (told_six, [names[6]])):
        _, errors = await control.inject({"episode_id": pk, "text": notice, "to": recipients})
        assert not errors
    await burst(services)
    episode = await EpisodeLog.get(pk)
    assert episode.status == "COMPLETED", episode.error
    assert {t.agent_index for t in episode.turns if t.to} == set(private)
    assert all(i.turn == 0 for i in episode.injections)

    for seat in range(SEATS):
        view, errors = await perspective(episode, seat)
        assert not errors and view is not None
        text = text_of(view)
        # its own profile, secret and goal; nobody else's secret or goal
        assert view.secret == marker("Secret", seat) and marker("Goal", seat) in view.goal
        for other in range(SEATS):
            if other != seat:
                assert marker("Secret", other) not in text, (seat, other)
                assert marker("Goal", other) not in text, (seat, other)
        # every turn it may see, in order, and none it may not
        expected = [
            t.sequence
            for t in episode.turns
            if not t.to or t.agent_index == seat or names[seat] in t.to
        ]
        assert [s.sequence for s in view.seen if s.action_type is not None] == expected
        for speaker, (to, words) in private.items():
            assert (words in text) == (seat in (speaker, to)), (seat, speaker)
        # the environment's messages to everyone, and the one to seat 6 only there
        assert told_all in text
        assert (told_six in text) == (seat == 6)

    # seat 0 knows each partner as their relationship allows
    first, _ = await perspective(episode, 0)
    assert first is not None
    by_level = {p.relationship: p.profile for p in first.partners if p.seat > 0}
    for level, profile in by_level.items():
        partner = level + 1
        assert (marker("Occupation", partner).lower() in profile.lower()) == (
            level >= RelationshipType.ACQUAINTANCE
        )
        assert (marker("Public", partner) in profile) == (level >= RelationshipType.ACQUAINTANCE)
        assert (marker("Personality", partner) in profile) == (level >= RelationshipType.FRIEND)
        assert (profile == "") == (level == RelationshipType.STRANGER)
    assert len(by_level) == len(RelationshipType)
    # and what the partners know of seat 0 follows the same pair's level
    for level in RelationshipType:
        view, _ = await perspective(episode, level + 1)
        assert view is not None
        (about_first,) = [p for p in view.partners if p.seat == 0]
        assert about_first.relationship == level
        assert (marker("Personality", 0) in about_first.profile) == (
            level >= RelationshipType.FRIEND
        )


async def test_a_seat_outside_the_episode_is_a_user_error(services: Services) -> None:
    scenario, agents, _ = await world(uuid.uuid4().hex[:8])
    episode, errors = await start.start(
        services, {"scenario_id": scenario, "agent_ids": agents[:2]}
    )
    assert episode is not None
    for seat in (-1, 2):
        view, errors = await perspective(episode, seat)
        assert view is None and errors and "seat must be 0..1" in errors[0].message
