"""Subscriptions: thin wrappers over the lifecycle's streams (lifecycle/follow.py)."""

from collections.abc import AsyncGenerator, AsyncIterator

import strawberry

from graph.context import Info
from graph.episode_types import EpisodeEvent
from graph.errors import UserInputError
from lifecycle.follow import UnknownEpisode, everything, follow, follow_tag, statuses_only
from lifecycle.transitions import EpisodeEvent as Event
from resolvers.records import storable


async def wrapped(events: AsyncIterator[Event], episode_id: str) -> AsyncGenerator[EpisodeEvent]:
    try:
        async for event in events:
            yield EpisodeEvent(event=event)
    except UnknownEpisode:
        raise UserInputError(f"no episode with id {episode_id!r}") from None


@strawberry.type(description="Live updates over websockets (graphql-transport-ws or graphql-ws).")
class Subscription:
    @strawberry.subscription(
        description="An episode's status: a SNAPSHOT, then each STATUS change; ends when it ends."
    )
    async def episode_status(self, info: Info, id: strawberry.ID) -> AsyncGenerator[EpisodeEvent]:
        if not storable(id):
            raise UserInputError(f"no episode with id {id!r}")
        async for item in wrapped(follow(info.context.services.hub, id, statuses_only), id):
            yield item

    @strawberry.subscription(
        description="An episode's status changes and turns as they happen; ends when it ends."
    )
    async def episode_events(self, info: Info, id: strawberry.ID) -> AsyncGenerator[EpisodeEvent]:
        if not storable(id):
            raise UserInputError(f"no episode with id {id!r}")
        async for item in wrapped(follow(info.context.services.hub, id, everything), id):
            yield item

    @strawberry.subscription(
        description="Status changes of every episode with this tag (all episodes when omitted): "
        "a SNAPSHOT of each unfinished one, then each STATUS change. Never ends by itself."
    )
    async def episode_updates(
        self, info: Info, tag: str | None = None
    ) -> AsyncGenerator[EpisodeEvent]:
        async for event in follow_tag(info.context.services.hub, tag):
            yield EpisodeEvent(event=event)
