"""GraphQL type of an experiment's intervention arm against its control
(lifecycle/experiment_arms.py)."""

import strawberry

from parley.engine.types import Injection
from parley.graph.fields import shows, stored
from parley.graph.fork_types import ForkChange
from parley.graph.results import PairedDifference
from parley.lifecycle.experiment_arms import ArmResult
from parley.resolvers.experiment_design import Arm
from parley.storage import models


@strawberry.type(description="A control slot's episode and the arm's fork of it.")
class ArmPair:
    control: strawberry.ID = strawberry.field(description="The control slot's episode.")
    arm: strawberry.ID = strawberry.field(description="The arm's fork of it.")


@strawberry.type(description="An intervention arm compared with the control, slot by slot.")
@shows(ArmResult, held_as="result")
class ExperimentArm:
    result: strawberry.Private[ArmResult]

    @strawberry.field(description="The arm's name.")
    def name(self) -> str:
        return self.result.arm.name

    @strawberry.field(description="The first turn played with the change.")
    def at_turn(self) -> int:
        return self.result.arm.at_turn

    @strawberry.field(description="What the arm changes from that turn on.")
    def change(self) -> ForkChange:
        return ForkChange.of(arm_change(self.result.arm))

    pairs = stored("Arm slots whose arm and control episodes both completed with scores.")
    not_reached = stored(
        "Arm slots whose control ended before the arm's turn: never forked (at another turn "
        "the two would not be comparable)."
    )
    unfinished = stored("Arm slots with no ended episode yet.")
    unpaired = stored(
        "Arm slots that ended otherwise: failed, cancelled, or arm or control without scores."
    )

    @strawberry.field(
        description="The control and arm episodes of the first slot paired (both completed "
        "with scores), to compare turn by turn; null before any is."
    )
    def first_pair(self) -> "ArmPair | None":
        pair = self.result.first_pair
        if pair is None:
            return None
        return ArmPair(control=strawberry.ID(pair[0]), arm=strawberry.ID(pair[1]))

    @strawberry.field(
        description="Per dimension, `overall` first: the mean of arm - control over the (slot, "
        "seat) pairs where both episodes have that score, with its 95% interval."
    )
    def differences(self) -> list[PairedDifference]:
        return [PairedDifference.of(name, p) for name, p in self.result.differences]


def arm_change(arm: Arm) -> models.ForkChange:
    return models.ForkChange(
        seat_models=[models.SeatModel(seat=c.seat, model=c.model) for c in arm.seat_models],
        injection=Injection(text=arm.inject.text, to=arm.inject.to) if arm.inject else None,
        goals=[models.SeatGoal(seat=g.seat, goal=g.goal) for g in arm.goals],
    )
