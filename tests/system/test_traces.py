"""Traces through real processes: `parley serve --no-worker` and `parley worker`, started with
nothing but the standard OTLP endpoint variable, export to a collector in this process, and one
episode's spans from both make one trace."""

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import KeyValue

from bench.support.fake_llm import FakeLLM
from bench.support.polling import eventually
from bench.support.processes import api_process, parley_env, worker_process
from bench.support.simulation import make_world, start, start_input, wait_for


class Collector:
    """An OTLP/HTTP receiver of traces: every span it is sent, with its resource's attributes."""

    def __init__(self) -> None:
        self.spans: list[tuple[dict[str, Any], Any]] = []
        self.lock = threading.Lock()
        collector = self

        class Receive(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                request = ExportTraceServiceRequest.FromString(body)
                with collector.lock:
                    for sent in request.resource_spans:
                        resource = values(sent.resource.attributes)
                        for scoped in sent.scope_spans:
                            collector.spans += [(resource, span) for span in scoped.spans]
                answer = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Receive)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"

    def received(self) -> list[tuple[dict[str, Any], Any]]:
        with self.lock:
            return list(self.spans)


def values(attributes: Any) -> dict[str, Any]:
    def value(kv: KeyValue) -> Any:
        kind = kv.value.WhichOneof("value")
        return getattr(kv.value, kind) if kind else None

    return {kv.key: value(kv) for kv in attributes}


@contextmanager
def collector() -> Iterator[Collector]:
    found = Collector()
    thread = threading.Thread(target=found.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield found
    finally:
        found.server.shutdown()
        found.server.server_close()


async def test_one_episode_is_one_trace_across_the_api_and_a_worker(
    redis_url: str, redis_client: Any, tmp_path: Path, fake_llm: FakeLLM
) -> None:
    with collector() as receiving:
        env = {
            k: v
            for k, v in parley_env(redis_url, tmp_path / "data", seed="false").items()
            if not k.startswith("OTEL_")
        }
        env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = receiving.url
        env["OTEL_BSP_SCHEDULE_DELAY"] = "100"  # milliseconds between batches
        scenario, agents = await make_world("traced")
        with (
            api_process(env, tmp_path / "api.log", "--no-worker") as api,
            worker_process(env, tmp_path / "worker.log"),
        ):
            variables = start_input(scenario, agents, fake_llm.model_name())
            episode_id = await start(api.url, variables)
            await wait_for(api.url, episode_id, lambda e: e["status"] == "COMPLETED")

            async def ours() -> list[tuple[dict[str, Any], Any]]:
                """The spans of the trace the episode's start began."""
                received = receiving.received()
                starts = [
                    span.trace_id
                    for _, span in received
                    if values(span.attributes).get("parley.episode.id") == episode_id
                    and span.name == "parley.start"
                ]
                return [(r, span) for r, span in received if span.trace_id in starts]

            def whole(found: list[tuple[dict[str, Any], Any]]) -> bool:
                statuses = [
                    values(span.attributes).get("parley.episode.status") for _, span in found
                ]
                return "COMPLETED" in statuses and any(s.name == "parley.judge" for _, s in found)

            await eventually(ours, whole, timeout=20)
        spans = await ours()

    [(api_side, started)] = [(r, s) for r, s in spans if s.name == "parley.start"]
    assert api_side["parley.command"] == "serve" and api_side["service.name"] == "parley"
    worker_side = [(r, s) for r, s in spans if s.name != "parley.start"]
    assert {r["parley.command"] for r, _ in worker_side} == {"worker"}
    assert {s.trace_id for _, s in spans} == {started.trace_id}
    [attempt] = [s for _, s in worker_side if s.name == "parley.attempt"]
    assert attempt.parent_span_id == started.span_id
    names = [s.name for _, s in worker_side]
    assert names.count("parley.turn") == 3
    assert names.count("chat fake") == 3 + 2  # a call a turn, the judge's one per agent
