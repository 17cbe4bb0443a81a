"""Traces (OpenTelemetry): an episode is one trace, from the start that queued it to its last
write, across the API's and the workers' processes.

Off unless the standard OTEL_* variables ask for an exporter (`configure`, called as `parley
serve` and `parley worker` start): until then every span here is the OpenTelemetry API's no-op
one. The span that queues an episode (`new_traces`) is the root of its trace; its W3C traceparent
is stored on the episode, so every attempt at it (`attempt`: in any process, on any machine,
after a crash) continues the same trace. Within an attempt: a span per turn an agent plays
(`turn`), per model call (`chat`, after the GenAI semantic conventions), per judge run (`judge`)
and per write of the episode (`stored`).

No message content is recorded unless OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT asks
for it; exceptions are recorded by their type alone, since their messages may quote an answer.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter

log = logging.getLogger(__name__)

NAME = "parley"
SERVICE = "parley"
"""The service name when OTEL_SERVICE_NAME (or OTEL_RESOURCE_ATTRIBUTES) gives none."""
CAPTURE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
CAPTURING = {"true", "span_only", "span_and_event"}
"""The values of CAPTURE that record messages on the model call spans: the boolean of the first
GenAI instrumentations and the span modes of the later ones."""
ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
PROTOCOLS = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL")

_W3C = TraceContextTextMapPropagator()
_global_tracer = trace.get_tracer(NAME)
"""A proxy: it follows the global provider once one is set (by `configure`, or by
`opentelemetry-instrument`)."""
_tracer: trace.Tracer | None = None
"""The tracer of the provider `use` gave, if any."""


def _exporters() -> list[str]:
    """The span exporters the environment asks for: those OTEL_TRACES_EXPORTER names, or OTLP
    when only an OTLP endpoint is set; none otherwise (the SDK's own default, OTLP to
    localhost, is not taken: tracing is off until asked for)."""
    environ = os.environ
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return []
    named = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if named:
        return [n for n in (part.strip() for part in named.split(",")) if n and n != "none"]
    return ["otlp"] if any(environ.get(name, "").strip() for name in ENDPOINTS) else []


def provider_for(command: str) -> trace.TracerProvider | None:
    """A TracerProvider exporting in batches to what the OTEL_* variables ask for
    (`_exporters`), its resource naming the `command` run, or None when they ask for nothing,
    or when the SDK is not installed (said in one warning)."""
    names = _exporters()
    if not names:
        return None
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
    except ImportError:
        log.warning(
            "OTEL_* settings ask for traces, but the OpenTelemetry SDK is not installed: "
            "install parley[tracing] to export them; running without"
        )
        return None
    exporters: list[SpanExporter] = []
    for name in names:
        if name == "otlp":
            exporters += _otlp()
        elif name == "console":
            exporters.append(ConsoleSpanExporter())
        else:
            log.warning("OTEL_TRACES_EXPORTER names %r, which Parley does not ship: ignored", name)
    if not exporters:
        return None
    resource = Resource.create({"parley.command": command})
    if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": SERVICE}))
    provider = TracerProvider(resource=resource)
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def _otlp() -> list[SpanExporter]:
    """The OTLP/HTTP (protobuf) exporter, which reads its endpoint, headers and timeout from the
    standard variables itself (none, said in a warning, when it is not installed)."""
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        log.warning("the OTLP exporter is not installed: install parley[tracing] to send traces")
        return []

    protocol = next((os.environ[p] for p in PROTOCOLS if os.environ.get(p)), "http/protobuf")
    if protocol.strip().lower() != "http/protobuf":
        log.warning(
            "OTLP protocol %r asked for, but Parley exports traces over http/protobuf only "
            "(a collector's port 4318)",
            protocol,
        )
    return [OTLPSpanExporter()]


def configure(command: str) -> bool:
    """Export this process's spans as the OTEL_* variables ask (`provider_for`), by setting
    the global provider; True when that is on. Called once, as a process starts. A provider
    set already (`opentelemetry-instrument parley ...`) is left as it is, and takes the spans."""
    if enabled():
        log.info("a tracer provider is set already: Parley's spans go to it")
        return True
    provider = provider_for(command)
    if provider is None:
        return False
    trace.set_tracer_provider(provider)
    log.info("exporting traces (%s)", ", ".join(_exporters()))
    return True


def use(provider: trace.TracerProvider | None) -> None:
    """Send Parley's spans to `provider` rather than the global one (None: the global one
    again), for an application that embeds Parley with a provider of its own, or a test."""
    global _tracer
    _tracer = None if provider is None else provider.get_tracer(NAME)


def _current_tracer() -> trace.Tracer:
    return _tracer or _global_tracer


def enabled() -> bool:
    """Whether spans may be recorded at all: a provider is set (not the API's no-op default)."""
    return _tracer is not None or not isinstance(
        trace.get_tracer_provider(), trace.ProxyTracerProvider
    )


def capturing() -> bool:
    """Whether message content is to be recorded on model call spans."""
    return os.environ.get(CAPTURE, "").strip().lower() in CAPTURING


@contextlib.contextmanager
def _span(
    name: str,
    kind: SpanKind = SpanKind.INTERNAL,
    attributes: Mapping[str, Any] | None = None,
    context: Context | None = None,
    links: Sequence[Link] = (),
) -> Iterator[Span]:
    """A span current for the block; an exception marks it failed by its type alone. Without
    a provider, the no-op span, and nothing else done."""
    if not enabled():
        yield trace.INVALID_SPAN
        return
    span = _current_tracer().start_span(
        name, context=context, kind=kind, attributes=_attributes(attributes), links=links
    )
    with trace.use_span(
        span, end_on_exit=True, record_exception=False, set_status_on_exception=False
    ):
        try:
            yield span
        except Exception as exc:
            failed(span, type(exc).__qualname__)
            raise


def _attributes(attributes: Mapping[str, Any] | None) -> dict[str, Any]:
    """The attributes that have a value (OpenTelemetry takes no None)."""
    return {k: v for k, v in (attributes or {}).items() if v is not None}


def failed(span: Span, error_type: str) -> None:
    """Mark a span failed with `error_type` (kept when one was set already)."""
    if not span.is_recording():
        return
    if not getattr(span, "attributes", {}).get("error.type"):
        span.set_attribute("error.type", error_type)
    span.set_status(Status(StatusCode.ERROR, error_type))


def traceparent(span: Span) -> str:
    """The W3C traceparent of a span ("" for none: a no-op span)."""
    carrier: dict[str, str] = {}
    _W3C.inject(carrier, trace.set_span_in_context(span))
    return carrier.get("traceparent", "")


def _parent(stored: str) -> Context:
    """The context a stored traceparent names (an empty one, so a new trace, for none)."""
    return _W3C.extract({"traceparent": stored}) if stored else Context()


@contextlib.contextmanager
def new_traces(
    name: str,
    episode_ids: Sequence[str],
    attributes: Mapping[str, Any] | None = None,
    linked: str = "",
) -> Iterator[list[str]]:
    """A new trace for each episode queued in the block: a root span each, linked to the
    caller's span if there is one and to the trace of the traceparent `linked` (a fork's
    parent's); yields their traceparents, to be stored on the episodes ("" without a
    provider)."""
    if not enabled():
        yield [""] * len(episode_ids)
        return
    caller = trace.get_current_span().get_span_context()
    other = trace.get_current_span(_parent(linked)).get_span_context()
    links = [Link(found) for found in (caller, other) if found.is_valid]
    spans = [
        _current_tracer().start_span(
            name,
            context=Context(),
            kind=SpanKind.PRODUCER,
            attributes=_attributes(
                {
                    "parley.episode.id": episode_id,
                    "parley.start.batch_size": len(episode_ids),
                    **(attributes or {}),
                }
            ),
            links=links,
        )
        for episode_id in episode_ids
    ]
    try:
        yield [traceparent(span) for span in spans]
    except Exception as exc:
        for span in spans:
            failed(span, type(exc).__qualname__)
        raise
    finally:
        for span in spans:
            span.end()


@contextlib.contextmanager
def attempt(
    stored: str, episode_id: str, number: int, mode: str, reason: str | None, worker: str
) -> Iterator[Span]:
    """A worker's attempt at an episode, continuing the trace whose traceparent the episode
    stored (a new trace when it stored none)."""
    attributes = {
        "parley.episode.id": episode_id,
        "parley.attempt.number": number,
        "parley.attempt.mode": mode,
        "parley.attempt.reason": reason,
        "parley.worker": worker,
    }
    with _span("parley.attempt", SpanKind.CONSUMER, attributes, _parent(stored)) as span:
        yield span


@contextlib.contextmanager
def turn(number: int, seat: int, agent: str) -> Iterator[Span]:
    """One agent's action in one turn (its model calls are its children)."""
    attributes = {
        "parley.turn.number": number,
        "parley.agent.seat": seat,
        "parley.agent.name": agent,
    }
    with _span("parley.turn", attributes=attributes) as span:
        yield span


@contextlib.contextmanager
def judge(model: str, repeat: int) -> Iterator[Span]:
    """One judge run of an episode's panel (its model calls are its children)."""
    attributes = {"parley.judge.model": model, "parley.judge.repeat": repeat}
    with _span("parley.judge", attributes=attributes) as span:
        yield span


@contextlib.contextmanager
def stored(
    script: str,
    episode_id: str,
    attempt: int | None = None,
    status: str | None = None,
    turn: int | None = None,
) -> Iterator[None]:
    """A write of an episode (one Lua script), as a span where it is part of a recorded trace
    (an attempt's); elsewhere (a cancel from the API, say) nothing. `attempt` is the fence the
    write carries: the writer's attempt, or for a move to RUNNING the one it takes over from."""
    if not trace.get_current_span().is_recording():
        yield
        return
    named = {
        "db.system.name": "redis",
        "db.operation.name": "EVALSHA",
        "db.stored_procedure.name": script,
        "parley.episode.id": episode_id,
        "parley.attempt.fence": attempt,
        "parley.episode.status": status,
        "parley.turn.number": turn,
    }
    with _span(f"parley.store.{script}", SpanKind.CLIENT, named):
        yield


class ChatCall:
    """The span of one model call, told how it went (`ended`)."""

    def __init__(self, span: Span) -> None:
        self.span = span

    def ended(
        self,
        *,
        body: Mapping[str, Any] | None,
        response: Mapping[str, Any] | None,
        input_tokens: int,
        output_tokens: int,
        estimated: bool,
        requests: int,
        latency_ms: float,
        answer: str | None,
        error_type: str | None,
    ) -> None:
        """Record the request `body` as last sent, the `response` (None: none came), its token
        counts (`estimated` when the provider sent none), how many requests the call made and
        how long the last took (the span also holds the waits for a place before it), the
        error class of a failure, and, when content is captured, the messages and answer."""
        span = self.span
        if not span.is_recording():
            return
        found: dict[str, Any] = {
            "parley.call.requests": requests,
            "parley.call.latency_ms": round(latency_ms, 3) if requests else None,
        }
        if body is not None:
            found["gen_ai.request.max_tokens"] = body.get("max_tokens") or body.get(
                "max_completion_tokens"
            )
            found["gen_ai.request.temperature"] = body.get("temperature")
            stop = body.get("stop")
            found["gen_ai.request.stop_sequences"] = list(stop) if stop else None
        if response is not None:
            choices = response.get("choices") or []
            finish = [str(c.get("finish_reason")) for c in choices if isinstance(c, dict)]
            found |= {
                "gen_ai.response.model": response.get("model"),
                "gen_ai.response.id": response.get("id"),
                "gen_ai.response.finish_reasons": finish or None,
                "gen_ai.usage.input_tokens": input_tokens,
                "gen_ai.usage.output_tokens": output_tokens,
                "parley.usage.estimated": estimated or None,
            }
        if capturing() and body is not None:
            found["gen_ai.input.messages"] = input_messages(body.get("messages") or [])
            if answer is not None:
                finish_reason = (found.get("gen_ai.response.finish_reasons") or ["stop"])[0]
                found["gen_ai.output.messages"] = output_messages(answer, finish_reason)
        span.set_attributes(_attributes(found))
        if error_type is not None:
            failed(span, error_type)


def input_messages(messages: Sequence[Mapping[str, str]]) -> str:
    """Chat messages as `gen_ai.input.messages` (its JSON schema, as a JSON string on spans)."""
    return json.dumps(
        [
            {"role": m.get("role", "user"), "parts": [{"type": "text", "content": m["content"]}]}
            for m in messages
        ],
        ensure_ascii=False,
    )


def output_messages(answer: str, finish_reason: str) -> str:
    """An answer as `gen_ai.output.messages`."""
    message = {
        "role": "assistant",
        "parts": [{"type": "text", "content": answer}],
        "finish_reason": finish_reason,
    }
    return json.dumps([message], ensure_ascii=False)


@contextlib.contextmanager
def chat(
    provider: str,
    model: str,
    base_url: str | None = None,
    *,
    json_output: bool = False,
    attributes: Mapping[str, Any] | None = None,
) -> Iterator[ChatCall]:
    """A model call as the GenAI semantic conventions' inference span, `chat {model}`, with
    Parley's `attributes` (what the call was for)."""
    address = urlsplit(base_url) if base_url else None
    port = None
    if address is not None and address.hostname:
        port = address.port or (443 if address.scheme == "https" else 80)
    named = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.request.model": model,
        "gen_ai.output.type": "json" if json_output else "text",
        "server.address": address.hostname if address else None,
        "server.port": port,
        **(attributes or {}),
    }
    with _span(f"chat {model}", SpanKind.CLIENT, named) as span:
        yield ChatCall(span)
