"""Prometheus metrics: every metric Parley exports, declared here once, and their exposition.

Counters and histograms are recorded where things happen (a model's answer, a turn, a judge run,
a job taken over, an event handed to a subscriber), each by one call of a function below, in
the process they happen in. With `PROMETHEUS_MULTIPROC_DIR` in the environment when a process
starts, prometheus_client keeps its values in files there (its multiprocess mode), and a scrape
adds up those of every process that used the directory (a `parley serve` and the `parley worker`
processes beside it); without it a scrape shows its own process's.

What every process shares lives in Redis and is read when the API is scraped (episodes by
status, the job queue, the workers: resolvers/gauges.py); what the API process counts anyway
(its subscriptions, its held documents: storage/tracking.py) is read from it then too. Both are
handed to `exposition` as plain figures and turned into metrics here.

Labels stay few: a model's name, a status, a kind, an error code, never an episode's id.
"""

import os
import re
import socket
import threading
import time
from collections.abc import Awaitable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server
from wsgiref.types import StartResponse

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer, choose_encoder
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead
from prometheus_client.registry import Collector

from parley.core.accept import media_ranges

MULTIPROCESS_DIR = "PROMETHEUS_MULTIPROC_DIR"
"""The environment variable of prometheus_client's multiprocess mode (read when it is imported)."""
SECONDS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 600)
"""Histogram buckets: a fake or local model answers in milliseconds, a busy provider in minutes."""
MODEL_LABELS = 100
"""Distinct model names a process labels; later ones are counted as `other` (a client may name
any `custom/<model>@<url>`, and every label value is a series of its own)."""
OTHER = "other"
OPENMETRICS_ACCEPT = "application/openmetrics-text; version=1.0.0"
TEXT_ACCEPT = "text/plain; version=0.0.4"

if os.environ.get(MULTIPROCESS_DIR):  # the metrics below write there as they are declared
    os.makedirs(os.environ[MULTIPROCESS_DIR], exist_ok=True)

MODEL_CALLS = Counter(
    "parley_model_calls", "Requests sent to a model (each try), answered or failed.", ["model"]
)
MODEL_TOKENS = Counter(
    "parley_model_tokens",
    "Tokens of the models' answers (the provider's counts, estimated when it sent none).",
    ["model", "kind"],
)
MODEL_ERRORS = Counter(
    "parley_model_errors", "Requests to a model that failed, by error code.", ["model", "code"]
)
TURN_SECONDS = Histogram(
    "parley_turn_seconds",
    "Seconds a worker took over each new turn: from the end of the one before (or the start of "
    "the attempt) to its end, the models' answers and the previous turn's write included.",
    buckets=SECONDS,
)
JUDGE_SECONDS = Histogram(
    "parley_judge_seconds",
    "Seconds of each judge run (one judge model's scoring of one episode), scored or failed.",
    ["model"],
    buckets=SECONDS,
)
LEASE_TAKEOVERS = Counter(
    "parley_lease_takeovers",
    "Jobs a worker's sweep took over: their worker stopped renewing its lease, or handed them "
    "back when it stopped.",
)
DELIVERIES = Counter(
    "parley_subscription_deliveries",
    "Live events the event hub handed to a subscription (an overflowing one re-reads them).",
)

_CREDENTIALS = re.compile(r"//[^/@]*@")


class Tokens(Protocol):
    """What a model's answer spent (engine/usage.py `TokenCount`)."""

    @property
    def prompt_tokens(self) -> int: ...
    @property
    def completion_tokens(self) -> int: ...


@dataclass(frozen=True)
class _Model:
    """A model's label and its counters, bound once (each `labels()` takes a lock)."""

    label: str
    calls: Counter
    prompt: Counter
    completion: Counter

    def spent(self, tokens: Tokens) -> None:
        self.prompt.inc(tokens.prompt_tokens)
        self.completion.inc(tokens.completion_tokens)


_models: dict[str, _Model] = {}


def _model(name: str) -> _Model:
    found = _models.get(name)
    if found is None:
        if len(_models) >= MODEL_LABELS:
            return _bound(OTHER)  # not kept: names past the cap take no memory
        found = _models[name] = _bound(_CREDENTIALS.sub("//", name).partition("?")[0])
    return found


def _bound(label: str) -> _Model:
    tokens = MODEL_TOKENS.labels(label, "prompt"), MODEL_TOKENS.labels(label, "completion")
    return _Model(label, MODEL_CALLS.labels(label), *tokens)


def model_label(name: str) -> str:
    """A model's name as a label: without credentials or a query in a `custom/...@<url>` name,
    and `other` past the first MODEL_LABELS names."""
    return _model(name).label


def model_answered(model: str, tokens: Tokens) -> None:
    """A request a model answered, and the tokens it spent."""
    counted = _model(model)
    counted.calls.inc()
    counted.spent(tokens)


def model_failed(model: str, code: str, tokens: Tokens | None = None) -> None:
    """A request to a model that failed with `code`, and the tokens of an answer that came but
    was unusable."""
    counted = _model(model)
    counted.calls.inc()
    MODEL_ERRORS.labels(counted.label, code).inc()
    if tokens is not None:
        counted.spent(tokens)


class TurnClock:
    """Times the new turns of one attempt, as its worker is handed them: each from the end of
    the one before (or from the clock's start). The seats of a simultaneous turn are handed over
    one by one: only the first ends the turn."""

    def __init__(self) -> None:
        self._last = time.monotonic()
        self._turn: int | None = None

    def lap(self, turn: int) -> None:
        if turn == self._turn:
            return
        now = time.monotonic()
        TURN_SECONDS.observe(now - self._last)
        self._last, self._turn = now, turn


async def judge_run[T](model: str, run: Awaitable[T]) -> T:
    """`run`'s result, its time observed as a judge run of `model` (raised or not)."""
    with JUDGE_SECONDS.labels(model_label(model)).time():
        return await run


def took_over() -> None:
    """A job a sweep took over from another worker."""
    LEASE_TAKEOVERS.inc()


def delivered() -> None:
    """A live event handed to a subscription."""
    DELIVERIES.inc()


@dataclass(frozen=True)
class Shared:
    """What every process shares, read from Redis when the API is scraped."""

    episodes: Mapping[str, int]
    """Episodes by status (every status, zeros included)."""
    waiting: int
    """Jobs queued that no worker has taken yet."""
    running: int
    """Jobs a worker has taken and not finished."""
    lag_seconds: float
    """Age of the oldest job no worker has taken yet (0 when none waits)."""
    workers: int
    """Workers that read the queue or renewed their leases within a lease."""


@dataclass(frozen=True)
class ApiFigures:
    """What the scraped API process counts anyway."""

    subscriptions: int
    held_hits: int
    held_misses: int


@dataclass(frozen=True, eq=False)  # a registry keys its collectors by identity
class Scraped(Collector):
    """The figures read at scrape time, as metrics."""

    shared: Shared | None
    """None when Redis could not be read: those metrics are left out of the scrape."""
    api: ApiFigures

    def collect(self) -> Iterable[Metric]:
        api = self.api
        yield gauge(
            "parley_subscriptions",
            "Subscriptions this API process serves now.",
            [((), api.subscriptions)],
        )
        held = CounterMetricFamily(
            "parley_held_documents",
            "Records a list read of this API process took from the documents it holds (hit) "
            "or read from Redis (miss).",
            labels=["result"],
        )
        held.add_metric(["hit"], api.held_hits)
        held.add_metric(["miss"], api.held_misses)
        yield held
        shared = self.shared
        if shared is not None:
            yield gauge(
                "parley_episodes",
                "Episodes stored, by status.",
                [((status,), count) for status, count in shared.episodes.items()],
                ["status"],
            )
            yield gauge(
                "parley_queue_jobs",
                "Jobs in the queue: waiting for a worker, or running on one.",
                [(("waiting",), shared.waiting), (("running",), shared.running)],
                ["state"],
            )
            yield gauge(
                "parley_queue_lag_seconds",
                "Age of the oldest job no worker has taken yet (0 when none waits).",
                [((), shared.lag_seconds)],
            )
            yield gauge(
                "parley_workers",
                "Workers that read the queue or renewed their leases within a lease.",
                [((), shared.workers)],
            )


def gauge(
    name: str,
    documentation: str,
    values: Iterable[tuple[tuple[str, ...], float]],
    labels: Iterable[str] = (),
) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, documentation, labels=list(labels))
    for label_values, value in values:
        family.add_metric(list(label_values), value)
    return family


def multiprocess() -> bool:
    return bool(os.environ.get(MULTIPROCESS_DIR))


class _Recorded(Collector):
    """The metrics recorded in this process (and the library's process and runtime ones)."""

    def collect(self) -> Iterable[Metric]:
        return REGISTRY.collect()


def recorded(registry: CollectorRegistry) -> None:
    """Register what processes recorded: every process's in multiprocess mode, else this one's."""
    if multiprocess():
        MultiProcessCollector(registry)  # type: ignore[no-untyped-call]  # unannotated there
    else:
        registry.register(_Recorded())


def exposition(accept: str, scraped: Scraped) -> tuple[bytes, str]:
    """The scrape's body and its content type: OpenMetrics when `accept` asks for it, else the
    Prometheus text format."""
    registry = CollectorRegistry(auto_describe=False)
    recorded(registry)
    registry.register(scraped)
    encode, content_type = choose_encoder(prometheus_accept(accept))
    return encode(registry), content_type


def prometheus_accept(accept: str) -> str:
    """What prometheus_client is told a scraper accepts: OpenMetrics 1.0.0 when `accept` asks
    for OpenMetrics at any weight, else the text format 0.0.4. Its own reading of the header
    fails on a quoted or malformed version (a TypeError, so a 500) and echoes versions nobody
    asked it to support."""
    wanted = any(r == "application/openmetrics-text" and q > 0 for r, q in media_ranges(accept))
    return OPENMETRICS_ACCEPT if wanted else TEXT_ACCEPT


def serve(port: int, host: str) -> tuple[WSGIServer, threading.Thread]:
    """Serve what processes recorded at http://host:port/metrics from a thread of its own
    (`parley worker --metrics-port`: a worker whose API runs on another machine)."""
    registry = CollectorRegistry(auto_describe=False)
    recorded(registry)
    answer = make_wsgi_app(registry)

    def app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        environ["HTTP_ACCEPT"] = prometheus_accept(environ.get("HTTP_ACCEPT", ""))
        return answer(environ, start_response)  # type: ignore[no-any-return]

    class Server(ThreadingWSGIServer):
        address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

    server = make_server(host, port, app, Server, handler_class=_Quiet)
    thread = threading.Thread(target=server.serve_forever, name="metrics", daemon=True)
    thread.start()
    return server, thread


class _Quiet(WSGIRequestHandler):
    """Logs no line a scrape."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


def process_stopped() -> None:
    """Remove this process's live gauges from the multiprocess directory, as the library asks of
    a process that ends (its counters stay: totals do not fall)."""
    if multiprocess():
        mark_process_dead(os.getpid())  # type: ignore[no-untyped-call]
