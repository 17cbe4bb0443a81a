"""GraphQL types of what an experiment will take (its estimate) and what it spent."""

import strawberry

from parley.graph.fields import shows, stored
from parley.lifecycle import estimate
from parley.lifecycle.pacing import Stop
from parley.resolvers.precision import Precision

strawberry.enum(
    Stop,
    name="ExperimentStop",
    description="Why a paced experiment queues no more episodes.",
)


@strawberry.type(description="One figure an experiment will take, with its 95% range.")
class EstimatedFigure:
    expected: float = strawberry.field(description="The expected total.")
    low: float | None = strawberry.field(
        description="The range's low end; null while no kind of slot has two recorded episodes "
        "(the spread is not known)."
    )
    high: float | None = strawberry.field(description="The range's high end; null likewise.")


def figure(found: estimate.Range | None) -> EstimatedFigure | None:
    if found is None:
        return None
    return EstimatedFigure(expected=found.expected, low=found.low, high=found.high)


@strawberry.type(
    description="What an experiment's slots will take: model calls, tokens and US dollars, "
    "from the recorded usage of comparable completed episodes (same scenario, models and turn "
    "limit; else the same models and turn limit in another of its scenarios)."
)
@shows(estimate.Estimate, held_as="found")
class CostEstimate:
    found: strawberry.Private[estimate.Estimate]

    episodes = stored("Slots estimated (all of the design's).")
    covered = stored(
        "Slots with comparable recorded episodes; the figures cover these alone. The others "
        "need a calibration run (`calibrateExperiment`)."
    )
    comparable = stored("Recorded episodes the estimate rests on.")

    @strawberry.field(description="Requests sent to models (retries included).")
    def calls(self) -> EstimatedFigure | None:
        return figure(self.found.calls)

    @strawberry.field(description="Prompt and completion tokens.")
    def tokens(self) -> EstimatedFigure | None:
        return figure(self.found.tokens)

    @strawberry.field(
        description="US dollars at the models file's prices now; null when a model has none."
    )
    def cost(self) -> EstimatedFigure | None:
        return figure(self.found.cost)

    @strawberry.field(
        description="The models (the judge first, then each seat's) of the slots with nothing "
        "comparable, each once."
    )
    def uncovered(self) -> list[list[str]]:
        return [list(models) for models in self.found.uncovered]


@strawberry.input(
    description="Stop queuing repeats once each compared model's overall score is known to "
    "± halfWidth at 95% (the repeats are queued one round at a time)."
)
class PrecisionInput:
    half_width: float = strawberry.field(description="The 95% interval's half-width, > 0.")
    min_scores: int | None = strawberry.field(
        default=None,
        description="Fewest scores an interval may rest on, 2..10000 (default "
        f"{Precision.model_fields['min_scores'].default}: fewer let intervals that look narrow "
        "by chance stop it early).",
    )
