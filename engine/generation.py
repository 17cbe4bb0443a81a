"""Ask a model, check the answer, re-ask once with the error: the repair loop."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from parley.engine.errors import LLMOutputError
from parley.engine.ledger import CallPurpose, scoped
from parley.engine.llm import ChatRequest, LLMRouter
from parley.engine.parsing import InvalidOutput
from parley.engine.prompts import repair_message
from parley.engine.stats import GenerationStats

Repair = Callable[[ChatRequest, str, str], ChatRequest]
"""Builds the re-ask from the request, the unusable answer and what is wrong with it."""


def show_error(prefill: str | None = None) -> Repair:
    """Re-ask with the answer and its error in the conversation (models that follow such talk).

    `prefill` is an open assistant turn the model continues (kept after the re-ask).
    """

    def repair(request: ChatRequest, answer: str, error: str) -> ChatRequest:
        messages = [m for m in request.messages if not (prefill and m["role"] == "assistant")]
        messages.append({"role": "assistant", "content": (prefill or "") + answer[:2000]})
        messages.append(repair_message(error, request.schema is not None))
        if prefill:
            messages.append({"role": "assistant", "content": prefill})
        return replace(request, messages=messages)

    return repair


def hotter(step: float = 0.4, ceiling: float = 1.3) -> Repair:
    """Re-ask the same prompt at a higher temperature (small models do not follow talk about
    their own answers, and the same prompt keeps the server's prompt cache)."""

    def repair(request: ChatRequest, answer: str, error: str) -> ChatRequest:
        return replace(request, temperature=min(request.temperature + step, ceiling))

    return repair


async def ask[T](
    llm: LLMRouter,
    model: str,
    request: ChatRequest,
    parse: Callable[[str], T],
    stats: GenerationStats,
    repair: Repair | None = None,
) -> T:
    """Return parse(answer); on InvalidOutput re-ask once (by default showing the model its
    error). Raises LLMOutputError when the second answer is unusable too."""
    answer = await llm.complete(model, request, stats)
    try:
        return parse(answer)
    except InvalidOutput as exc:
        stats.invalid_outputs += 1
        first_error = str(exc)
    stats.repairs += 1
    retry = (repair or show_error())(request, answer, first_error)
    with scoped(purpose=CallPurpose.REASK):
        answer = await llm.complete(model, retry, stats)
    try:
        return parse(answer)
    except InvalidOutput as exc:
        stats.invalid_outputs += 1
        stats.failures += 1
        raise LLMOutputError(
            f"{model}: unusable answer after a re-ask: {exc} (first: {first_error}); "
            f"answer was {answer[:200]!r}"
        ) from exc
