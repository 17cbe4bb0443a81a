"""What traces cost: CPU per model call with tracing off (the OpenTelemetry API's no-op), on
(the SDK, a batch processor, an exporter that discards what it is given), and on with message
content captured.

Run: python -m bench.bench_tracing [--calls 1000] [--episodes 60] [--turns 6] [--rounds 5]
The fake OpenAI-compatible server runs in its own process, answering at once, and Redis is an
embedded one: what this process spends is Parley's. Three measures, each the median of `rounds`:
the CPU microseconds of a turn's span and its model call's span alone (no call made: what the
code of tracing costs, free of the noise of the rest), a model call through the model registry
(its span, and the call), and a model call over whole episodes played by a worker in this process
(every span of the episode: start, attempt, turns, model calls, judge and writes, over the
calls it made).
"""

import os
import statistics
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from bench.common import bench_redis, run_main
from bench.support.fake_llm import fake_llm_process
from bench.support.simulation import make_world, queue_episode
from parley.core import tracing
from parley.engine.llm import ChatRequest, ModelRegistry
from parley.engine.stats import GenerationStats
from parley.lifecycle.follow import EventHub
from parley.lifecycle.services import Services
from parley.lifecycle.worker import Worker, WorkerConfig
from parley.storage.embedded import free_port
from parley.storage.episode_store import EpisodeStore
from parley.storage.events_log import EventsLog
from parley.storage.jobs import JobQueue

REQUEST = ChatRequest(messages=[{"role": "user", "content": "Hello there. " * 20}], max_tokens=64)
SETTINGS = ("off", "on", "on, content captured")


class Discarding(SpanExporter):
    """Takes every batch and keeps nothing: the cost of spans without a collector's."""

    def __init__(self) -> None:
        self.spans = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans += len(spans)
        return SpanExportResult.SUCCESS


@contextmanager
def setting(label: str) -> Iterator[Callable[[], int]]:
    """Parley's spans as `label` says; yields how many spans were exported so far."""
    if label == "off":
        tracing.use(None)  # no provider is set in this process: the API's no-op
        yield lambda: 0
        return
    exporter = Discarding()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    tracing.use(provider)
    captured = label.endswith("captured")
    previous = os.environ.pop(tracing.CAPTURE, None)
    if captured:
        os.environ[tracing.CAPTURE] = "true"
    try:
        yield lambda: exporter.spans
    finally:
        provider.force_flush()
        tracing.use(None)
        provider.shutdown()
        os.environ.pop(tracing.CAPTURE, None)
        if previous is not None:
            os.environ[tracing.CAPTURE] = previous


BODY = {"model": "fake", "messages": REQUEST.messages, "max_tokens": 64, "temperature": 0.7}
ANSWER = {"id": "chatcmpl-1", "model": "fake", "choices": [{"finish_reason": "stop"}]}


def spans_alone(count: int) -> float:
    """CPU microseconds of the spans of one turn's model call, without the call: the turn's span
    and, where a provider takes spans, the call's, as the engine and the registry make them."""
    began = time.process_time()
    for _ in range(count):
        with tracing.turn(3, 1, "Ava"):
            if not tracing.enabled():
                continue
            about = {"parley.call.purpose": "turn", "parley.agent.seat": 1}
            with tracing.chat(
                "openai_compatible", "fake", "http://127.0.0.1:8000/v1", attributes=about
            ) as call:
                call.ended(
                    body=BODY,
                    response=ANSWER,
                    input_tokens=70,
                    output_tokens=12,
                    estimated=False,
                    requests=1,
                    latency_ms=50.0,
                    answer='{"action_type": "speak", "argument": "Hello."}',
                    error_type=None,
                )
    return (time.process_time() - began) / count * 1e6


async def registry_calls(registry: ModelRegistry, model: str, calls: int) -> float:
    """CPU microseconds a call, `calls` calls one after another."""
    began = time.process_time()
    for _ in range(calls):
        await registry.complete(model, REQUEST, GenerationStats())
    return (time.process_time() - began) / calls * 1e6


async def play_episodes(
    services: Services, model: str, count: int, turns: int
) -> tuple[float, int]:
    """CPU microseconds a model call over `count` episodes a worker plays here, and the calls."""
    scenario, agents = await make_world(f"bench{uuid.uuid4().hex[:8]}")
    began = time.process_time()
    for _ in range(count):
        await queue_episode(services, scenario, agents, model, max_turns=turns)
    worker = Worker(services, WorkerConfig(consumer=f"bench-{uuid.uuid4().hex[:6]}"))
    await worker.run(burst=True)
    cpu = time.process_time() - began
    calls = count * (turns + len(agents))  # a call a turn, and the judge's one per agent
    return cpu / calls * 1e6, calls


async def main(calls: int = 1000, episodes: int = 60, turns: int = 6, rounds: int = 5) -> None:
    with fake_llm_process(free_port()) as (base, _):
        model = f"custom/fake@{base}"
        async with bench_redis() as (_, scratch, client):
            registry = ModelRegistry(None, Path(scratch))
            services = Services(
                client,
                EpisodeStore(client),
                JobQueue(client),
                EventHub(client),
                EventsLog(client),
                registry,
            )
            await services.jobs.ensure_group()
            await registry_calls(registry, model, 100)  # warm the connection
            await play_episodes(services, model, 2, turns)
            alone: dict[str, list[float]] = {label: [] for label in SETTINGS}
            per_call: dict[str, list[float]] = {label: [] for label in SETTINGS}
            per_episode_call: dict[str, list[float]] = {label: [] for label in SETTINGS}
            exported: dict[str, int] = {}
            made = 0
            for _ in range(rounds):
                for label in SETTINGS:
                    with setting(label) as spans:
                        alone[label].append(spans_alone(calls * 10))
                        per_call[label].append(await registry_calls(registry, model, calls))
                        cost, made = await play_episodes(services, model, episodes, turns)
                        per_episode_call[label].append(cost)
                    exported[label] = spans()  # flushed as the setting ended
            await registry.aclose()
    print(f"{calls} calls one after another; {episodes} episodes of {turns} turns, 2 agents")
    print(f"({made} model calls), median (least-most) of {rounds} rounds; CPU of this process")
    columns = ("µs a call (spans alone)", "µs a call (registry)", "µs a call (episodes)")
    print(f"{'':22}" + "".join(f"{c:>26}" for c in columns))
    for label in SETTINGS:
        found = (alone[label], per_call[label], per_episode_call[label])
        print(f"{label:22}" + "".join(f"{spread(f):>26}" for f in found))
    print(f"spans exported in the last round, on: {exported['on']}")


def spread(values: list[float]) -> str:
    """The median, and the least and most."""
    return f"{statistics.median(values):.0f} ({min(values):.0f}-{max(values):.0f})"


if __name__ == "__main__":
    run_main(main, __doc__)
