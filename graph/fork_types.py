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

    @classmethod
    def of(cls, change: models.ForkChange) -> "ForkChange":
        message = change.injection
        return cls(
            seat_models=[SeatModel(seat=s.seat, model=s.model) for s in change.seat_models],
            inject_message=ForkMessage(text=message.text, to=list(message.to)) if message else None,
            goals=[SeatGoal(seat=g.seat, goal=g.goal) for g in change.goals],
        )
