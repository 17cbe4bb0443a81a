"""GraphQL type of a provider key's shared limits and the allowance in use now."""

import strawberry

from parley.engine.shared_limit import LimitUsage


@strawberry.type(
    description="A provider key's limits, stated in the models file and shared by every "
    "Parley process, and how much of them is in use now."
)
class ProviderLimit:
    usage: strawberry.Private[LimitUsage]

    @strawberry.field(
        description="What the limits are counted under: the entries' limit_key, or their base "
        "URL and API key variable (never the key itself)."
    )
    def key(self) -> str:
        return self.usage.limits.key

    @strawberry.field(description="The models file entries counted under it.")
    def models(self) -> list[str]:
        return list(self.usage.models)

    @strawberry.field(description="Requests a minute it allows; null when not limited so.")
    def requests_per_minute(self) -> int | None:
        return self.usage.limits.requests_per_minute

    @strawberry.field(description="Tokens a minute it allows; null when not limited so.")
    def tokens_per_minute(self) -> int | None:
        return self.usage.limits.tokens_per_minute

    @strawberry.field(description="Requests at once it allows; null when not limited so.")
    def max_in_flight(self) -> int | None:
        return self.usage.limits.max_in_flight

    @strawberry.field(description="Requests every process sent in the current minute.")
    def requests_this_minute(self) -> int:
        return self.usage.requests_this_minute

    @strawberry.field(
        description="Tokens charged in the current minute (each request's estimate, corrected "
        "by the tokens its answer used)."
    )
    def tokens_this_minute(self) -> int:
        return self.usage.tokens_this_minute

    @strawberry.field(description="Requests every process has in flight now.")
    def in_flight(self) -> int:
        return self.usage.in_flight

    @strawberry.field(description="429 answers any process has seen (kept a day from the last).")
    def rate_limited(self) -> int:
        return self.usage.rate_limited

    @strawberry.field(description="Seconds until a 429's hold lets calls go again (0: none).")
    def held_for(self) -> float:
        return round(self.usage.held_for, 3)
