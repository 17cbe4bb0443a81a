"""Subscriptions: thin wrappers over the lifecycle's streams (lifecycle/follow.py).

Every event carries a cursor: its sequence number in episodeStatus and episodeEvents streams, its
events-log id in episodeUpdates streams. Passing the last one seen as `after` resumes a stream.
"""

import re
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Annotated

import redis.asyncio as redis
import strawberry

from parley.graph.context import Info
from parley.graph.episode_types import EpisodeEvent
from parley.graph.errors import UserInputError
from parley.graph.experiments import ExperimentSubscription
from parley.lifecycle.follow import UnknownEpisode, everything, follow, follow_tag, statuses_only
from parley.lifecycle.seats import holds_seat
from parley.resolvers.agents import agent_names
from parley.resolvers.perspective import sees_injection, sees_turn
from parley.storage.events import EpisodeEvent as Event
from parley.storage.events_log import log_position
from parley.storage.models import EpisodeLog
from parley.storage.records import get_or_none, storable

SEQUENCE = re.compile("[0-9]{1,18}")
"""An event's sequence number, as a cursor: digits 0-9 only (`int` takes others too)."""
AFTER_SEQUENCE = "Resume after this cursor (an event's `cursor`): no snapshot, every later event."
AS_SEAT = (
    "Only what the agent in this human seat sees (with its seatToken): status changes, public "
    "turns, its private ones and the environment's messages to it, and yourTurn."
)
AFTER_LOG = (
    "Resume after this cursor (an event's `cursor`): every status change since, terminal ones "
    "included, or CURSOR_EXPIRED and snapshots when it is older than the events kept."
)


async def wrapped(
    events: AsyncIterator[Event], cursor: Callable[[Event], str], episode_id: str = ""
) -> AsyncGenerator[EpisodeEvent]:
    try:
        async for event in events:
            yield EpisodeEvent(event=event, cursor=cursor(event))
    except UnknownEpisode:
        raise UserInputError(f"no episode with id {episode_id!r}") from None


def shared_event(item: object) -> object | None:
    """What streams share of an item they yield: the event hub's one object for a live event
    (graph/fanout.py executes a selection once per such object)."""
    return item.event if isinstance(item, EpisodeEvent) else None


def event_content(item: object) -> tuple[str, str]:
    """What a stream item shows: its cursor and its event less what no field reads (the live
    event carries its events-log id and the re-read one its tag, graph/fanout.py)."""
    assert isinstance(item, EpisodeEvent)
    return item.cursor, item.event.model_dump_json(exclude={"log_id", "tag"})


def by_sequence(event: Event) -> str:
    return str(event.sequence)


def by_log_id(event: Event) -> str:
    return event.log_id or ""


def sequence_cursor(after: str | None) -> int | None:
    if after is None:
        return None
    if not SEQUENCE.fullmatch(after):
        raise UserInputError(f"malformed cursor {after!r}: an event's cursor, like '12'")
    return int(after)


def log_cursor(after: str | None) -> str | None:
    if after is None:
        return None
    try:
        log_position(after)
    except ValueError:
        raise UserInputError(f"malformed cursor {after!r}: an event's cursor") from None
    return after


def one_episode(
    info: Info, id: strawberry.ID, wanted: Callable[[Event], bool], after: str | None
) -> AsyncGenerator[EpisodeEvent]:
    """The events of one episode that `wanted` keeps, resuming after a sequence cursor."""
    pk = episode_id(id)
    stream = follow(info.context.services.hub, pk, wanted, sequence_cursor(after))
    return wrapped(stream, by_sequence, pk)


def seen_by(seat: int, name: str) -> Callable[[Event], bool]:
    """The events the agent in `seat` sees: every status change, the turns and environment
    messages it may see (resolvers/perspective.py)."""

    def keep(event: Event) -> bool:
        if event.turn is not None:
            return sees_turn(event.turn, seat, name)
        if event.injection is not None:
            return sees_injection(event.injection, name)
        return True

    return keep


async def seat_holder(client: redis.Redis, pk: str, seat: int, token: str) -> str:
    """The name of the agent in `seat`, when `token` is that human seat's (refused alike for an
    episode or a seat that does not exist: the refusal tells nothing of them)."""
    episode = await get_or_none(EpisodeLog, pk)
    if episode is None or not holds_seat(episode, seat, token):
        raise UserInputError("wrong or missing seat token for this seat")
    names = await agent_names(client, episode.agents)
    return names[seat]


def episode_id(id: strawberry.ID) -> str:
    if not storable(id):
        raise UserInputError(f"no episode with id {id!r}")
    return str(id)


@strawberry.type(description="Live updates over websockets (graphql-transport-ws or graphql-ws).")
class Subscription(ExperimentSubscription):
    @strawberry.subscription(
        description="An episode's status: a SNAPSHOT, then each STATUS change; ends when it ends."
    )
    async def episode_status(
        self,
        info: Info,
        id: strawberry.ID,
        after: Annotated[str | None, strawberry.argument(description=AFTER_SEQUENCE)] = None,
    ) -> AsyncGenerator[EpisodeEvent]:
        async for item in one_episode(info, id, statuses_only, after):
            yield item

    @strawberry.subscription(
        description="An episode's status changes and turns as they happen; ends when it ends."
    )
    async def episode_events(
        self,
        info: Info,
        id: strawberry.ID,
        after: Annotated[str | None, strawberry.argument(description=AFTER_SEQUENCE)] = None,
        as_: Annotated[int | None, strawberry.argument(name="as", description=AS_SEAT)] = None,
        seat_token: Annotated[
            str | None, strawberry.argument(description="The token of the seat in `as`.")
        ] = None,
    ) -> AsyncGenerator[EpisodeEvent]:
        if as_ is None:
            async for item in one_episode(info, id, everything, after):
                yield item
            return
        name = await seat_holder(info.context.services.client, str(id), as_, seat_token or "")
        async for item in one_episode(info, id, seen_by(as_, name), after):
            yield EpisodeEvent(event=item.event, cursor=item.cursor, seat=as_)

    @strawberry.subscription(
        description="Status changes of every episode with this tag (all episodes when omitted): "
        "a SNAPSHOT of each unfinished one, then each STATUS change. Never ends by itself."
    )
    async def episode_updates(
        self,
        info: Info,
        tag: str | None = None,
        after: Annotated[str | None, strawberry.argument(description=AFTER_LOG)] = None,
    ) -> AsyncGenerator[EpisodeEvent]:
        services = info.context.services
        stream = follow_tag(services.hub, services.log, tag, log_cursor(after))
        async for item in wrapped(stream, by_log_id):
            yield item
