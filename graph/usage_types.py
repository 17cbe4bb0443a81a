"""GraphQL types of token usage and cost: per episode, and summed over many."""

import strawberry

from parley.graph.enums import EpisodeStatus
from parley.graph.fields import shows, stored
from parley.resolvers import usage
from parley.storage import models

BIG = "A Float: sums over many episodes can pass GraphQL's 32-bit Int."


def big(count: int) -> float:
    """A sum as a Float (see BIG)."""
    return float(count)


@strawberry.type(
    description="Tokens one model spent on an episode (its agents' turns and the judge), "
    "summed over every answered call, re-asks included."
)
@shows(models.ModelUsage)
class ModelUsage:
    record: strawberry.Private[models.ModelUsage]

    model = stored("The model, as the episode names it.")
    prompt_tokens = stored("Prompt tokens.")
    completion_tokens = stored("Completion tokens.")
    estimated = stored(
        "Some calls' counts are estimates (about 4 characters a token): the provider answered "
        "without `usage`."
    )
    cost = stored(
        "US dollars, from the models file's prices per million tokens; null when it gives none "
        "for this model."
    )


@strawberry.input(description="Which episodes' usage to add up (all of them when empty).")
class UsageFilter:
    tag: str | None = strawberry.field(default=None, description="Tag (letter case ignored).")
    experiment_id: strawberry.ID | None = strawberry.field(
        default=None, description="Episodes of this experiment."
    )
    status: EpisodeStatus | None = strawberry.field(default=None, description="Current status.")


@strawberry.type(description="Tokens and cost summed over episodes, computed in Redis.")
@shows(usage.UsageTotals, held_as="totals")
class UsageTotals:
    totals: strawberry.Private[usage.UsageTotals]

    episodes = stored("Episodes matched.")
    prompt_tokens = stored(f"Prompt tokens of every model. {BIG}", big)
    completion_tokens = stored(f"Completion tokens of every model. {BIG}", big)
    estimated_tokens = stored(f"How many of the tokens are estimates. {BIG}", big)
    cost = stored("US dollars summed over the priced episodes; null when none is priced.")
    priced_episodes = stored("Episodes with a cost (every model they used has prices).")
