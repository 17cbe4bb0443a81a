"""Subscription events executed once for everyone who asked the same thing.

Each websocket subscription keeps its own stream (its snapshot, its `after:` cursor, its gap
refills and overflow resyncs: lifecycle/follow.py), but an event that reaches many streams live
is one object, parsed once by the process's event hub. A `Fanout` groups subscriptions by what
decides their result (the document, the operation name and the variables: nothing in the schema
depends on which token asked, README "Threat model"), executes the selection once per such event
for each group and encodes the `next` payload once; every subscriber sends that text behind its
own operation id. An event that a stream re-read from storage (a snapshot, a refill after an
overflow or a gap) is a new object but the same content: it shares the payload that content
had, so subscribers that resync together do not each execute the same events.

This path does what the schema's extensions (graph/schema.py) do for a subscription itself:
the same validation rules and token limit, the same error policy; a new extension with
per-operation hooks would need its counterpart here.
"""

import asyncio
import json
from collections import OrderedDict
from collections.abc import AsyncGenerator, Awaitable, Callable, Hashable, Iterator, Sequence
from contextlib import aclosing, contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, cast

import strawberry
from graphql import (
    ASTValidationRule,
    DocumentNode,
    ExecutionResult,
    GraphQLError,
    OperationType,
    parse,
    specified_rules,
    validate,
)
from graphql.execution import create_source_event_stream
from graphql.execution.executor import Executor
from graphql.pyutils import is_awaitable
from graphql.utilities import get_operation_ast

RECENT_OBJECTS = 256
"""Shared objects a group remembers the payload of (a live subscriber lags a few behind)."""
RECENT_CONTENTS = 1024
"""Event contents likewise: subscribers that resync re-read the same recent events."""

Identity = Callable[[object], object | None]
"""The object an item of a subscription's stream shares with other streams (None: its own)."""
Content = Callable[[object], Hashable]
"""What decides a shared item's result: equal for an event and its re-read copy."""
type Payload = str | asyncio.Future[str]
ClientErrors = Callable[[list[GraphQLError]], list[GraphQLError]]
"""Errors as a client may see them (the schema's masking and codes)."""
Key = tuple[str, str | None, str]


@dataclass(frozen=True)
class Subscribe:
    """One `subscribe` message of graphql-transport-ws."""

    id: str
    query: str
    variables: dict[str, Any] | None = None
    operation_name: str | None = None


class Disconnected(Exception):
    """`send` found the websocket closed."""


def encoded(value: object) -> str:
    """JSON as Strawberry's websocket handlers send it."""
    return json.dumps(value, separators=(",", ":"))


def next_prefix(operation_id: str) -> str:
    """The start of a `next` message for this id: the payload and a closing brace follow."""
    return '{"id":' + encoded(operation_id) + ',"type":"next","payload":'


@dataclass(eq=False)
class Group:
    """The subscriptions that share one key: one executor for its events, recent payloads by
    the object streams share and by its content (what a resync re-reads is a new object)."""

    executor: Executor[Any]
    fanout: "Fanout"
    members: int = 0
    by_object: OrderedDict[int, tuple[object, Payload]] = field(default_factory=OrderedDict)
    by_content: OrderedDict[Hashable, Payload] = field(default_factory=OrderedDict)

    def payload(self, item: object) -> "str | Awaitable[str]":
        """The encoded `next` payload of one stream item; executed once for a shared item."""
        shared = self.fanout.identity(item)
        if shared is None:
            return self._execute(item)
        hit = self.by_object.get(id(shared))
        if hit is None or hit[0] is not shared:
            key = self.fanout.content(item)
            found = self.by_content.get(key)
            if found is None:
                done = self._execute(item)
                found = done if isinstance(done, str) else asyncio.ensure_future(done)
                remember(self.by_content, key, found, RECENT_CONTENTS)
            hit = (shared, found)  # holding `shared` keeps its id from being reused
            remember(self.by_object, id(shared), hit, RECENT_OBJECTS)
        payload = hit[1]
        return payload if isinstance(payload, str) else asyncio.shield(payload)

    def _execute(self, item: object) -> "str | Awaitable[str]":
        self.fanout.executions += 1
        result = self.executor.build_per_event_executor(item).execute_operation(False)
        if is_awaitable(result):
            return self._encode_later(cast(Awaitable[ExecutionResult], result))
        return self.fanout.encode(cast(ExecutionResult, result))

    async def _encode_later(self, result: Awaitable[ExecutionResult]) -> str:
        return self.fanout.encode(await result)


def remember[K, V](recent: OrderedDict[K, V], key: K, value: V, limit: int) -> None:
    recent[key] = value
    if len(recent) > limit:
        recent.popitem(last=False)


class Fanout:
    """The process's groups of subscriptions, and the documents they were checked against."""

    def __init__(
        self,
        schema: strawberry.Schema,
        rules: Sequence[type[ASTValidationRule]],
        max_tokens: int,
        identity: Identity,
        content: Content,
        client_errors: ClientErrors,
    ) -> None:
        self.schema = schema
        self.identity = identity
        self.content = content
        self.client_errors = client_errors
        self.groups: dict[Key, Group] = {}
        self.executions = 0
        """Selections executed for subscription events (in /metrics; tests count them)."""
        self._rules = (*specified_rules, *rules)
        self._max_tokens = max_tokens
        self.subscription_document = lru_cache(maxsize=256)(self._subscription_document)

    async def serve(
        self,
        request: Subscribe,
        context: object,
        shared_context: Callable[[], object],
        send: Callable[[str], Awaitable[None]],
    ) -> bool:
        """Run one subscription in its group, sending each `next` message with `send`, until its
        stream ends (or raises: its error is sent as Strawberry sends it); True then. False,
        having sent nothing, for a request it does not take (not a valid subscription, or
        variables that do not coerce): the caller runs it as Strawberry does, which reports
        its errors as it always did."""
        query, name, variables = request.query, request.operation_name, request.variables
        document = self.subscription_document(query, name)
        own = None if document is None else self._build(document, name, variables, context)
        stream = None if own is None else await self._source(own)
        if document is None or stream is None:
            return False
        prefix = next_prefix(request.id)

        def shared_executor() -> Executor[Any]:
            built = self._build(document, name, variables, shared_context())
            assert built is not None  # the same variables coerced for this request
            return built

        with self._member((query, name, encoded_variables(variables)), shared_executor) as group:
            try:
                async with aclosing(stream):
                    async for item in stream:
                        payload = group.payload(item)
                        text = payload if isinstance(payload, str) else await payload
                        await send(prefix + text + "}")
            except Disconnected:
                raise
            except Exception as error:  # a stream that raised ends with its error
                await send(prefix + self.error_payload(error) + "}")
        return True

    def _subscription_document(self, query: str, operation_name: str | None) -> DocumentNode | None:
        """The parsed document when it is a valid subscription, else None (checked against the
        schema's own rules, graph/schema.py, so an error is reported by Strawberry's path)."""
        try:
            document = parse(query, max_tokens=self._max_tokens)
            operation = get_operation_ast(document, operation_name)
        except GraphQLError:
            return None
        if operation is None or operation.operation != OperationType.SUBSCRIPTION:
            return None
        if validate(self.schema._schema, document, self._rules):
            return None
        return document

    def _build(
        self,
        document: DocumentNode,
        operation_name: str | None,
        variables: dict[str, Any] | None,
        context: object,
    ) -> Executor[Any] | None:
        executor_class = self.schema.execution_context_class
        assert executor_class is not None and issubclass(executor_class, Executor)
        built = executor_class.build(
            self.schema._schema, document, None, context, variables, operation_name
        )
        return built if isinstance(built, Executor) else None

    async def _source(self, executor: Executor[Any]) -> AsyncGenerator[object] | None:
        """The subscription field's own stream (its resolver's generator), or None."""
        stream = create_source_event_stream(executor)
        if is_awaitable(stream):
            stream = await stream
        return cast(AsyncGenerator[object], stream) if isinstance(stream, AsyncGenerator) else None

    @contextmanager
    def _member(self, key: Key, make: Callable[[], Executor[Any]]) -> Iterator[Group]:
        """Membership of the group for `key`: made for its first member, dropped after its last."""
        group = self.groups.get(key)
        if group is None:
            group = self.groups[key] = Group(make(), self)
        group.members += 1
        try:
            yield group
        finally:
            group.members -= 1
            if not group.members and self.groups.get(key) is group:
                del self.groups[key]

    def encode(self, result: ExecutionResult) -> str:
        payload: dict[str, Any] = {"data": result.data}
        if result.errors:
            payload["errors"] = self.errors(result.errors)
        return encoded(payload)

    def error_payload(self, error: Exception) -> str:
        if not isinstance(error, GraphQLError):
            error = GraphQLError(str(error), original_error=error)
        return encoded({"data": None, "errors": self.errors([error])})

    def errors(self, errors: list[GraphQLError]) -> list[Any]:
        self.schema._process_errors(errors)  # logged once, field suggestions removed
        return [error.formatted for error in self.client_errors(errors)]


def encoded_variables(variables: dict[str, Any] | None) -> str:
    return json.dumps(variables or {}, sort_keys=True, separators=(",", ":"))
