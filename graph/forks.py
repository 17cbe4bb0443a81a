"""forkEpisode: a new episode from a finished one's first turns, with a change
(lifecycle/forks.py)."""

from typing import Any

import strawberry

from parley.graph.context import Info
from parley.graph.episode_types import Episode
from parley.graph.fields import wrapped
from parley.graph.inputs import provided
from parley.graph.payloads import user_errors
from parley.graph.types import UserError
from parley.lifecycle import forks


@strawberry.input(description="The model to put in one seat of a fork.")
class SeatModelInput:
    seat: int = strawberry.field(description="The seat (0-based, in agent order).")
    model: str = strawberry.field(description="A model name, as in startSimulation.")


@strawberry.input(description="An environment message a fork delivers at its fork turn.")
class ForkMessageInput:
    text: str = strawberry.field(description="What the environment says.")
    to: list[str] = strawberry.field(
        default_factory=list, description="Agent names it is for; empty: everyone."
    )


@strawberry.input(description="The goal to give one seat of a fork.")
class SeatGoalInput:
    seat: int = strawberry.field(description="The seat (0-based, in agent order).")
    goal: str = strawberry.field(description="The goal, instead of the scenario's.")


@strawberry.input(
    description="Profile fields to give one seat's agent of a fork (its name stays: the kept "
    "turns name it); the fields not given stay the agent's own."
)
class SeatProfileInput:
    seat: int = strawberry.field(description="The seat (0-based, in agent order).")
    age: int | None = strawberry.field(default=None, description="Age in years.")
    occupation: str | None = strawberry.field(default=None, description="Occupation.")
    public_info: str | None = strawberry.field(default=None, description="Public information.")
    personality_and_values: str | None = strawberry.field(
        default=None, description="Personality and values."
    )
    decision_making_style: str | None = strawberry.field(
        default=None, description="How the agent makes decisions."
    )
    big_five: str | None = strawberry.field(default=None, description="Big Five traits.")
    mbti: str | None = strawberry.field(default=None, description="Myers-Briggs type.")
    secret: str | None = strawberry.field(
        default=None, description="What the agent hides (only it sees it in play)."
    )


@strawberry.input(description="A fork of a finished episode: where, and what changes.")
class ForkEpisodeInput:
    episode_id: strawberry.ID = strawberry.field(
        description="The episode to fork: completed, failed or cancelled."
    )
    at_turn: int = strawberry.field(
        description="How many of its turns the fork keeps (0 to the turns it played): the "
        "fork plays on from this turn."
    )
    seat_models: list[SeatModelInput] = strawberry.field(
        default_factory=list,
        description="Seats to give another model; every seat a person played must get one "
        "(a fork has no people's seats).",
    )
    inject_message: ForkMessageInput | None = strawberry.field(
        default=None, description="An environment message its agents see from turn atTurn on."
    )
    goals: list[SeatGoalInput] = strawberry.field(
        default_factory=list,
        description="Seats whose agent has another goal in the fork (from the start: the "
        "kept turns stay as they were played).",
    )
    profiles: list[SeatProfileInput] = strawberry.field(
        default_factory=list,
        description="Seats whose agent has other profile fields in the fork (seen likewise).",
    )
    tag: str | None = strawberry.field(default=None, description="Its tag; the parent's if null.")
    idempotency_key: str | None = strawberry.field(
        default=None,
        description="Repeating a fork with the same key within 24 hours returns the first fork.",
    )


def fork_fields(data: ForkEpisodeInput) -> dict[str, Any]:
    """The lifecycle's fields of a fork request."""
    fields = provided(data)
    if (message := fields.get("inject_message")) is not None:
        fields["inject_message"] = provided(message)
    return fields


@strawberry.type(description="Result of forkEpisode.")
class ForkEpisodePayload:
    episode: Episode | None = strawberry.field(description="The fork, QUEUED; null on failure.")
    user_errors: list[UserError] = strawberry.field(description="Why nothing was done.")


@strawberry.type
class ForkMutation:
    @strawberry.mutation(
        description="Start a new episode that shares the first atTurn turns of a finished one "
        "and goes on from there with a change: other models in some seats, an environment "
        "message, other goals. It is QUEUED and runs like any other; it names its parent and "
        "turn (Episode.parent, forkedAtTurn, forkChange)."
    )
    async def fork_episode(self, info: Info, input: ForkEpisodeInput) -> ForkEpisodePayload:
        forked = await forks.fork(info.context.services, fork_fields(input))
        return ForkEpisodePayload(
            episode=wrapped(Episode, forked.episode), user_errors=user_errors(forked.errors)
        )
