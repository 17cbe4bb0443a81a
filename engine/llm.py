"""One way to call every model: the OpenAI chat API, our retries, an adaptive concurrency cap per
endpoint (engine/limiter.py)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Protocol

from parley.core import metrics, tracing
from parley.core.backoff import Backoff
from parley.engine.chat_client import ChatClient, ChatError
from parley.engine.errors import (
    LLMError,
    LLMTimeout,
    LLMTransportError,
    LocalModelError,
    ReplayStopped,
    UnknownModelError,
    gather_stop,
)
from parley.engine.ledger import (
    CANCELLED,
    AnswerSource,
    CallLedger,
    CallScope,
    ModelCall,
    Recorded,
    ReplayCode,
    Served,
    content_hash,
    current_scope,
    current_source,
    missing,
    where,
)
from parley.engine.limiter import AdaptiveLimit
from parley.engine.local_model import STOP_TOKENS, LocalModelServer, local_model_problem
from parley.engine.models import (
    LOCAL_MODEL,
    OPENAI_LISTED,
    ConfiguredModel,
    ModelInfo,
    configured_model_info,
    custom_model_info,
    is_reasoning_model,
    load_models_file,
    local_model_info,
    openai_model_info,
    provider_limits,
)
from parley.engine.parsing import well_formed
from parley.engine.shared_limit import Charge, LimitUsage, SharedAllowance, SharedLimit
from parley.engine.stats import GenerationStats
from parley.engine.usage import Prices, TokenCount, add, counted, estimate_prompt

FREE = Prices(prompt=0.0, completion=0.0)
REPLAY_CANCEL_WAIT = 60.0
"""Seconds a replayed call that was cancelled in its source waits to be cancelled again."""
SCHEMA_INSTRUCTION = "Answer with only a JSON object that follows this JSON schema:"
Purpose = Literal["turn", "judge"]
"""What a request is for, which decides its timeout (`ModelInfo.timeout`, `judge_timeout`)."""


@dataclass(frozen=True)
class ChatRequest:
    messages: list[dict[str, str]]
    max_tokens: int = 256
    temperature: float = 0.7
    stop: list[str] | None = None
    schema: dict[str, Any] | None = None
    """Ask for JSON following this schema (response_format, or in the prompt)."""
    schema_name: str = "answer"
    purpose: Purpose = "turn"


@dataclass(frozen=True)
class RetryPolicy:
    """Retries of transport errors, timeouts, 429 and 5xx (the SDK's own retries are off)."""

    max_attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 8.0
    budget_seconds: float = 600.0
    """Seconds one call may spend on its requests and the pauses between them before no retry
    begins. Waiting for a place under the endpoint's limit is not counted: a request waits its
    turn among the others (the embedded model's four slots are shared by every episode's turns
    and judges), it does not expire in the queue."""


class ModelCatalog(Protocol):
    """Knows which model names are usable and how to reach them."""

    def resolve(self, name: str) -> ModelInfo: ...


class LLMRouter(ModelCatalog, Protocol):
    """What the episode loop and the judge need from a model provider."""

    async def complete(self, model: str, request: ChatRequest, stats: GenerationStats) -> str: ...


@dataclass
class _Endpoint:
    client: ChatClient
    limit: AdaptiveLimit
    """Shared by every model at the same base URL."""
    schema_rejected: bool = False


@dataclass
class _Trace:
    """What a call's tries sent and got, for its ledger record."""

    request: dict[str, Any] | None = None
    answer: str | None = None
    tokens: TokenCount = field(default_factory=TokenCount)
    latency_ms: float = 0.0
    attempts: int = 0
    error_code: str | None = None
    response: dict[str, Any] | None = None
    """The provider's answer to the last try, as it came."""


PROVIDER_NAMES = {
    "openai": "openai",
    "local": "llama.cpp",
    "custom": "openai_compatible",
    "config": "openai_compatible",
}
"""`gen_ai.provider.name` by `ModelInfo.provider`: OpenAI's, the embedded model's server, and any
other OpenAI-compatible endpoint (its `server.address` says which)."""
Complete = Callable[["ModelRegistry", str, ChatRequest, GenerationStats, _Trace], Awaitable[str]]


def _traced(complete: Complete) -> Complete:
    """A model call as its span (core/tracing.py `chat`): the model, what the request asked
    for, the tokens, how many requests it took and how it failed (error.type: the `_Trace`
    error code, else the exception's type); nothing when no provider takes spans."""

    @functools.wraps(complete)
    async def traced(
        self: ModelRegistry, model: str, request: ChatRequest, stats: GenerationStats, trace: _Trace
    ) -> str:
        if not tracing.enabled():
            return await complete(self, model, request, stats, trace)
        info = self.resolve(model)
        scope = current_scope()
        about = {
            "parley.call.purpose": scope.purpose.value if scope else None,
            "parley.agent.seat": scope.seat if scope else None,
            "parley.turn.number": scope.turn if scope else None,
            "parley.judge.run": scope.judge if scope else None,
        }
        provider = PROVIDER_NAMES.get(info.provider, info.provider)
        json_output = request.schema is not None
        with tracing.chat(
            provider, info.model, info.base_url, json_output=json_output, attributes=about
        ) as call:
            error: str | None = None
            try:
                return await complete(self, model, request, stats, trace)
            except Exception as exc:
                error = trace.error_code or type(exc).__qualname__
                raise
            finally:
                used = trace.tokens
                call.ended(
                    body=trace.request,
                    response=trace.response,
                    input_tokens=used.prompt_tokens,
                    output_tokens=used.completion_tokens,
                    estimated=used.estimated_tokens > 0,
                    requests=trace.attempts,
                    latency_ms=trace.latency_ms,
                    answer=trace.answer,
                    error_type=error,
                )

    return traced


def _holds_all(exc: ChatError) -> bool:
    """A 429, or an answer that says when to come back: every process of a key with shared
    limits holds its calls."""
    return exc.kind == "rate_limited" or exc.retry_after is not None


def _in_flight(
    shared: SharedLimit | None, tokens: int, timeout: float
) -> contextlib.AbstractAsyncContextManager[Charge]:
    """A place among the shared key's calls in flight, or nothing to hold."""
    if shared is None:
        return contextlib.nullcontext(Charge(tokens))
    return shared.in_flight(tokens, timeout)


def _overloaded(exc: ChatError) -> bool:
    """Errors that say the endpoint has too much to do: fewer calls at once, then."""
    return exc.kind in ("rate_limited", "timeout") or (exc.status or 0) >= 500


class ModelRegistry:
    """Knows every usable model name and calls them; `aclose()` stops what it started.

    One registry serves one event loop (its limits are bound to it).
    """

    def __init__(
        self,
        models_file: Path | None,
        data_dir: Path,
        retry: RetryPolicy | None = None,
        local_threads: int | None = None,
        allowance: SharedAllowance | None = None,
    ) -> None:
        self._configured: dict[str, ConfiguredModel] = {}
        if models_file is not None:
            for entry in load_models_file(models_file):
                self._configured[entry.name] = entry
        self._allowance = allowance
        self._shared: dict[str, SharedLimit] = {}
        """The shared allowance each model draws from, by model name (none: not limited so;
        without an `allowance` the models file's limits are not kept)."""
        if allowance is not None:
            by_key: dict[str, SharedLimit] = {}
            for name, limits in provider_limits(list(self._configured.values())).items():
                shared = by_key.setdefault(limits.key, SharedLimit(limits, allowance))
                self._shared[name] = shared
        self._prices = {name: entry.prices() for name, entry in self._configured.items()}
        self._prices[LOCAL_MODEL] = FREE  # it runs on this machine: its tokens cost nothing
        self._infos: dict[str, tuple[str | None, ModelInfo]] = {}
        """Each configured model's info, with the value of its key's variable it was made with."""
        self.retry = retry or RetryPolicy()
        self.local = LocalModelServer(data_dir, threads=local_threads)
        self._endpoints: dict[str, _Endpoint] = {}
        self._limits: dict[str, AdaptiveLimit] = {}
        self._ledger: CallLedger | None = None
        self.replay_cancel_wait = REPLAY_CANCEL_WAIT

    def record_calls(self, ledger: CallLedger | None) -> None:
        """Hand every call made in an episode's scope (engine/ledger.py) to `ledger`."""
        self._ledger = ledger

    def capacity(self) -> int:
        """Calls the endpoints in use take at once now: their limits added up (0 before any
        model is called)."""
        return sum(limit.limit for limit in self._limits.values())

    def reach(self) -> int:
        """Calls the endpoints in use may take at once a round trip from now (`AdaptiveLimit.
        reach`), added up (0 before any model is called)."""
        return sum(limit.reach for limit in self._limits.values())

    def limits(self) -> dict[str, AdaptiveLimit]:
        """Each endpoint's limit, by base URL."""
        return dict(self._limits)

    async def limit_usage(self) -> list[LimitUsage]:
        """Each limited key's allowance in use now, as every process sees it, with the models
        counted under it."""
        if self._allowance is None:
            return []
        models: dict[str, list[str]] = {}
        keyed: dict[str, SharedLimit] = {}
        for name, shared in self._shared.items():
            models.setdefault(shared.limits.key, []).append(name)
            keyed[shared.limits.key] = shared
        found = []
        for key, shared in keyed.items():
            usage = await self._allowance.usage(shared.limits)
            found.append(replace(usage, models=tuple(models[key])))
        return found

    def list_models(self) -> list[ModelInfo]:
        problem = local_model_problem()
        infos = [local_model_info(problem is None, problem)]
        infos += [configured_model_info(e) for e in self._configured.values()]
        for name in OPENAI_LISTED:
            if name not in self._configured:
                info = openai_model_info(name)
                assert info is not None
                infos.append(info)
        return infos

    def prices(self, name: str) -> Prices | None:
        """What the models file says a model costs, if it says."""
        return self._prices.get(name)

    def resolve(self, name: str) -> ModelInfo:
        """Return the model's info, or raise UnknownModelError if unknown or unusable."""
        info: ModelInfo | None
        if name == LOCAL_MODEL:
            problem = local_model_problem()
            info = local_model_info(problem is None, problem)
            if self.local.base_url is not None:
                info = info.model_copy(update={"base_url": self.local.base_url})
        elif name in self._configured:
            info = self._configured_info(name)
        else:
            info = custom_model_info(name) or openai_model_info(name)
        if info is None:
            raise UnknownModelError(
                f"unknown model {name!r}: use {LOCAL_MODEL!r}, 'custom/<model>@<base_url>', "
                "a name from the models file, or an OpenAI model name"
            )
        if not info.available:
            raise UnknownModelError(f"model {name!r} cannot be used: {info.reason}")
        return info

    def _configured_info(self, name: str) -> ModelInfo:
        """A models file entry's info, made again only when its key's variable changed."""
        entry = self._configured[name]
        key = os.environ.get(entry.api_key_env) if entry.api_key_env else None
        made = self._infos.get(name)
        if made is None or made[0] != key:
            made = self._infos[name] = (key, configured_model_info(entry))
        return made[1]

    async def _endpoint(self, info: ModelInfo) -> tuple[_Endpoint, str]:
        if info.provider == "local":
            try:
                base_url = await self.local.ensure_started()
            except LocalModelError as exc:
                raise LLMTransportError(f"embedded model unavailable: {exc}") from exc
        else:
            assert info.base_url is not None
            base_url = info.base_url
        endpoint = self._endpoints.get(info.name)
        if endpoint is None or endpoint.client.base_url != base_url.rstrip("/"):
            if endpoint is not None:  # the embedded server restarted on another port
                await endpoint.client.aclose()
            key = os.environ.get(info.api_key_env or "", "") or "EMPTY"
            client = ChatClient(base_url, key, info.timeout)
            endpoint = _Endpoint(client, self._limit(client.base_url, info))
            self._endpoints[info.name] = endpoint
            used = {e.client.base_url for e in self._endpoints.values()}
            self._limits = {url: limit for url, limit in self._limits.items() if url in used}
        return endpoint, base_url

    def _limit(self, base_url: str, info: ModelInfo) -> AdaptiveLimit:
        limit = self._limits.get(base_url)
        if limit is None:
            limit = AdaptiveLimit(info.max_concurrency, info.min_concurrency)
            self._limits[base_url] = limit
        else:
            limit.narrow(info.max_concurrency, info.min_concurrency)
        return limit

    async def complete(self, model: str, request: ChatRequest, stats: GenerationStats) -> str:
        """Send one chat request, retrying transport failures; return the reply text. A call
        in an episode's scope is recorded in the ledger, answered or failed. A scope with an
        answer source (a replay, the cache) takes the recorded answer instead when it has one.

        In a job of `gather_or_fail` that its gather stopped (a sibling failed), a call that
        ended stands (a cancellation while it is recorded does not undo its answer or failure)
        and the job stops at its next call, recorded cancelled: the ledger says where each job
        stopped. A replay plays such a job on until its recorded calls say it was cancelled."""
        scope, source = current_scope(), current_source()
        stop = gather_stop()
        replaying = source is not None and source.served == Served.REPLAY
        if stop is not None and stop.is_set() and not replaying:
            await self._unsent(scope, model, request)
            raise asyncio.CancelledError
        if scope is not None and source is not None:
            served = await self._served(scope, source, model, request, stats)
            if served is not None:
                return served
        if scope is None or self._ledger is None:
            return await self._complete(model, request, stats, _Trace())
        trace = _Trace()
        try:
            text = await self._complete(model, request, stats, trace)
        except LLMError as exc:
            await self._record(scope, model, trace, str(exc))
            raise
        except asyncio.CancelledError:
            trace.error_code = CANCELLED
            await self._record(scope, model, trace, "cancelled before it ended")
            raise
        await self._record(scope, model, trace, None)
        return text

    async def _unsent(self, scope: CallScope | None, model: str, request: ChatRequest) -> None:
        """Record a call that a stopped job does not send, as cancelled, with the body it would
        send: a replay of the job stops there too."""
        if scope is None or self._ledger is None:
            return
        info = self.resolve(model)
        endpoint = self._endpoints.get(info.name)
        rejected = endpoint is not None and endpoint.schema_rejected
        use_schema = request.schema is not None and info.json_schema and not rejected
        trace = _Trace(request=_request_kwargs(info, request, use_schema), error_code=CANCELLED)
        await self._record(scope, model, trace, "cancelled before it was sent")

    async def _served(
        self,
        scope: CallScope,
        source: AnswerSource,
        model: str,
        request: ChatRequest,
        stats: GenerationStats,
    ) -> str | None:
        """The answer `source` recorded for this request, as this registry would send it (with
        its schema as `response_format`, or in the prompt where an endpoint refused that), or
        None to ask the model; a replay stops at a request its source lacks. A recorded failure
        fails again."""
        info = self.resolve(model)
        bodies = []
        if request.schema is not None and info.json_schema:
            bodies.append(_request_kwargs(info, request, True))
        bodies.append(_request_kwargs(info, request, False))
        for body in bodies:
            found = await source.find(scope, content_hash(body))
            if found is not None:
                break
        else:
            if source.served == Served.REPLAY:
                raise ReplayStopped(missing(scope, content_hash(bodies[0])), stats)
            return None
        if self._ledger is not None:
            await _kept(self._ledger.record(_served_call(scope, model, body, found, source.served)))
        if found.error_code == CANCELLED:
            # The source's call was cancelled by a sibling's failure: so is this one, once the
            # same failure is replayed; nothing cancelling it is a difference.
            stop = gather_stop()
            if stop is not None and stop.is_set():  # it was, while the call was recorded
                raise asyncio.CancelledError
            await asyncio.sleep(self.replay_cancel_wait)
            reason = f"the call for {where(scope)} was cancelled in the source, not here"
            raise ReplayStopped(f"{ReplayCode.REPLAY_DIVERGED}: {reason}", stats)
        if found.error_code is not None or found.answer is None:
            stats.failures += 1
            failed = LLMTimeout if found.error_code == "timeout" else LLMTransportError
            raise failed(found.error_message or f"{model}: answer without choices")
        return _clean(found.answer, info)

    async def _record(self, scope: CallScope, model: str, trace: _Trace, error: str | None) -> None:
        if self._ledger is None or trace.request is None:  # nothing was sent
            return
        call = ModelCall(
            scope=scope,
            model=model,
            request=trace.request,
            answer=trace.answer,
            tokens=trace.tokens,
            latency_ms=trace.latency_ms,
            attempts=trace.attempts,
            error_code=trace.error_code if error is not None else None,
            error_message=error,
        )
        await _kept(self._ledger.record(call))

    @_traced
    async def _complete(
        self, model: str, request: ChatRequest, stats: GenerationStats, trace: _Trace
    ) -> str:
        info = self.resolve(model)
        endpoint, _ = await self._endpoint(info)
        shared = self._shared.get(info.name)
        policy = self.retry
        timeout = info.judge_timeout if request.purpose == "judge" else info.timeout
        spent = 0.0  # seconds of requests and pauses so far (not of waits for a place)
        attempt = 0
        while True:
            attempt += 1
            use_schema = request.schema is not None and info.json_schema
            use_schema = use_schema and not endpoint.schema_rejected
            kwargs = _request_kwargs(info, request, use_schema)
            trace.request, trace.attempts, trace.error_code = kwargs, trace.attempts + 1, None
            retry_after: float | None = None
            try:
                stats.requests += 1
                estimate = request.max_tokens + estimate_prompt(kwargs["messages"])
                if shared is not None:  # before the local place: a long wait holds none
                    await shared.admit(estimate)
                async with (
                    endpoint.limit.slot() as slot,
                    _in_flight(shared, estimate, timeout) as charge,
                ):
                    t0 = time.monotonic()  # the request's own clock starts with its place
                    try:
                        response = await endpoint.client.create(kwargs, timeout)
                    except ChatError as exc:
                        trace.error_code = exc.kind
                        metrics.model_failed(model, exc.kind)
                        if _overloaded(exc):
                            slot.overload(exc.retry_after)
                        if shared is not None and _holds_all(exc):
                            await shared.overloaded(exc.retry_after, exc.kind == "rate_limited")
                        raise
                    finally:
                        spent += time.monotonic() - t0
                        trace.latency_ms = (time.monotonic() - t0) * 1000
                    trace.response = response
                    usage = response.get("usage") or {}
                    content = _content(response)
                    trace.tokens = counted(usage, kwargs["messages"], content)
                    charge.used = trace.tokens.prompt_tokens + trace.tokens.completion_tokens
                stats.llm_seconds += time.monotonic() - t0
                stats.prompt_tokens += int(usage.get("prompt_tokens") or 0)
                stats.completion_tokens += int(usage.get("completion_tokens") or 0)
                trace.answer = content
                add(stats.usage, model, trace.tokens)
                if content is None:
                    trace.error_code = "no_choices"
                    metrics.model_failed(model, trace.error_code, trace.tokens)
                    raise LLMTransportError(f"{model}: answer without choices")
                metrics.model_answered(model, trace.tokens)
                return _clean(content, info)
            except ChatError as exc:
                if exc.status == 400 and use_schema:
                    # The endpoint does not take response_format: put the schema in the prompt.
                    endpoint.schema_rejected = True
                    stats.fallbacks += 1
                    attempt -= 1
                    continue
                if exc.kind == "client":
                    stats.failures += 1
                    raise LLMTransportError(f"{model}: {_short(exc.message)}") from exc
                counter = _ERROR_COUNTERS[exc.kind]
                setattr(stats, counter, getattr(stats, counter) + 1)
                error = exc.message if exc.kind != "server" else f"HTTP {exc.status}"
                failed = LLMTimeout if exc.kind == "timeout" else LLMTransportError
                retry_after = exc.retry_after
            delay = Backoff(policy.base_delay, policy.max_delay, jitter=True).delay(attempt)
            if retry_after is not None:
                delay = min(max(delay, retry_after), policy.max_delay)
            if attempt >= policy.max_attempts or spent + delay > policy.budget_seconds:
                stats.failures += 1
                raise failed(f"{model}: {error} (after {attempt} attempts)")
            stats.retries += 1
            spent += delay
            await asyncio.sleep(delay)

    async def aclose(self) -> None:
        endpoints, self._endpoints = list(self._endpoints.values()), {}
        self._limits = {}
        for endpoint in endpoints:
            await endpoint.client.aclose()
        await self.local.aclose()


async def _kept(write: Coroutine[Any, Any, None]) -> None:
    """A ledger write that the caller's cancellation (a sibling request's failure cancels the
    others of a judge's) does not cut short: a call whose answer came is recorded, so a replay
    finds it. In a job of `gather_or_fail` that its gather stopped, the cancellation does not
    cut the call short either (the job stops at its next call): its answer or failure is what
    the ledger says."""
    try:
        await asyncio.shield(write)
    except asyncio.CancelledError:
        stop = gather_stop()
        if stop is None or not stop.is_set():
            raise


def _served_call(
    scope: CallScope, model: str, body: dict[str, Any], found: Recorded, served: Served
) -> ModelCall:
    """The ledger's record of a call answered from a ledger: nothing sent, nothing spent."""
    return ModelCall(
        scope=scope,
        model=model,
        request=body,
        answer=found.answer,
        tokens=TokenCount(),
        latency_ms=0.0,
        attempts=0,
        error_code=found.error_code,
        error_message=found.error_message,
        served=served,
        served_from=found.episode_id,
    )


def _request_kwargs(info: ModelInfo, request: ChatRequest, use_schema: bool) -> dict[str, Any]:
    messages = [dict(m) for m in request.messages]
    kwargs: dict[str, Any] = {**info.extra_body, "model": info.model}
    if request.schema is not None and use_schema:
        kwargs["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": request.schema_name, "schema": request.schema},
        }
    elif request.schema is not None:
        # In the first user message, where it stays as the conversation grows (prefix caches).
        target = next(m for m in messages if m["role"] == "user")
        target["content"] += f"\n{SCHEMA_INSTRUCTION} {json.dumps(request.schema)}"
    kwargs["messages"] = messages
    stop = list(request.stop or [])
    if info.provider == "local":
        stop += [t for t in STOP_TOKENS if t not in stop]
    if info.provider == "openai":
        kwargs["max_completion_tokens"] = request.max_tokens
        if not is_reasoning_model(info):
            kwargs["temperature"] = request.temperature
    else:
        kwargs["max_tokens"] = request.max_tokens
        kwargs["temperature"] = request.temperature
    if stop and not is_reasoning_model(info):
        kwargs["stop"] = stop[:4] if info.provider == "openai" else stop
    return kwargs


_ERROR_COUNTERS = {
    "timeout": "timeouts",
    "connection": "transport_errors",
    "rate_limited": "rate_limited",
    "server": "server_errors",
}


def _content(response: dict[str, Any]) -> str | None:
    """The first choice's text ("" for a null content), or None when there is no choice."""
    try:
        message = response["choices"][0]["message"]
    except (KeyError, IndexError, TypeError):
        return None
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, str) else ""


def _clean(text: str, info: ModelInfo) -> str:
    """The reply as the engine reads it: well formed (engine/parsing.py), without the local
    model's stop tokens."""
    text = well_formed(text)
    if info.provider == "local":
        for token in STOP_TOKENS:
            text = text.replace(token, "")
    return text


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
