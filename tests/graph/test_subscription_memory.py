"""A subscription's per-event execution keeps nothing once the event is delivered."""

import tracemalloc
from collections.abc import AsyncGenerator

import strawberry

from graph.schema import EventScopedExecutor


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
