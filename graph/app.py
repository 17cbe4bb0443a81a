"""The Starlette application: GraphQL over HTTP and websockets, health, and the lifespan."""

import asyncio
import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import redis.asyncio as redis
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route, WebSocketRoute
from strawberry.asgi import GraphQL

from graph.context import Context, Runtime
from graph.runtime import api_runtime
from graph.schema import schema
from graph.settings import Settings


class GraphQLApp(GraphQL[Context, None]):
    async def get_context(self, request: Any, response: Any) -> Context:
        runtime: Runtime = request.app.state.runtime
        return Context(runtime=runtime)


def create_app(settings: Settings | None = None) -> Starlette:
    settings = settings or Settings()
    graphql = GraphQLApp(schema)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with api_runtime(settings, with_worker=settings.worker) as runtime:
            app.state.runtime = runtime
            gc.freeze()  # start-up objects (schema, models, modules) leave the GC's scans
            yield

    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def metrics(request: Request) -> JSONResponse:
        """Live counters: what a leak of subscriptions or tasks would show up in."""
        hub = request.app.state.runtime.hub
        return JSONResponse(
            {
                "subscribers": hub.subscriber_count,
                "channels": len(hub.channels),
                "hub_reconnects": hub.reconnects,
                "tasks": len(asyncio.all_tasks()),
            }
        )

    async def readyz(request: Request) -> JSONResponse:
        client = request.app.state.runtime.services.client
        try:
            await client.ping()
        except redis.RedisError as err:
            return JSONResponse({"status": "unavailable", "redis": str(err)}, status_code=503)
        return JSONResponse({"status": "ready"})

    return Starlette(
        routes=[
            Route("/graphql", graphql, methods=["GET", "POST"]),
            WebSocketRoute("/graphql", graphql),
            Route("/healthz", healthz),
            Route("/readyz", readyz),
            Route("/metrics", metrics),
        ],
        lifespan=lifespan,
    )
