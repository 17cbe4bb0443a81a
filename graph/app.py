"""The Starlette application: GraphQL over HTTP and websockets, health, and the lifespan."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import redis.asyncio as redis
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route, WebSocketRoute
from strawberry.asgi import GraphQL

from graph.context import Context
from graph.schema import schema
from graph.settings import Settings
from storage.runtime import redis_storage


class GraphQLApp(GraphQL[Context, None]):
    async def get_context(self, request: Any, response: Any) -> Context:
        return Context()


def create_app(settings: Settings | None = None) -> Starlette:
    settings = settings or Settings()
    graphql = GraphQLApp(schema)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with redis_storage(
            settings.redis_url, settings.data_dir, seed_if_empty=settings.seed
        ) as client:
            app.state.redis = client
            yield

    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> JSONResponse:
        client: redis.Redis = request.app.state.redis
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
        ],
        lifespan=lifespan,
    )
