"""GraphQL types of people in the loop: seat tokens, waiting turns, environment messages, and an
episode as one agent saw it (resolvers/perspective.py)."""

from datetime import UTC, datetime

import strawberry

from parley.graph.enums import ActionType, RelationshipType
from parley.graph.fields import copies, shows, stored
from parley.resolvers import perspective
from parley.storage import models


def moment(seconds: float) -> datetime:
    """A stored time (seconds since the epoch) as GraphQL's DateTime."""
    return datetime.fromtimestamp(seconds, UTC)


@strawberry.type(description="A score on one evaluation dimension.")
class DimensionScore:
    dimension: str = strawberry.field(description="Dimension name.")
    score: float = strawberry.field(description="The judge's score.")


def dimension_scores(detail: dict[str, float]) -> list[DimensionScore]:
    """A reward's dimensions (Sotopia's `overall_score` is its overall, not one of them)."""
    return [DimensionScore(dimension=k, score=v) for k, v in detail.items() if k != "overall_score"]


@strawberry.type(description="The scores an evaluation dimension allows.")
class DimensionRange:
    dimension: str = strawberry.field(description="Dimension name.")
    low: int = strawberry.field(description="Lowest allowed score.")
    high: int = strawberry.field(description="Highest allowed score.")


@strawberry.type(description="The judge's scores of one agent.")
class SeatScore:
    overall: float = strawberry.field(description="The overall score.")
    dimensions: list[DimensionScore] = strawberry.field(description="Each dimension's score.")
    ranges: list[DimensionRange] = strawberry.field(
        description="Each dimension's range: the episode's dimension list's, or Sotopia's seven's."
    )


@strawberry.type(description="A human seat's secret, shown once: send it as `seatToken`.")
class SeatToken:
    seat: int = strawberry.field(description="The seat (0-based, in agent order).")
    token: str = strawberry.field(description="The secret that lets its holder act for the seat.")


@strawberry.type(description="Whose turn a WAITING episode waits for, and until when.")
class Waiting:
    turn: int = strawberry.field(description="The turn awaited.")
    seats: list[int] = strawberry.field(description="The human seats that still have to act.")
    deadline: datetime = strawberry.field(
        description="Then the episode's onSeatTimeout policy acts for them."
    )

    @classmethod
    def of(cls, waiting: models.Waiting) -> "Waiting":
        return cls(turn=waiting.turn, seats=waiting.seats, deadline=moment(waiting.deadline))


@strawberry.type(description="A human seat of an episode.")
class HumanSeat:
    seat: int = strawberry.field(description="The seat (0-based, in agent order).")
    claimed: bool = strawberry.field(description="False while it is open to claimSeat.")


@strawberry.type(description="A message from the environment, added with injectEvent.")
class EnvironmentMessage:
    sequence: int = strawberry.field(description="Its event sequence number.")
    turn: int | None = strawberry.field(
        description="The turn from which the agents see it; null until a turn delivers it."
    )
    text: str = strawberry.field(description="The message.")
    to: list[str] = strawberry.field(description="The agents it is for; empty means everyone.")
    at: datetime = strawberry.field(description="When it was added.")

    @classmethod
    def of(cls, injection: models.StoredInjection) -> "EnvironmentMessage":
        return cls(
            sequence=injection.sequence,
            turn=injection.turn,
            text=injection.text,
            to=list(injection.to),
            at=moment(injection.at),
        )


@strawberry.type(description="It is this seat's turn: what it may do, and until when.")
class YourTurn:
    turn: int = strawberry.field(description="The turn to play.")
    deadline: datetime = strawberry.field(description="When the timeout policy acts instead.")
    action_types: list[ActionType] = strawberry.field(description="The actions allowed.")

    @classmethod
    def of(cls, turn: perspective.YourTurn) -> "YourTurn":
        return cls(turn=turn.turn, deadline=moment(turn.deadline), action_types=turn.action_types)


@strawberry.type(description="A partner as this agent knows them.")
class PerspectivePartner:
    seat: int = strawberry.field(description="The partner's seat.")
    name: str = strawberry.field(description="The partner's name.")
    relationship: RelationshipType = strawberry.field(description="How well they know each other.")
    profile: str = strawberry.field(
        description="What the relationship lets this agent know of them (empty for a stranger)."
    )


@strawberry.type(description="A turn or an environment message this agent saw.")
class SeenItem:
    sequence: int = strawberry.field(description="Its event sequence number.")
    turn: int | None = strawberry.field(description="The turn it belongs to.")
    speaker: str = strawberry.field(description="Who acted, or Environment.")
    text: str = strawberry.field(description="What the agent was told, in Sotopia's words.")
    action_type: ActionType | None = strawberry.field(description="Null for the environment.")
    argument: str = strawberry.field(description="The action's argument.")
    to: list[str] = strawberry.field(description="Private recipients; empty when public.")


@strawberry.type(description="An episode as one agent saw it: never what it could not see.")
@shows(perspective.View, held_as="view")
class Perspective:
    view: strawberry.Private[perspective.View]

    seat = stored("The agent's seat.")
    agent_name = stored("The agent's name.", source="name")
    profile = stored("Its own profile as it was told it, its secret included.")
    secret = stored("Its own secret.")
    goal = stored(
        "Its goal, with the hints meant for it kept in Sotopia's tags "
        "(<extra_info>, <clarification_hint>, <strategy_hint>) for a page to label them."
    )
    background = stored("The whole background it was given.")

    partners = stored("Its partners, as their relationships show them.", copies(PerspectivePartner))
    seen = stored(
        "What it saw, in order: public turns, its private ones, and the environment's messages "
        "to it.",
        copies(SeenItem),
    )

    @strawberry.field(
        description="The judge's scores of this agent, once COMPLETED (only its own: the "
        "judge's reasoning speaks of every agent's goal and secret)."
    )
    def score(self) -> SeatScore | None:
        reward = self.view.reward
        if reward is None:
            return None
        overall, detail = reward
        ranges = [
            DimensionRange(dimension=k, low=lo, high=hi) for k, (lo, hi) in self.view.ranges.items()
        ]
        return SeatScore(overall=overall, dimensions=dimension_scores(detail), ranges=ranges)

    @strawberry.field(description="Set while the episode waits for this seat.")
    def your_turn(self) -> YourTurn | None:
        return YourTurn.of(self.view.your_turn) if self.view.your_turn else None
