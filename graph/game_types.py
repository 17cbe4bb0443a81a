"""GraphQL types of social games: a scenario's rules, and where an episode's game stands."""

import strawberry

from parley.engine.games import GameRules, GameState, result_text


@strawberry.type(description="A team of a social game and the seats that play in it.")
class GameTeam:
    name: str = strawberry.field(description="The team's name.")
    seats: list[int] = strawberry.field(description="Its seats (indexes into the agents).")
    members_know: bool = strawberry.field(description="Whether its members know each other.")


@strawberry.type(description="One phase of a social game's rounds.")
class GamePhase:
    name: str = strawberry.field(description="The phase's name.")
    actors: str = strawberry.field(
        description='Who acts: "alive" (everyone still in), "team:<name>" or "role:<name>".'
    )
    action_types: list[str] = strawberry.field(description="The action types allowed.")
    visibility: str = strawberry.field(
        description='Who sees the actions: "everyone", "team" (the actor\'s) or "agent" (one '
        "agent the actor names)."
    )
    rounds: int = strawberry.field(description="How many times each actor acts in the phase.")
    vote: bool = strawberry.field(
        description="Whether the phase is a vote that ends with an elimination."
    )
    next: str | None = strawberry.field(
        description="The phase that follows; null: the first, in the next round."
    )


@strawberry.type(description="A social game's rules, read from the scenario's gameMetadata.")
class ScenarioGame:
    name: str = strawberry.field(description="The game's name.")
    teams: list[GameTeam] = strawberry.field(description="The teams.")
    phases: list[GamePhase] = strawberry.field(description="The phases of each round, in order.")
    endings: list[str] = strawberry.field(
        description="How the game can end, in the order they are checked, in words."
    )


def scenario_game_type(rules: GameRules) -> ScenarioGame:
    return ScenarioGame(
        name=rules.name,
        teams=[
            GameTeam(name=n, seats=list(t.seats), members_know=t.members_know)
            for n, t in rules.teams.items()
        ],
        phases=[
            GamePhase(
                name=p.name,
                actors=p.actors,
                action_types=[str(a) for a in p.action_types],
                visibility=str(p.visibility),
                rounds=p.rounds,
                vote=p.vote is not None,
                next=p.next,
            )
            for p in rules.phases
        ],
        endings=[result_text(e) for e in rules.endings],
    )


@strawberry.type(description="A team in an episode: its agents, and those of them out.")
class EpisodeTeam:
    name: str = strawberry.field(description="The team's name.")
    members: list[str] = strawberry.field(description="Its agents' names, in seat order.")
    out: list[str] = strawberry.field(description="Those eliminated or gone.")


@strawberry.type(
    description="Where an episode's social game stands, derived from its stored turns. Teams "
    "are secret in play: this is the omniscient view."
)
class EpisodeGame:
    round: int = strawberry.field(description="The game's round, from 1.")
    phase: str | None = strawberry.field(description="The current phase; null once over.")
    over: bool = strawberry.field(description="Whether the game has ended.")
    winner: str | None = strawberry.field(description="The winning team, once over.")
    result: str | None = strawberry.field(description="How it ended, in words, once over.")
    out: list[str] = strawberry.field(description="Agents eliminated or gone, in that order.")
    teams: list[EpisodeTeam] = strawberry.field(description="The teams and their agents.")
    notices: list[str] = strawberry.field(description="What every agent was told of the game.")


def episode_game_type(state: GameState) -> EpisodeGame:
    names = state.names
    out = [names[s] for s in state.out]
    teams = [
        EpisodeTeam(
            name=name,
            members=[names[s] for s in state.members(name)],
            out=[names[s] for s in state.out if s in state.members(name)],
        )
        for name in state.rules.teams
    ]
    return EpisodeGame(
        round=state.round,
        phase=None if state.over else state.phase.name,
        over=state.over,
        winner=state.winner,
        result=result_text(state.ending) if state.ending else None,
        out=out,
        teams=teams,
        notices=list(state.notices),
    )
