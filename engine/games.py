"""Social games as plain data: teams, phases, votes and endings, and a game's state.

A scenario is a game when its `game_metadata` holds rules in Parley's format
(`"format": "parley.game/1"`, documented in README.md, "Social games"). The state of a game is
a function of its rules and the turns played, fed one by one to `GameState.advance`: the same
turns always give the same phase, eliminations and result, so an episode replayed from its
stored turns is in the state it was in.

Who sees an action is said with the engine's own `to` recipients (`recipients`): an action for
everyone has none, one for the acting team names the team's other members, one for one agent
names that agent. Observations and perspective views need no other rule.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, model_validator

from parley.core import wording
from parley.engine.parsing import InvalidOutput
from parley.engine.types import ActionType, AgentAction

GAME_FORMAT = "parley.game/1"
Problem = tuple[tuple[str | int, ...], str]
"""Where in the rules (a path of keys and indexes), and what is wrong."""
Name = Field(min_length=1, max_length=60)


class Visibility(StrEnum):
    EVERYONE = "everyone"
    TEAM = "team"
    """The actor's own team (the acting team, in a phase a team plays)."""
    AGENT = "agent"
    """One agent, whom the actor names in `to`."""


class Rules(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Team(Rules):
    seats: list[int] = Field(min_length=1, max_length=100)
    members_know: bool = False
    """Whether each member is told who the other members are."""


class Vote(Rules):
    targets: Literal["others", "opponents"] = "others"
    """Whom an actor may vote for: anyone else still in the game, or only those outside the
    actor's team. The most voted is eliminated when the phase ends; a tie eliminates nobody."""


class Phase(Rules):
    name: str = Name
    actors: str = "alive"
    """"alive" (everyone still in the game), "team:<name>" or "role:<name>"."""
    action_types: list[ActionType] = Field(min_length=1)
    visibility: Visibility = Visibility.EVERYONE
    rounds: int = Field(default=1, ge=1, le=20)
    """How many times each actor acts in the phase, in seat order."""
    vote: Vote | None = None
    """A vote: each actor's `action` names one agent; the phase ends with an elimination."""
    next: str | None = None
    """The phase that follows; none: the first phase, in the game's next round."""
    instruction: str = Field(default="", max_length=500)
    """What the actors are told to do in the phase."""

    def actor_group(self) -> tuple[str, str]:
        kind, _, name = self.actors.partition(":")
        return kind, name


class Ending(Rules):
    when: Literal["team_eliminated", "parity", "after_phase", "rounds"]
    """team_eliminated: every member of `team` is out; parity: `team` has at least as many
    members in the game as all the others; after_phase: `phase` has ended; rounds: `rounds`
    rounds have been played."""
    team: str | None = None
    phase: str | None = None
    rounds: int | None = Field(default=None, ge=1, le=50)
    winner: str | None = None
    """The winning team; none for a game nobody wins."""


class GameRules(Rules):
    format: Literal["parley.game/1"]
    name: str = Field(default="", max_length=60)
    teams: dict[str, Team] = Field(min_length=1, max_length=20)
    roles: dict[str, list[int]] = Field(default_factory=dict, max_length=20)
    phases: list[Phase] = Field(min_length=1, max_length=20)
    endings: list[Ending] = Field(min_length=1, max_length=20)

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> GameRules:
        problems = self.problems()
        if problems and not (info.context or {}).get("defer_checks"):
            raise ValueError("; ".join(f"{'.'.join(map(str, p))}: {m}" for p, m in problems))
        return self

    def problems(self) -> list[Problem]:
        """What the fields, each valid alone, get wrong together."""
        found: list[Problem] = []
        seen: set[int] = set()
        for name, team in self.teams.items():
            if any(s < 0 for s in team.seats):
                found.append((("teams", name, "seats"), "seats are counted from 0"))
            if seen & set(team.seats):
                found.append((("teams", name, "seats"), "a seat can be in one team only"))
            seen |= set(team.seats)
        for name, members in self.roles.items():
            if any(s < 0 for s in members):
                found.append((("roles", name), "seats are counted from 0"))
        names = [p.name for p in self.phases]
        if len(set(names)) != len(names):
            found.append((("phases",), "phase names must be distinct"))
        for k, phase in enumerate(self.phases):
            found += [(("phases", k, f), m) for f, m in self._phase_problems(phase, set(names))]
        for k, ending in enumerate(self.endings):
            found += [(("endings", k, f), m) for f, m in self._ending_problems(ending, set(names))]
        return found

    def _phase_problems(self, phase: Phase, names: set[str]) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = []
        kind, group = phase.actor_group()
        if kind == "team" and group not in self.teams:
            found.append(("actors", f"no team {group!r}"))
        elif kind == "role" and group not in self.roles:
            found.append(("actors", f"no role {group!r}"))
        elif kind not in ("alive", "team", "role") or (kind == "alive" and group):
            found.append(("actors", '"alive", "team:<name>" or "role:<name>"'))
        if phase.visibility == Visibility.TEAM and not (
            kind == "team" and group in self.teams and self.teams[group].members_know
        ):
            found.append(
                (
                    "visibility",
                    "team visibility needs the phase played by one team whose members know "
                    "each other",
                )
            )
        if phase.vote is not None and phase.action_types != [ActionType.ACTION]:
            found.append(("action_types", 'a vote takes ["action"] (its argument: a name)'))
        if phase.next is not None and phase.next not in names:
            found.append(("next", f"no phase {phase.next!r}"))
        return found

    def _ending_problems(self, ending: Ending, names: set[str]) -> list[tuple[str, str]]:
        found: list[tuple[str, str]] = []
        if ending.when in ("team_eliminated", "parity") and ending.team not in self.teams:
            found.append(("team", f"{ending.when} needs one of the teams {sorted(self.teams)}"))
        if ending.when == "after_phase" and ending.phase not in names:
            found.append(("phase", f"after_phase needs one of the phases {sorted(names)}"))
        if ending.when == "rounds" and ending.rounds is None:
            found.append(("rounds", "a number of rounds is needed"))
        if ending.winner is not None and ending.winner not in self.teams:
            found.append(("winner", f"no team {ending.winner!r}"))
        return found

    def seat_problems(self, seats: int) -> list[Problem]:
        """Seats the rules name that a scenario of `seats` seats does not have."""
        found: list[Problem] = []
        for name, team in self.teams.items():
            if any(s >= seats for s in team.seats):
                found.append((("teams", name, "seats"), f"seats are 0..{seats - 1}"))
        for name, members in self.roles.items():
            if any(s >= seats for s in members):
                found.append((("roles", name), f"seats are 0..{seats - 1}"))
        return found

    def team_of(self, seat: int) -> str | None:
        return next((name for name, t in self.teams.items() if seat in t.seats), None)


def game_problems(metadata: Mapping[str, Any], seats: int) -> list[Problem]:
    """Every problem of Parley game rules meant for a scenario of `seats` seats, each with
    its path in the rules; none for a `game_metadata` that is not Parley's."""
    if metadata.get("format") != GAME_FORMAT:
        if "endings" in metadata:  # Parley's own key: rules that forgot their format
            return [(("format",), f'Parley game rules need "format": "{GAME_FORMAT}"')]
        return []  # another writer's game configuration (Sotopia's has phases and teams too)
    try:
        rules = GameRules.model_validate(dict(metadata), context={"defer_checks": True})
    except ValidationError as err:
        return wording.problems(err)
    return [*rules.problems(), *rules.seat_problems(seats)]


def game_rules(metadata: Mapping[str, Any] | None) -> GameRules | None:
    """The rules in a scenario's `game_metadata`, or None when it holds none of Parley's (for
    instance Sotopia's own game configuration, kept as it is)."""
    if not metadata or metadata.get("format") != GAME_FORMAT:
        return None
    return GameRules.model_validate(dict(metadata))


class GameError(InvalidOutput):
    """An action the current phase does not allow; its text is shown to the model on re-ask."""


class GameState:
    """Where a game is: the phase, who is still in, the votes cast, and the result once over."""

    def __init__(self, rules: GameRules, names: Sequence[str]) -> None:
        self.rules = rules
        self.names = list(names)
        self.round = 1
        self.phase_index = 0
        self.queue: list[int] = []
        self.out: list[int] = []
        """Seats eliminated or gone, in the order they went."""
        self.votes: dict[int, int] = {}
        self.notices: list[str] = []
        """What everyone has been told of the game so far (eliminations, the result)."""
        self.ending: Ending | None = None
        self._enter(0)

    @property
    def phase(self) -> Phase:
        return self.rules.phases[self.phase_index]

    @property
    def over(self) -> bool:
        return self.ending is not None

    @property
    def winner(self) -> str | None:
        return self.ending.winner if self.ending else None

    def alive(self) -> list[int]:
        return [i for i in range(len(self.names)) if i not in self.out]

    def members(self, team: str) -> list[int]:
        return [s for s in self.rules.teams[team].seats if s < len(self.names)]

    def actor(self) -> int | None:
        """The seat that acts next; None once the game is over."""
        if self.over:
            return None
        return self.queue[0] if self.queue else None

    def _group(self, phase: Phase) -> list[int]:
        kind, name = phase.actor_group()
        alive = self.alive()
        if kind == "team":
            return [s for s in alive if s in self.rules.teams[name].seats]
        if kind == "role":
            return [s for s in alive if s in self.rules.roles[name]]
        return alive

    def _enter(self, index: int, new_round: bool = False) -> None:
        """Start phase `index` (in a new round when the last one wrapped around), passing over
        phases nobody can play (at most one lap)."""
        for _ in range(len(self.rules.phases) + 1):
            if new_round:
                self.round += 1
                if self._ended(lambda e: e.when == "rounds"):
                    return
            self.phase_index, self.votes = index, {}
            actors = self._group(self.phase)
            self.queue = [s for _ in range(self.phase.rounds) for s in actors]
            if self.queue:
                return
            index, new_round = self._following()
        self.ending = Ending(when="rounds", rounds=self.round)
        self.notices.append("The game is over: nobody is left to play.")

    def _following(self) -> tuple[int, bool]:
        """The next phase's index, and whether it starts a new round."""
        following = self.phase.next
        if following is None:
            return 0, True
        return next(k for k, p in enumerate(self.rules.phases) if p.name == following), False

    def _ended(self, which: Any) -> bool:
        for ending in self.rules.endings:
            if which(ending) and self._holds(ending):
                self.ending = ending
                self.notices.append(f"The game is over: {result_text(ending)}.")
                return True
        return False

    def _holds(self, ending: Ending) -> bool:
        alive = set(self.alive())
        match ending.when:
            case "team_eliminated":
                return not alive & set(self.members(ending.team or ""))
            case "parity":
                team = alive & set(self.members(ending.team or ""))
                return bool(team) and len(team) >= len(alive - team)
            case "after_phase":
                return self.phase.name == ending.phase
            case _:
                return self.round > (ending.rounds or 0)

    def recipients(self, seat: int, action: AgentAction) -> list[str]:
        """The `to` of `seat`'s action in this phase (see the module's docstring)."""
        match self.phase.visibility:
            case Visibility.EVERYONE:
                return []
            case Visibility.TEAM:
                team = self.rules.team_of(seat)
                mates = [self.names[s] for s in self.members(team or "") if s != seat]
                return mates or [self.names[seat]]
            case _:
                return list(action.to)

    def vote_targets(self, seat: int) -> list[int]:
        vote = self.phase.vote
        others = [s for s in self.alive() if s != seat]
        if vote is None or vote.targets == "others":
            return others
        team = self.rules.team_of(seat)
        return [s for s in others if self.rules.team_of(s) != team]

    def check(self, seat: int, action: AgentAction) -> AgentAction:
        """`action` with the phase's recipients; GameError when the phase does not allow it."""
        allowed = self.phase.action_types
        if action.action_type not in allowed:
            kinds = ", ".join(f'"{t}"' for t in allowed)
            raise GameError(
                f"in the phase {self.phase.name!r} the action_type must be one of {kinds}"
            )
        if self.phase.vote is not None:
            targets = [self.names[s] for s in self.vote_targets(seat)]
            if _seat_named(action.argument, targets) is None:
                raise GameError(f"vote with the argument set to one name of {targets}")
        if self.phase.visibility == Visibility.AGENT:
            others = [self.names[s] for s in self.alive() if s != seat]
            if len(action.to) != 1 or action.to[0] not in others:
                raise GameError(f'"to" must name exactly one of {others}')
        return action.model_copy(update={"to": self.recipients(seat, action)})

    def advance(self, seat: int, action: AgentAction) -> None:
        """Take the action `seat` just played (its turn in the current phase)."""
        if self.over or not self.queue or self.queue[0] != seat:
            raise GameError(f"it is not {self.names[seat]}'s turn in the game")
        self.queue.pop(0)
        if action.action_type == ActionType.LEAVE:
            self._drop(seat, f"{self.names[seat]} left the game.")
        elif self.phase.vote is not None:
            target = _seat_named(action.argument, [self.names[s] for s in self.vote_targets(seat)])
            if target is not None:
                self.votes[seat] = self.vote_targets(seat)[target]
        self.queue = [s for s in self.queue if s not in self.out]
        if self.over or self.queue:
            return
        self._close()

    def _drop(self, seat: int, notice: str) -> None:
        self.out.append(seat)
        self.notices.append(f"Round {self.round}, {self.phase.name}: {notice}")
        self._ended(lambda e: e.when in ("team_eliminated", "parity"))

    def _close(self) -> None:
        if self.phase.vote is not None:
            tally = Counter(self.votes.values()).most_common()
            if tally and (len(tally) == 1 or tally[0][1] > tally[1][1]):
                chosen = tally[0][0]
                self._drop(chosen, f"{self.names[chosen]} was eliminated by the vote.")
            else:
                self.notices.append(
                    f"Round {self.round}, {self.phase.name}: a tie; nobody was eliminated."
                )
        if self.over or self._ended(lambda e: e.when == "after_phase"):
            return
        self._enter(*self._following())


def _seat_named(text: str, names: list[str]) -> int | None:
    wanted = text.strip().strip(".\"'").casefold()
    for k, name in enumerate(names):
        if name.casefold() == wanted:
            return k
    firsts = [k for k, n in enumerate(names) if n.split()[0].casefold() == wanted]
    return firsts[0] if len(firsts) == 1 else None


def result_text(ending: Ending) -> str:
    winner = f"the {ending.winner} win" if ending.winner else "nobody wins"
    match ending.when:
        case "team_eliminated":
            why = f"every member of the {ending.team} is out"
        case "parity":
            why = f"the {ending.team} are as many as everyone else"
        case "after_phase":
            why = f"the phase {ending.phase!r} has ended"
        case _:
            why = f"{ending.rounds} rounds have been played"
    return f"{winner} ({why})"


def replay(
    rules: GameRules, names: Sequence[str], turns: Sequence[tuple[int, AgentAction]]
) -> GameState:
    """The state after `turns` (seat, action), in the order they were played."""
    state = GameState(rules, names)
    for seat, action in turns:
        if state.over:
            break
        state.advance(seat, action)
    return state
