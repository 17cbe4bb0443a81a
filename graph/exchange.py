"""HTTP export and import, for `parley export|import --url` and other remote clients.

`GET /export?kind=…&format=jsonl|csv&tag=…&experiment=…&status=…&agent=…&scenario=…` streams the
records in Sotopia's layout as they are read; `POST /import` takes JSONL in the body (within
the body limit, graph/security.py), sent as one of IMPORT_MEDIA_TYPES, and answers with the
import's report. Both sit behind the same bearer tokens as /graphql.
"""

from collections.abc import AsyncIterator
from typing import Any

import redis.asyncio as redis
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from parley.core.errors import BadArgument
from parley.core.media_types import EXPORT_MEDIA_TYPES
from parley.graph.errors import (
    BAD_USER_INPUT,
    RETRY_AFTER_SECONDS,
    UNAVAILABLE,
    unavailable_message,
)
from parley.lifecycle.services import Services
from parley.resolvers import exporter
from parley.resolvers.importer import import_lines
from parley.storage.outages import is_outage

IMPORT_MEDIA_TYPES = (
    "application/x-ndjson",
    "application/jsonl",
    "application/x-jsonlines",
    "application/json",
)
"""What an import's body may be sent as: JSON lines (a body of one line is JSON too). Never a
type a web page may send to another site without asking first (text/plain, a form)."""
UNSUPPORTED_MEDIA_TYPE = {"code": "UNSUPPORTED_MEDIA_TYPE"}


def exchange_routes() -> list[BaseRoute]:
    return [
        Route("/export", export_records, methods=["GET"]),
        Route("/import", import_records, methods=["POST"]),
    ]


def _error(status: int, message: str, extensions: dict[str, Any]) -> JSONResponse:
    headers = {"retry-after": str(RETRY_AFTER_SECONDS)} if status == 503 else None
    body = {"errors": [{"message": message, "extensions": extensions}]}
    return JSONResponse(body, status_code=status, headers=headers)


def _unavailable(err: redis.RedisError) -> JSONResponse:
    return _error(503, unavailable_message(err), UNAVAILABLE)


async def export_records(request: Request) -> Response:
    services: Services = request.app.state.services
    try:
        kinds, episodes, form = exporter.request(dict(request.query_params))
    except BadArgument as err:
        return _error(400, str(err), BAD_USER_INPUT)
    text = exporter.export_text(services.client, kinds, episodes, form)
    try:
        first = await anext(text, "")  # Redis trouble is still an answer, not a cut stream
    except redis.RedisError as err:
        if not is_outage(err):
            raise
        return _unavailable(err)

    async def body() -> AsyncIterator[bytes]:
        yield first.encode()
        async for part in text:
            yield part.encode()

    name = "parley-export." + form.value
    return StreamingResponse(
        body(),
        media_type=f"{EXPORT_MEDIA_TYPES[form]}; charset=utf-8",
        headers={"content-disposition": f'attachment; filename="{name}"'},
    )


async def import_records(request: Request) -> Response:
    services: Services = request.app.state.services
    given = request.headers.get("content-type", "")
    if given.split(";")[0].strip().lower() not in IMPORT_MEDIA_TYPES:
        message = (
            f"an import is JSON lines, sent as {', '.join(IMPORT_MEDIA_TYPES)}; "
            f"not {given or 'a body without a content type'}"
        )
        return _error(415, message, UNSUPPORTED_MEDIA_TYPE)
    body = await request.body()
    try:
        report = await import_lines(services.client, body.splitlines())
    except redis.RedisError as err:
        if not is_outage(err):
            raise
        return _unavailable(err)
    return JSONResponse(report.as_json())
