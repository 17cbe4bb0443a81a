"""Social games of stored records: a scenario's rules checked as it is written, and where an
episode's game stands, derived from the rules and the stored turns (engine.games)."""

import json
from typing import Annotated, Any

from pydantic import AfterValidator

from parley.core.errors import ErrorCode, UserError, camel
from parley.core.limits import TEXT_MAX, has_utf8_form
from parley.engine.games import GameError, GameRules, GameState, game_problems, game_rules, replay
from parley.engine.types import ActionType, AgentAction, EpisodeSetup
from parley.resolvers.transcript import episode_turns
from parley.storage.models import EnvironmentProfile, EpisodeLog
from parley.storage.records import get_or_none

_NAMED_KEYS = frozenset({"teams", "roles"})
"""Rule keys whose own keys are names (of teams, roles), kept as they are in error paths."""


def _bounded(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """`value`, if Redis can store it: short enough, and no string in it (a key either) with a
    lone surrogate, which JSON carries but has no UTF-8 form."""
    if value is not None and len(json.dumps(value)) > TEXT_MAX:
        raise ValueError(f"at most {TEXT_MAX} characters of JSON")
    if value is not None and not has_utf8_form(json.dumps(value, ensure_ascii=False)):
        raise ValueError("must be text (UTF-8): a lone surrogate has no UTF-8 form to store")
    return value


GameMetadata = Annotated[dict[str, Any] | None, AfterValidator(_bounded)]


def game_errors(metadata: dict[str, Any] | None, seats: int) -> list[UserError]:
    """One error per problem of the Parley game rules in `metadata`, at its path under the
    input's `gameMetadata`; none when it holds no Parley game."""
    if not metadata:
        return []
    errors = []
    for where, message in game_problems(metadata, seats):
        path = ["input", "gameMetadata"]
        for k, part in enumerate(where):
            named = k > 0 and where[k - 1] in _NAMED_KEYS
            path.append(str(part) if named or not isinstance(part, str) else camel(part))
        errors.append(UserError(path, message.removeprefix("Value error, "), ErrorCode.INVALID))
    return errors


def scenario_game(scenario: EnvironmentProfile) -> GameRules | None:
    """The scenario's rules; None when it holds none of Parley's or they no longer validate
    (a record written around the API)."""
    try:
        return game_rules(scenario.game_metadata)
    except ValueError:
        return None


def episode_game(
    episode: EpisodeLog, scenario: EnvironmentProfile | None, names: list[str]
) -> GameState | None:
    """Where the episode's game stands after its stored turns; None outside a game."""
    rules = scenario_game(scenario) if scenario is not None else None
    if rules is None or rules.seat_problems(len(names)):
        return None
    turns = episode_turns(episode)
    try:
        return replay(rules, names, [(t.agent_index, t) for t in turns])
    except ValueError:
        return None


async def game_move(
    episode: EpisodeLog, names: list[str], seat: int, action: AgentAction
) -> tuple[AgentAction, str | None, list[UserError]]:
    """A person's action in the episode's game: with the phase's recipients, and the phase it
    is played in; or why the phase refuses it. Outside a game, or when it is not the seat's
    turn in it (the seat's own check then refuses it), the action as it is and no phase."""
    scenario = await get_or_none(EnvironmentProfile, episode.environment)
    state = episode_game(episode, scenario, names)
    if state is None or state.actor() != seat:
        return action, None, []
    try:
        return state.check(seat, action), state.phase.name, []
    except GameError as err:
        field = "to" if state.phase.visibility == "agent" and "to" in str(err) else "actionType"
        if state.phase.vote is not None and action.action_type in state.phase.action_types:
            field = "argument"
        return action, None, [UserError(["input", field], str(err), ErrorCode.INVALID)]


def action_types(episode: EpisodeLog, setup: EpisodeSetup, seat: int) -> list[ActionType] | None:
    """What `seat` may do now in the episode's game; None outside a game."""
    rules = game_rules(setup.scenario.game_metadata) if setup.scenario.game_metadata else None
    if rules is None:
        return None
    names = [a.name for a in setup.agents]
    try:
        state = replay(rules, names, [(t.agent_index, t) for t in episode_turns(episode)])
    except ValueError:
        return None
    return list(state.phase.action_types) if state.actor() == seat else []
