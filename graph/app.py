"""The Starlette application: GraphQL over HTTP and websockets, health, and the lifespan."""

import asyncio
import contextlib
import gc
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import asdict
from datetime import timedelta
from typing import Any

import redis.asyncio as redis
from cross_web import HTTPException
from graphql import GraphQLError, OperationType, parse
from graphql.utilities import get_operation_ast
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect
from strawberry.asgi import ASGIWebSocketAdapter, GraphQL
from strawberry.exceptions import ConnectionRejectionError
from strawberry.http import GraphQLHTTPResponse, GraphQLRequestData
from strawberry.http.types import QueryParams
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
    Operation,
)
from strawberry.subscriptions.protocols.graphql_transport_ws.types import Message
from strawberry.subscriptions.protocols.graphql_ws.handlers import BaseGraphQLWSHandler
from strawberry.subscriptions.protocols.graphql_ws.types import ErrorMessage, OperationMessage
from strawberry.types import ExecutionResult
from strawberry.types.unset import UNSET, UnsetType

from parley.core.accept import media_ranges
from parley.core.metrics import process_stopped
from parley.graph.context import Context
from parley.graph.encoding import encode
from parley.graph.errors import (
    RETRY_AFTER_SECONDS,
    UNAVAILABLE,
    client_errors,
    unavailable,
    unavailable_message,
)
from parley.graph.exchange import exchange_routes
from parley.graph.fanout import Disconnected, Fanout, Subscribe
from parley.graph.http_timeouts import BodyDeadline
from parley.graph.ide import ASSETS_PATH, graphiql_assets, graphiql_page
from parley.graph.rater_access import rater_connection
from parley.graph.request_ids import RequestIds
from parley.graph.schema import Limits, build_schema, validation_rules
from parley.graph.scrape import REDIS_SECONDS, prometheus
from parley.graph.seat_access import (
    NAME_THE_OPERATION,
    names_its_operation,
    refusal,
    seat_connection,
)
from parley.graph.security import (
    BearerAuth,
    BodySizeLimit,
    CrossSiteWrites,
    RefusedHandshakeLog,
    RefusedHandshakes,
    TokenChecker,
    trusted_hosts,
    well_formed,
)
from parley.graph.settings import Settings, split
from parley.graph.subscription import event_content, shared_event
from parley.graph.webapp import APP_PATH, webapp_routes
from parley.lifecycle.raters import RaterHolder
from parley.lifecycle.seats import SeatHolder
from parley.lifecycle.services import Services, open_services
from parley.lifecycle.worker import Worker, WorkerConfig, running_worker
from parley.resolvers import client_json

log = logging.getLogger(__name__)
SUBSCRIPTIONS_OVER_WEBSOCKETS = (
    "subscriptions are served over a websocket at this URL (graphql-transport-ws or graphql-ws)"
)


def is_subscription(query: str | None, operation_name: str | None) -> bool:
    """Whether the operation to run is a subscription; only a document that mentions the word
    is parsed, and one that does not parse is left to the normal path to report."""
    if not query or "subscription" not in query:
        return False
    try:
        operation = get_operation_ast(parse(query), operation_name)
    except GraphQLError:
        return False
    return operation is not None and operation.operation == OperationType.SUBSCRIPTION


GRAPHQL_RESPONSE = "application/graphql-response+json"
JSON = "application/json"
ACCEPTABLE = {GRAPHQL_RESPONSE: GRAPHQL_RESPONSE, JSON: JSON, "application/*": JSON, "*/*": JSON}
"""Media ranges of an Accept header that a GraphQL response can be sent as, and the type sent."""


def preferred_media_type(accept: str) -> str:
    """The acceptable media type with the highest q (the first listed on a tie); application/json
    when the header is missing or lists neither."""
    best, best_q = JSON, 0.0
    for media_range, q in media_ranges(accept):
        if media_range in ACCEPTABLE and q > best_q:
            best, best_q = ACCEPTABLE[media_range], q
    return best


def is_request_error(response: GraphQLHTTPResponse) -> bool:
    """Whether the request failed before execution started (parse, validation or variable
    coercion): no data and only errors without a path, as every field error has one."""
    errors = response.get("errors") or []
    return (
        response.get("data") is None
        and bool(errors)
        and not any(isinstance(error, dict) and "path" in error for error in errors)
    )


def without_data(response: GraphQLHTTPResponse) -> GraphQLHTTPResponse:
    rest = response.copy()
    rest.pop("data", None)
    return rest


class StorageUnavailable(Exception):
    """Redis could not be asked whether a websocket's credential is valid."""

    def __init__(self, err: BaseException) -> None:
        super().__init__(unavailable_message(err))


TRY_AGAIN_LATER = 1013
"""The websocket close code for a server that cannot serve now (RFC 6455's registry)."""


class TransportWSHandler(BaseGraphQLTransportWSHandler[Context, None]):
    """graphql-transport-ws, closing 4400 on a frame that would crash Strawberry's handler, and
    running subscriptions through the app's fanout (graph/fanout.py): one execution and one
    encoding of each shared event for all who subscribed with the same document and variables.
    Everything else, and every error before the stream starts, goes Strawberry's own way."""

    async def handle_connection_init(self, message: Any) -> None:
        try:
            await super().handle_connection_init(message)
        except StorageUnavailable as err:
            await self.websocket.close(code=TRY_AGAIN_LATER, reason="storage is unavailable")
            log.warning("%s", err)

    async def handle_message(self, message: Message) -> None:
        if well_formed(message, "subscribe", "complete"):
            await super().handle_message(message)
        else:
            await self.handle_invalid_message("Failed to parse message")

    async def run_operation(self, operation: Operation[Context, None]) -> None:
        assert isinstance(self.view, GraphQLApp) and isinstance(
            self.websocket, ASGIWebSocketAdapter
        )
        socket, services = self.websocket.ws, self.context.services
        if not self.view.names_its_operation(
            self.context, operation.query, operation.operation_name
        ):
            payload = [refusal(NAME_THE_OPERATION).formatted]
            await operation.send_operation_message(
                {"id": operation.id, "type": "error", "payload": payload}
            )
            return

        async def send(text: str) -> None:
            try:
                await socket.send_text(text)
            except WebSocketDisconnect as exc:
                raise Disconnected from exc

        request = Subscribe(
            operation.id, operation.query, operation.variables, operation.operation_name
        )
        try:
            served = await self.view.fanout.serve(
                request, self.context, lambda: Context(services=services), send
            )
        except Disconnected:
            return
        if served:
            await operation.send_operation_message({"id": operation.id, "type": "complete"})
        else:
            await super().run_operation(operation)


class LegacyWSHandler(BaseGraphQLWSHandler[Context, None]):
    """Legacy graphql-ws, ignoring such frames as it ignores frames that are not JSON."""

    async def handle_connection_init(self, message: Any) -> None:
        try:
            await super().handle_connection_init(message)
        except StorageUnavailable as err:
            payload = {"message": str(err), **UNAVAILABLE}
            await self.send_message({"type": "connection_error", "payload": payload})
            await self.websocket.close(code=TRY_AGAIN_LATER, reason="storage is unavailable")

    async def handle_message(self, message: OperationMessage) -> None:
        if not well_formed(message, "start", "stop"):
            return
        payload: Any = message.get("payload") or {}
        assert isinstance(self.view, GraphQLApp)
        if message.get("type") == "start" and not self.view.names_its_operation(
            self.context, payload.get("query"), payload.get("operationName")
        ):
            refused = refusal(NAME_THE_OPERATION).formatted
            await self.send_message(
                ErrorMessage(type="error", id=str(message.get("id")), payload=refused)
            )
            return
        await super().handle_message(message)


class GraphQLApp(GraphQL[Context, None]):
    graphql_transport_ws_handler_class = TransportWSHandler
    graphql_ws_handler_class = LegacyWSHandler

    def __init__(self, settings: Settings, checker: TokenChecker) -> None:
        limits = Limits(
            max_depth=settings.max_depth,
            max_aliases=settings.max_aliases,
            max_tokens=settings.max_tokens,
            introspection=settings.introspection,
        )
        schema = build_schema(limits)
        super().__init__(
            schema,
            graphql_ide="graphiql" if settings.graphiql else None,
            connection_init_wait_timeout=timedelta(seconds=settings.ws_init_timeout),
            keep_alive=True,  # legacy graphql-ws only: "ka" messages
            keep_alive_interval=15,
            allowed_origins=split(settings.allowed_origins),
        )
        self.checker = checker
        self.max_tokens = settings.max_tokens
        self.fanout = Fanout(
            schema,
            validation_rules(limits),
            limits.max_tokens,
            identity=shared_event,
            content=event_content,
            client_errors=client_errors,
        )

    def encode_json(self, data: object) -> str:
        """As Strawberry encodes, byte for byte, with reused answers' text spliced in."""
        return encode(data)

    def decode_json(self, data: str | bytes) -> object:
        """JSON as Strawberry reads it, but a number Python will not convert (an integer of over
        4,300 digits) or nesting deeper than client_json.MAX_DEPTH makes the document malformed
        (HTTP 400, websocket 4400), not a crash."""
        try:
            return client_json.loads(data)
        except json.JSONDecodeError:
            raise
        except ValueError as err:
            raise json.JSONDecodeError(str(err), "", 0) from err

    def parse_json(self, data: str | bytes) -> Any:
        """A request body as Strawberry parses one, saying why it was refused: JSON that is
        not an object (or an array, which is refused as a batch) has no operation to read."""
        value = self.parse_json_value(data)
        if not isinstance(value, dict | list):
            raise HTTPException(400, "The request body must be a JSON object")
        return value

    def parse_query_params(self, params: QueryParams) -> dict[str, Any]:
        """GET parameters as Strawberry reads them: `variables` and `extensions` are JSON of
        any type here (Strawberry then refuses one that is not an object or null)."""
        parsed: dict[str, Any] = dict(params)
        for name in ("variables", "extensions"):
            if parsed.get(name):
                parsed[name] = self.parse_json_value(parsed[name])
        return parsed

    def parse_json_value(self, data: str | bytes) -> Any:
        """JSON a request sent, saying why it was refused."""
        try:
            return self.decode_json(data)
        except json.JSONDecodeError as err:
            raise HTTPException(400, f"Unable to parse request body as JSON: {err.msg}") from err

    async def get_sub_response(self, request: Request | WebSocket) -> Response:
        """The sub-response carries the media type negotiated from the Accept header."""
        sub_response = await super().get_sub_response(request)
        sub_response.media_type = preferred_media_type(request.headers.get("accept", ""))
        return sub_response

    def create_response(
        self,
        response_data: GraphQLHTTPResponse | list[GraphQLHTTPResponse],
        sub_response: Response,
    ) -> Response:
        """application/json answers as Strawberry does (200, `data: null` beside the errors of a
        request that failed before execution). application/graphql-response+json follows GraphQL
        over HTTP: such a request gets 400 and no `data` entry, so that a client can tell it from
        an executed one."""
        if unavailable(response_data):
            # Redis is down: say when to retry; for graphql-response+json clients also a 503
            # (application/json clients keep 200 and read extensions.code UNAVAILABLE).
            sub_response.headers["retry-after"] = str(RETRY_AFTER_SECONDS)
            if sub_response.media_type == GRAPHQL_RESPONSE:
                response = super().create_response(response_data, sub_response)
                response.status_code = 503
                response.headers["content-type"] = GRAPHQL_RESPONSE
                return response
        if sub_response.media_type != GRAPHQL_RESPONSE:
            return super().create_response(response_data, sub_response)
        if isinstance(response_data, dict) and is_request_error(response_data):
            response = super().create_response(without_data(response_data), sub_response)
            response.status_code = 400
        else:
            response = super().create_response(response_data, sub_response)
        response.headers["content-type"] = GRAPHQL_RESPONSE
        return response

    async def execute_single(
        self,
        request: Request,
        request_adapter: Any,
        sub_response: Response,
        context: Context,
        root_value: None,
        request_data: GraphQLRequestData,
    ) -> ExecutionResult:
        """Refuse a subscription over plain HTTP as a request error with a clear reason:
        executed as a query it would crash (its field yields a stream, not a value)."""
        if is_subscription(request_data.query, request_data.operation_name):
            return ExecutionResult(data=None, errors=[GraphQLError(SUBSCRIPTIONS_OVER_WEBSOCKETS)])
        if not self.names_its_operation(context, request_data.query, request_data.operation_name):
            return ExecutionResult(data=None, errors=[refusal(NAME_THE_OPERATION)])
        return await super().execute_single(
            request, request_adapter, sub_response, context, root_value, request_data
        )

    def names_its_operation(
        self, context: Context, query: str | None, operation_name: str | None
    ) -> bool:
        """Under a seat's or a rater's credential, a document of several operations must say
        which one runs."""
        return not context.scoped or names_its_operation(query, operation_name, self.max_tokens)

    async def render_graphql_ide(self, request: Request) -> Response:
        return graphiql_page(request)

    async def get_context(self, request: Any, response: Any) -> Context:
        services: Services = request.app.state.services
        state = request.scope.get("state", {})
        seat: SeatHolder | None = state.get("seat")
        rater: RaterHolder | None = state.get("rater")
        return Context(services=services, seat=seat, rater=rater)

    async def on_ws_connect(self, context: Context) -> UnsetType:
        """Accept (an acknowledgement without payload) only a connection_init with a valid token,
        or with the token of a seat or a rater (then only its own fields may be used)."""
        params = context.connection_params
        if not self.checker.accepts_connection_params(params):
            seat_token, rater_token = seat_connection(params), rater_connection(params)
            services = context.services
            try:
                seat = await services.seats.holder(seat_token) if seat_token else None
                rater = await services.raters.holder(rater_token) if rater_token else None
            except (redis.RedisError, OSError) as err:
                raise StorageUnavailable(err) from err
            if seat is None and rater is None:
                raise ConnectionRejectionError({"message": "a valid token is required"})
            context.seat, context.rater = seat, None if seat is not None else rater
        no_payload: UnsetType = UNSET
        return no_payload


def create_app(settings: Settings | None = None) -> Starlette:
    settings = settings or Settings()
    checker = TokenChecker(split(settings.tokens))
    graphql = GraphQLApp(settings, checker)

    async def seat_holder(token: str) -> SeatHolder | None:
        services: Services = app.state.services
        return await services.seats.holder(token)

    async def rater_holder(token: str) -> RaterHolder | None:
        services: Services = app.state.services
        return await services.raters.holder(token)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if not checker.enabled:
            log.warning(
                "no PARLEY_TOKENS set: the API is open to anyone who can reach %s:%s",
                settings.host,
                settings.port,
            )
        async with contextlib.AsyncExitStack() as stack:
            stack.callback(process_stopped)
            server_log, refusals = logging.getLogger("uvicorn.error"), RefusedHandshakeLog()
            server_log.addFilter(refusals)
            stack.callback(server_log.removeFilter, refusals)
            services = await stack.enter_async_context(
                open_services(settings, seed_if_empty=settings.seed)
            )
            if settings.worker:
                worker = Worker(services, WorkerConfig.from_settings(settings))
                await stack.enter_async_context(running_worker(worker))
            await stack.enter_async_context(services.documents.running())
            app.state.services = services
            gc.freeze()  # start-up objects (schema, models, modules) leave the GC's scans
            yield

    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def metrics(request: Request) -> Response:
        """Live counters: what a leak of subscriptions or tasks would show up in; every metric
        in Prometheus's formats for a client that asks for them (graph/scrape.py)."""
        answer = await prometheus(request, request.app.state.services, settings.lease_seconds)
        if answer is not None:
            return answer
        hub = request.app.state.services.hub
        documents = request.app.state.services.documents
        limits: list[dict[str, Any]] | None = None
        try:
            async with asyncio.timeout(REDIS_SECONDS):
                usage = await request.app.state.services.models.limit_usage()
            limits = [asdict(key) for key in usage]
        except (redis.RedisError, OSError, TimeoutError) as err:
            log.warning("/metrics could not read the provider limits (%r): left out", err)
        return JSONResponse(
            {
                "subscribers": hub.subscriber_count,
                "channels": len(hub.channels),
                "hub_reconnects": hub.reconnects,
                "malformed_events": hub.malformed,
                "tasks": len(asyncio.all_tasks()),
                "subscription_groups": len(graphql.fanout.groups),
                "subscription_executions": graphql.fanout.executions,
                "documents_held_hits": documents.hits,
                "documents_held_misses": documents.misses,
                "documents_tracking": documents.active,
                "documents_tracking_reconnects": documents.reconnects,
                "provider_limits": limits,
            }
        )

    async def readyz(request: Request) -> JSONResponse:
        client = request.app.state.services.client
        try:
            async with asyncio.timeout(REDIS_SECONDS):
                await client.ping()
        except redis.RedisError as err:
            return JSONResponse({"status": "unavailable", "redis": str(err)}, status_code=503)
        except TimeoutError:
            said = f"Redis did not answer within {REDIS_SECONDS:g} s"
            return JSONResponse({"status": "unavailable", "redis": said}, status_code=503)
        return JSONResponse({"status": "ready"})

    routes: list[BaseRoute] = [
        Route("/graphql", graphql, methods=["GET", "POST"]),
        WebSocketRoute("/graphql", graphql),
        Route("/healthz", healthz),
        Route("/readyz", readyz),
        Route("/metrics", metrics),
    ]
    routes += webapp_routes(checker.enabled)
    routes += exchange_routes()
    open_prefixes: tuple[str, ...] = (APP_PATH + "/",)
    if settings.graphiql:
        routes.append(graphiql_assets())
        open_prefixes += (ASSETS_PATH + "/",)
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        middleware=[
            Middleware(RefusedHandshakes),
            Middleware(
                TrustedHostMiddleware,
                allowed_hosts=trusted_hosts(settings.allowed_hosts, settings.host),
                www_redirect=False,
            ),
            Middleware(
                CORSMiddleware,
                allow_origins=split(settings.cors_origins),
                allow_methods=["GET", "POST"],
                allow_headers=["authorization", "content-type"],
            ),
            Middleware(RequestIds),
            Middleware(
                CrossSiteWrites,
                origins=split(settings.cors_origins) + split(settings.allowed_origins),
            ),
            Middleware(BodySizeLimit, limit=settings.max_body_bytes),
            Middleware(BodyDeadline, timeout=settings.body_timeout),
            Middleware(
                BearerAuth,
                checker=checker,
                open_prefixes=open_prefixes,
                seats=seat_holder,
                raters=rater_holder,
            ),
        ],
    )
    return app
