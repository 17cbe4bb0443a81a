"""Traces: one episode's spans, exported in memory (the SDK's InMemorySpanExporter), from the start
that queued it through the worker that ran it and the one that took it over; and, without
configuration, nothing set up at all.

The start and the worker run in this process, but nothing carries the trace between them except
what the episode stored in Redis: the start's span is never current where the worker runs.
"""

import asyncio
import json
import logging
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from bench.support.fake_llm import FakeLLM, RecordedRequest, Rule
from bench.support.simulation import make_world, queue_episode
from parley.core import tracing
from parley.engine.errors import LLMTransportError
from parley.engine.llm import ChatRequest, ModelRegistry
from parley.engine.stats import GenerationStats
from parley.lifecycle.forks import fork
from parley.lifecycle.services import Services
from parley.lifecycle.worker import Worker, running_worker
from parley.storage.models import EpisodeLog, EpisodeStatus
from tests.engine.conftest import FAST_RETRY
from tests.lifecycle.conftest import burst, worker_config

OTEL_VARIABLES = (
    "OTEL_SDK_DISABLED",
    "OTEL_TRACES_EXPORTER",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_SERVICE_NAME",
    "OTEL_RESOURCE_ATTRIBUTES",
    tracing.CAPTURE,
)


@pytest.fixture
def no_otel(monkeypatch: pytest.MonkeyPatch) -> None:
    """An environment that says nothing about OpenTelemetry."""
    for name in OTEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def exported(no_otel: None) -> Iterator[InMemorySpanExporter]:
    """Parley's spans, kept in memory as each ends."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use(provider)
    try:
        yield exporter
    finally:
        tracing.use(None)
        provider.shutdown()


async def turns_stored(pk: str) -> int:
    return len((await EpisodeLog.get(pk)).turns)


def named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    found = [s for s in exporter.get_finished_spans() if s.name == name]
    return sorted(found, key=lambda s: s.start_time or 0)


def chats(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    spans = [s for s in exporter.get_finished_spans() if s.name.startswith("chat ")]
    return sorted(spans, key=lambda s: s.start_time or 0)


def attr(span: ReadableSpan, key: str) -> Any:
    return (span.attributes or {}).get(key)


def children(exporter: InMemorySpanExporter, parent: ReadableSpan) -> list[ReadableSpan]:
    spans = exporter.get_finished_spans()
    return [s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id]


def traceparent_of(span: ReadableSpan) -> str:
    found = span.context
    return f"00-{found.trace_id:032x}-{found.span_id:016x}-{found.trace_flags:02x}"


def requested(requests: list[RecordedRequest]) -> Counter[tuple[Any, ...]]:
    """What the fake was asked and reported, one tuple a request, as a chat span says it."""
    return Counter(
        (
            r.body["max_tokens"],
            r.body["temperature"],
            (r.usage or {}).get("prompt_tokens"),
            (r.usage or {}).get("completion_tokens"),
        )
        for r in requests
    )


def spanned(spans: list[ReadableSpan]) -> Counter[tuple[Any, ...]]:
    return Counter(
        (
            attr(s, "gen_ai.request.max_tokens"),
            attr(s, "gen_ai.request.temperature"),
            attr(s, "gen_ai.usage.input_tokens"),
            attr(s, "gen_ai.usage.output_tokens"),
        )
        for s in spans
    )


async def test_an_episode_is_one_trace_of_its_turns_model_calls_judge_and_writes(
    services: Services, fake_llm: FakeLLM, exported: InMemorySpanExporter
) -> None:
    tag = f"trace{uuid.uuid4().hex[:8]}"
    scenario, agents = await make_world(tag)
    model = fake_llm.model_name()
    pk = await queue_episode(services, scenario, agents, model, max_turns=2)

    # The API's side: the start, the root of a new trace, stored on the episode.
    [start] = named(exported, "parley.start")
    assert start.parent is None and start.kind == trace.SpanKind.PRODUCER
    assert attr(start, "parley.episode.id") == pk
    assert (await EpisodeLog.get(pk)).traceparent == traceparent_of(start)
    assert trace.get_current_span() is trace.INVALID_SPAN  # nothing carried in this task

    await burst(services)
    assert (await EpisodeLog.get(pk)).status == EpisodeStatus.COMPLETED
    spans = exported.get_finished_spans()
    assert {s.context.trace_id for s in spans} == {start.context.trace_id}

    # The worker's side: its attempt continues the stored trace (a remote parent).
    [attempt] = named(exported, "parley.attempt")
    assert attempt.parent is not None and attempt.parent.is_remote
    assert attempt.parent.span_id == start.context.span_id
    assert attr(attempt, "parley.attempt.number") == 1
    assert attr(attempt, "parley.attempt.mode") == "restart"

    turns = named(exported, "parley.turn")
    assert [(attr(t, "parley.turn.number"), attr(t, "parley.agent.seat")) for t in turns] == [
        (0, 0),
        (1, 1),
    ]
    assert [attr(t, "parley.agent.name") for t in turns] == [f"Ava0 {tag}", f"Ava1 {tag}"]
    assert all(t.parent is not None and t.parent.span_id == attempt.context.span_id for t in turns)

    # A chat span per model call, under the turn or the judge that made it, with the GenAI
    # attributes and the tokens the fake reported for each request.
    actions = fake_llm.requests_of("action", mentioning=tag)
    judged = fake_llm.requests_of("judge", mentioning=tag)
    turn_calls = [c for t in turns for c in children(exported, t)]
    assert len(turn_calls) == len(actions) == 2
    [judge] = named(exported, "parley.judge")
    assert attr(judge, "parley.judge.model") == model and attr(judge, "parley.judge.repeat") == 0
    judge_calls = children(exported, judge)
    assert len(judge_calls) == len(judged) == 2  # one per agent
    assert {c.context.span_id for c in chats(exported)} == {
        c.context.span_id for c in turn_calls + judge_calls
    }
    for call in turn_calls + judge_calls:
        assert call.name == "chat fake" and call.kind == trace.SpanKind.CLIENT
        assert attr(call, "gen_ai.operation.name") == "chat"
        assert attr(call, "gen_ai.provider.name") == "openai_compatible"
        assert attr(call, "gen_ai.request.model") == "fake"
        assert attr(call, "gen_ai.response.model") == "fake"
        assert attr(call, "gen_ai.output.type") == "json"
        assert attr(call, "server.address") == "127.0.0.1"
        assert attr(call, "gen_ai.response.finish_reasons") == ("stop",)
        assert attr(call, "parley.call.requests") == 1
        assert call.status.status_code == StatusCode.UNSET
    assert spanned(turn_calls) == requested(actions)
    assert spanned(judge_calls) == requested(judged)
    assert [attr(c, "parley.call.purpose") for c in turn_calls] == ["turn", "turn"]
    assert {attr(c, "parley.judge.run") for c in judge_calls} == {f"{model}#0"}

    # The episode's writes: each turn stored, each status change, the judge's runs.
    appended = named(exported, "parley.store.append_turn")
    assert [attr(w, "parley.turn.number") for w in appended] == [0, 1]
    moves = named(exported, "parley.store.transition")
    assert [attr(w, "parley.episode.status") for w in moves] == [
        "RUNNING",
        "EVALUATING",
        "COMPLETED",
    ]
    assert named(exported, "parley.store.mark")
    for write in appended + moves:
        assert attr(write, "db.system.name") == "redis"
        assert attr(write, "parley.episode.id") == pk
    assert [attr(w, "parley.attempt.fence") for w in moves] == [0, 1, 1]  # RUNNING takes over 0

    # No message content, by default: neither the messages nor any answer.
    answers = [r.reply for r in actions + judged if r.reply]
    for span in spans:
        for key, value in (span.attributes or {}).items():
            assert key not in ("gen_ai.input.messages", "gen_ai.output.messages")
            assert not any(isinstance(value, str) and answer in value for answer in answers)


async def test_message_content_is_recorded_when_configured(
    services: Services,
    fake_llm: FakeLLM,
    exported: InMemorySpanExporter,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(tracing.CAPTURE, "true")
    tag = f"trace{uuid.uuid4().hex[:8]}"
    scenario, agents = await make_world(tag)
    await queue_episode(services, scenario, agents, fake_llm.model_name(), max_turns=1)
    await burst(services)
    [call, *_] = chats(exported)
    [request, *_] = fake_llm.requests_of("action", mentioning=tag)
    sent = json.loads(attr(call, "gen_ai.input.messages"))
    assert sent == [
        {"role": m["role"], "parts": [{"type": "text", "content": m["content"]}]}
        for m in request.body["messages"]
    ]
    answered = json.loads(attr(call, "gen_ai.output.messages"))
    assert answered == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": request.reply}],
            "finish_reason": "stop",
        }
    ]


async def test_a_resumed_attempt_continues_the_same_trace(
    services: Services, fake_llm: FakeLLM, exported: InMemorySpanExporter
) -> None:
    """The first worker stops after a turn and hands the episode back; the second resumes it
    from its stored turns: both attempts are children of the one start."""
    fake_llm.delay = 0.2
    scenario, agents = await make_world(f"trace{uuid.uuid4().hex[:8]}")
    pk = await queue_episode(services, scenario, agents, fake_llm.model_name(), max_turns=4)
    worker = Worker(services, worker_config(lease_seconds=30, consumer="leaving"))
    async with running_worker(worker), asyncio.timeout(10):
        while not await turns_stored(pk):  # noqa: ASYNC110 (a state in Redis signals nothing)
            await asyncio.sleep(0.02)
    kept = len((await EpisodeLog.get(pk)).turns)
    fake_llm.delay = 0.0
    await burst(services, lease_seconds=30)
    assert (await EpisodeLog.get(pk)).status == EpisodeStatus.COMPLETED

    [start] = named(exported, "parley.start")
    spans = exported.get_finished_spans()
    assert {s.context.trace_id for s in spans} == {start.context.trace_id}
    first, second = named(exported, "parley.attempt")
    for each in (first, second):
        assert each.parent is not None and each.parent.span_id == start.context.span_id
    assert [attr(a, "parley.worker") for a in (first, second)] == ["leaving", "alive"]
    assert attr(second, "parley.attempt.number") == 2
    assert attr(second, "parley.attempt.mode") == "resume"
    assert attr(second, "parley.attempt.reason") == "handed back by leaving when it stopped"
    assert first.status.status_code == StatusCode.UNSET  # stopped, not failed
    resumed = [s for s in children(exported, second) if s.name == "parley.turn"]
    assert [attr(t, "parley.turn.number") for t in resumed] == list(range(kept, 4))


async def test_a_fork_is_a_trace_of_its_own_linked_to_its_parents(
    services: Services, fake_llm: FakeLLM, exported: InMemorySpanExporter
) -> None:
    scenario, agents = await make_world(f"trace{uuid.uuid4().hex[:8]}")
    pk = await queue_episode(services, scenario, agents, fake_llm.model_name(), max_turns=2)
    await burst(services)
    forked = await fork(services, {"episode_id": pk, "at_turn": 1})
    assert forked.episode is not None, forked.errors
    [start] = named(exported, "parley.start")
    [branch] = named(exported, "parley.fork")
    assert branch.parent is None and branch.context.trace_id != start.context.trace_id
    assert [link.context.span_id for link in branch.links] == [start.context.span_id]
    assert attr(branch, "parley.episode.parent") == pk
    assert forked.episode.traceparent == traceparent_of(branch)


async def test_a_failed_model_call_says_why_and_how_many_requests_it_made(
    fake_llm: FakeLLM, exported: InMemorySpanExporter, tmp_path: Path
) -> None:
    fake_llm.add_rule(Rule(status=500, times=None))
    registry = ModelRegistry(None, tmp_path, retry=FAST_RETRY)
    request = ChatRequest(messages=[{"role": "user", "content": "hello"}], max_tokens=5)
    try:
        with pytest.raises(LLMTransportError):
            await registry.complete(fake_llm.model_name(), request, GenerationStats())
    finally:
        await registry.aclose()
    [call] = chats(exported)
    assert attr(call, "error.type") == "server"
    assert call.status.status_code == StatusCode.ERROR
    assert attr(call, "parley.call.requests") == FAST_RETRY.max_attempts
    assert attr(call, "gen_ai.output.type") == "text"
    assert attr(call, "gen_ai.usage.input_tokens") is None  # no answer came
    assert not call.events  # no exception event: its message may quote an answer


async def test_without_configuration_nothing_is_set_up(
    no_otel: None, services: Services, fake_llm: FakeLLM
) -> None:
    assert not tracing.configure("serve")
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    assert not tracing.enabled()
    with tracing.turn(0, 0, "Ava0") as span:
        assert not span.is_recording()
    scenario, agents = await make_world(f"trace{uuid.uuid4().hex[:8]}")
    pk = await queue_episode(services, scenario, agents, fake_llm.model_name(), max_turns=1)
    assert (await EpisodeLog.get(pk)).traceparent == ""
    await burst(services)
    assert (await EpisodeLog.get(pk)).status == EpisodeStatus.COMPLETED


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"OTEL_SERVICE_NAME": "x"},
        {"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"},
        {"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"},
    ],
)
def test_tracing_is_off_unless_an_exporter_is_asked_for(
    no_otel: None, monkeypatch: pytest.MonkeyPatch, settings: dict[str, str]
) -> None:
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    assert tracing.provider_for("serve") is None


def exporters_of(provider: trace.TracerProvider) -> list[object]:
    """What each of a provider's span processors exports to (the SDK keeps them private)."""
    processors = provider._active_span_processor._span_processors  # type: ignore[attr-defined]
    assert all(isinstance(p, BatchSpanProcessor) for p in processors)
    return [p._batch_processor._exporter for p in processors]


def test_an_otlp_endpoint_turns_on_batched_otlp_export(
    no_otel: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    provider = tracing.provider_for("worker")
    assert isinstance(provider, TracerProvider)
    try:
        [exporter] = exporters_of(provider)
        assert isinstance(exporter, OTLPSpanExporter)
        assert provider.resource.attributes["service.name"] == "parley"
        assert provider.resource.attributes["parley.command"] == "worker"
    finally:
        provider.shutdown()


def test_the_exporter_and_service_name_are_the_standard_variables(
    no_otel: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console,otlp")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "parley-eu")
    provider = tracing.provider_for("serve")
    assert isinstance(provider, TracerProvider)
    try:
        console, otlp = exporters_of(provider)
        assert isinstance(console, ConsoleSpanExporter) and isinstance(otlp, OTLPSpanExporter)
        assert provider.resource.attributes["service.name"] == "parley-eu"
    finally:
        provider.shutdown()


@pytest.mark.parametrize(
    "missing", ["opentelemetry.sdk.trace", "opentelemetry.exporter.otlp.proto.http.trace_exporter"]
)
def test_without_the_sdk_tracing_asked_for_is_a_warning(
    no_otel: None,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    missing: str,
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    monkeypatch.setitem(sys.modules, missing, None)  # as if not installed
    with caplog.at_level(logging.WARNING, logger=tracing.__name__):
        assert tracing.provider_for("serve") is None
    assert "install parley[tracing]" in caplog.text
