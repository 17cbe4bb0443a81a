"""A subscription's per-event execution keeps nothing once the event is delivered."""

import tracemalloc
from collections.abc import AsyncGenerator

import strawberry

from parley.graph.execution import EventScopedExecutor
from parley.graph.fanout import Fanout, Subscribe


@strawberry.type
class Tick:
    number: int
    label: str


@strawberry.type
class Query:
    ready: bool = True


@strawberry.type
class Subscription:
    @strawberry.subscription
    async def ticks(self, count: int) -> AsyncGenerator[Tick]:
        for number in range(count):
            yield Tick(number=number, label="tick")


async def test_events_do_not_accumulate_in_the_executor() -> None:
    schema = strawberry.Schema(
        query=Query, subscription=Subscription, execution_context_class=EventScopedExecutor
    )
    stream = await schema.subscribe("subscription { ticks(count: 6000) { number label } }")
    assert not isinstance(stream, strawberry.types.ExecutionResult)
    tracemalloc.start()
    try:
        seen = 0
        async for result in stream:
            assert result.errors is None
            seen += 1
            if seen == 1000:
                start = tracemalloc.get_traced_memory()[0]
        held = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert seen == 6000
    # graphql-core's shared cache held about 1 KiB per event here; allow a little noise.
    assert held / 5000 < 100, f"{held / 5000:.0f} bytes held per event"


async def test_a_shared_group_keeps_only_its_recent_events() -> None:
    """graph/fanout.py's group lives as long as its subscribers: it holds a few recent payloads,
    nothing per event delivered."""
    schema = strawberry.Schema(
        query=Query, subscription=Subscription, execution_context_class=EventScopedExecutor
    )
    fanout = Fanout(schema, [], 5_000, identity=lambda item: item, content=repr, client_errors=list)
    held: list[int] = []

    async def send(text: str) -> None:
        held.append(tracemalloc.get_traced_memory()[0])

    request = Subscribe("1", "subscription { ticks(count: 6000) { number label } }")
    tracemalloc.start()
    try:
        assert await fanout.serve(request, None, lambda: None, send)
    finally:
        tracemalloc.stop()
    assert len(held) == 6000 and fanout.executions == 6000
    grown = held[-1] - held[999] - 5000 * 8  # less the list of readings itself
    assert grown / 5000 < 100, f"{grown / 5000:.0f} bytes held per event"
