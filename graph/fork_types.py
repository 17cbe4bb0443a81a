"""GraphQL types of what a fork changed from its parent (lifecycle/forks.py)."""

import strawberry

from parley.storage import models


@strawberry.type(description="The model a fork puts in one seat instead of its parent's.")
class SeatModel:
    seat: int = strawberry.field(description="The seat (0-based, in agent order).")
    model: str = strawberry.field(description="The model that plays it in the fork.")


@strawberry.type(description="The goal a fork gives one seat instead of its scenario's.")
class SeatGoal:
    seat: int = strawberry.field(description="The seat (0-based, in agent order).")
    goal: str = strawberry.field(description="The goal its agent has in the fork.")


@strawberry.type(description="Profile fields a fork gives one seat's agent instead of its own.")
class SeatProfile:
    seat: int = strawberry.field(description="The seat (0-based, in agent order).")
    age: int | None = strawberry.field(description="Age; null: the agent's own.")
    occupation: str | None = strawberry.field(description="Occupation; null: its own.")
    public_info: str | None = strawberry.field(description="Public information; null: its own.")
    personality_and_values: str | None = strawberry.field(
        description="Personality and values; null: its own."
    )
    decision_making_style: str | None = strawberry.field(
        description="Decision-making style; null: its own."
    )
    big_five: str | None = strawberry.field(description="Big Five traits; null: its own.")
    mbti: str | None = strawberry.field(description="Myers-Briggs type; null: its own.")
    secret: str | None = strawberry.field(description="Secret; null: its own.")

    @classmethod
    def of(cls, profile: models.SeatProfile) -> "SeatProfile":
        return cls(**profile.model_dump())


@strawberry.type(description="An environment message a fork delivers in its first own turn.")
class ForkMessage:
    text: str = strawberry.field(description="What the environment says.")
    to: list[str] = strawberry.field(description="The agents it is for; empty means everyone.")


@strawberry.type(description="What a fork changed from its parent, from its fork turn on.")
class ForkChange:
    seat_models: list[SeatModel] = strawberry.field(description="Seats given another model.")
    inject_message: ForkMessage | None = strawberry.field(
        description="The environment message delivered at the fork turn; null for none."
    )
    goals: list[SeatGoal] = strawberry.field(description="Seats given another goal.")
    profiles: list[SeatProfile] = strawberry.field(
        description="Seats whose agent has other profile fields."
    )

    @classmethod
    def of(cls, change: models.ForkChange) -> "ForkChange":
        message = change.injection
        return cls(
            seat_models=[SeatModel(seat=s.seat, model=s.model) for s in change.seat_models],
            inject_message=ForkMessage(text=message.text, to=list(message.to)) if message else None,
            goals=[SeatGoal(seat=g.seat, goal=g.goal) for g in change.goals],
            profiles=[SeatProfile.of(p) for p in change.profiles],
        )
