"""An episode as one of its agents saw it.

An agent knows its own profile (its secret included) and goal; sees each partner only as their
relationship allows (SOTOPIA.md §2.3, `engine.render.partner_profile`), never a partner's goal
or secret; sees the public turns, the private ones it made or that were addressed to it, and the
environment's messages to everyone or to it. The same rules filter a live stream event by event
(`sees_turn`, `sees_injection`) and build the whole view after the fact (`view`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from parley.core.errors import ErrorCode, UserError
from parley.engine.prompts import agent_background
from parley.engine.render import action_text, agent_viewer, own_bio, partner_profile, render_tagged
from parley.engine.types import ACTION_TYPES, ActionType, EpisodeSetup, RelationshipType, Turn
from parley.resolvers.episode_setup import SetupError, load_setup
from parley.resolvers.games import action_types
from parley.resolvers.transcript import episode_turns
from parley.storage.models import EpisodeLog, EpisodeStatus, StoredInjection, StoredTurn, Waiting


def sees_turn(turn: Turn, seat: int, name: str) -> bool:
    return not turn.to or turn.agent_index == seat or name in turn.to


def sees_injection(injection: StoredInjection, name: str) -> bool:
    return not injection.to or name in injection.to


@dataclass(frozen=True)
class Partner:
    seat: int
    name: str
    relationship: RelationshipType
    profile: str
    """What the agent knows of this partner ("" for a stranger)."""


@dataclass(frozen=True)
class Seen:
    """A turn, or an environment message, that the agent saw."""

    sequence: int
    turn: int | None
    speaker: str
    text: str
    """Its natural-language form (Sotopia's, as the agent was told it)."""
    action_type: ActionType | None = None
    argument: str = ""
    to: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class YourTurn:
    turn: int
    deadline: float
    action_types: list[ActionType]


@dataclass(frozen=True)
class View:
    seat: int
    name: str
    profile: str
    """The agent's own profile as it was told it, its secret included."""
    secret: str
    goal: str
    background: str
    """The whole background the agent was given (scenario, participants, goals it may see)."""
    partners: list[Partner]
    seen: list[Seen]
    your_turn: YourTurn | None
    reward: tuple[float, dict[str, float]] | None = None
    """The agent's own scores, once the episode is COMPLETED."""
    ranges: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Each dimension the episode is judged on, by name: its lowest and highest score."""


def your_turn(
    waiting: Waiting | None, seat: int, allowed: list[ActionType] | None = None
) -> YourTurn | None:
    """`allowed`: the action types of the game's phase, in a game (all of them otherwise)."""
    if waiting is None or seat not in waiting.seats:
        return None
    types = list(ACTION_TYPES) if allowed is None else allowed
    return YourTurn(turn=waiting.turn, deadline=waiting.deadline, action_types=types)


def seen_turn(turn: StoredTurn) -> Seen:
    return Seen(
        sequence=turn.sequence,
        turn=turn.turn,
        speaker=turn.agent_name,
        text=action_text(turn),
        action_type=turn.action_type,
        argument=turn.argument,
        to=list(turn.to),
    )


def seen_injection(injection: StoredInjection) -> Seen:
    return Seen(
        sequence=injection.sequence,
        turn=injection.turn,
        speaker="Environment",
        text=injection.text,
        to=list(injection.to),
    )


def view(episode: EpisodeLog, setup: EpisodeSetup, seat: int) -> View:
    me = setup.agents[seat]
    partners = [
        Partner(
            seat=j,
            name=agent.name,
            relationship=setup.relationship_between(seat, j),
            profile=partner_profile(agent, setup.relationship_between(seat, j)),
        )
        for j, agent in enumerate(setup.agents)
        if j != seat
    ]
    turns = [seen_turn(t) for t in episode_turns(episode) if sees_turn(t, seat, me.name)]
    told = [seen_injection(i) for i in episode.injections if sees_injection(i, me.name)]
    return View(
        seat=seat,
        name=me.name,
        profile=own_bio(me),
        secret=me.secret,
        goal=render_tagged(setup.goal_of(seat), agent_viewer(seat), keep_hints=True),
        background=agent_background(setup, seat),
        partners=partners,
        seen=sorted([*turns, *told], key=lambda s: s.sequence),
        your_turn=your_turn(episode.waiting, seat, action_types(episode, setup, seat)),
        reward=own_reward(episode, seat),
        ranges={d.name: (d.range_low, d.range_high) for d in setup.dimensions},
    )


def own_reward(episode: EpisodeLog, seat: int) -> tuple[float, dict[str, float]] | None:
    if episode.status != EpisodeStatus.COMPLETED or seat >= len(episode.rewards):
        return None
    reward = episode.rewards[seat]
    return None if isinstance(reward, float | int) else (reward[0], dict(reward[1]))


async def perspective(episode: EpisodeLog, seat: int) -> tuple[View | None, list[UserError]]:
    """The view of the agent in `seat`, from the records the episode names as they are now."""
    if not 0 <= seat < len(episode.agents):
        message = f"seat must be 0..{len(episode.agents) - 1}"
        return None, [UserError(["seat"], message, ErrorCode.INVALID)]
    try:
        setup = await load_setup(episode)
    except SetupError as err:
        return None, [UserError(["id"], str(err), ErrorCode.NOT_FOUND)]
    return view(episode, setup, seat), []
