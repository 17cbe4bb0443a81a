"""/metrics in Prometheus's text formats, for a client that asks for them (core/metrics.py).

The JSON of live counters (graph/app.py) stays what a client gets unless it asks otherwise:
`?format=prometheus` (or `json`) decides outright; else the Accept header does, Prometheus's
formats winning only when it weighs `text/plain` or `application/openmetrics-text` above
`application/json`, as every Prometheus scraper's header does and `*/*` does not. Among them,
OpenMetrics when it is asked for, else the text format 0.0.4 (prometheus_client's choice).
"""

import asyncio
import logging
from collections.abc import Sequence
from typing import Literal

import redis.asyncio as redis
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from parley.core.accept import media_ranges
from parley.core.metrics import ApiFigures, Scraped, exposition
from parley.lifecycle.services import Services
from parley.resolvers.gauges import shared_figures

log = logging.getLogger(__name__)
PROMETHEUS = frozenset({"text/plain", "application/openmetrics-text"})
JSON = frozenset({"application/json"})
Format = Literal["json", "prometheus"]


class UnknownFormat(ValueError):
    """`?format=` named neither json nor prometheus, or was given more than once."""


def chosen_format(accept: str, formats: Sequence[str] = ()) -> Format:
    """What a request to /metrics is answered in (the module's docstring says how); `formats`
    are the `?format=` parameter's values, which must be one or none."""
    if len(formats) > 1:
        raise UnknownFormat("give format once: json or prometheus")
    if formats:
        if formats[0] not in ("json", "prometheus"):
            raise UnknownFormat(f"format must be json or prometheus, not {formats[0]!r}")
        return "json" if formats[0] == "json" else "prometheus"
    weights = {"json": 0.0, "prometheus": 0.0}
    for media_range, q in media_ranges(accept):
        kind = "prometheus" if media_range in PROMETHEUS else "json" if media_range in JSON else ""
        if kind:
            weights[kind] = max(weights[kind], q)
    return "prometheus" if weights["prometheus"] > weights["json"] else "json"


async def prometheus(request: Request, services: Services, live_seconds: float) -> Response | None:
    """The answer to a request to /metrics that asks for Prometheus's formats (400 for an
    unknown or repeated `?format=`); None for one to answer with the JSON."""
    accept = request.headers.get("accept", "")
    try:
        if chosen_format(accept, request.query_params.getlist("format")) == "json":
            return None
    except UnknownFormat as err:
        return PlainTextResponse(str(err), status_code=400)
    return await scrape(accept, services, live_seconds)


REDIS_SECONDS = 2.0
"""How long a probe of the API waits for Redis: a scrape for Redis's figures before it leaves
them out, well inside the scraper's own timeout (Prometheus's default is 10 s), so a slow Redis
costs those figures, not the whole scrape; /readyz for a PING before it answers 503, so a probe
does not hang for as long as Redis stalls."""


async def scrape(accept: str, services: Services, live_seconds: float) -> Response:
    """Every metric: what processes recorded, the figures of Redis (left out, with a warning,
    when Redis cannot be read) and the API process's own."""
    try:
        async with asyncio.timeout(REDIS_SECONDS):
            shared = await shared_figures(services.client, services.jobs, live_seconds)
    except (redis.RedisError, OSError, TimeoutError) as err:
        log.warning("/metrics could not read Redis (%r): its figures are left out", err)
        shared = None
    documents = services.documents
    api = ApiFigures(services.hub.subscriber_count, documents.hits, documents.misses)
    # Off the event loop: in multiprocess mode it reads every process's files.
    body, content_type = await asyncio.to_thread(exposition, accept, Scraped(shared, api))
    return Response(body, headers={"content-type": content_type})
