"""Ask a model, check the answer, re-ask once with the error: the repair loop."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from engine.errors import LLMOutputError
from engine.llm import ChatRequest, LLMRouter
from engine.parsing import InvalidOutput
from engine.prompts import repair_message
from engine.stats import GenerationStats


async def ask[T](
    llm: LLMRouter,
    model: str,
    request: ChatRequest,
    parse: Callable[[str], T],
    stats: GenerationStats,
    prefill: str | None = None,
) -> T:
    """Return parse(answer); on InvalidOutput re-ask once, showing the model its error.

    `prefill` is an open assistant turn the model continues (kept after a re-ask).
    Raises LLMOutputError when the second answer is unusable too.
    """
    answer = await llm.complete(model, request, stats)
    try:
        return parse(answer)
    except InvalidOutput as exc:
        stats.invalid_outputs += 1
        first_error = str(exc)
    messages = [m for m in request.messages if not (prefill and m["role"] == "assistant")]
    messages.append({"role": "assistant", "content": (prefill or "") + answer[:2000]})
    messages.append(repair_message(first_error, request.schema is not None))
    if prefill:
        messages.append({"role": "assistant", "content": prefill})
    stats.repairs += 1
    answer = await llm.complete(model, replace(request, messages=messages), stats)
    try:
        return parse(answer)
    except InvalidOutput as exc:
        stats.invalid_outputs += 1
        stats.failures += 1
        raise LLMOutputError(
            f"{model}: unusable answer after a re-ask: {exc} (first: {first_error}); "
            f"answer was {answer[:200]!r}"
        ) from exc
