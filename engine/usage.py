"""Tokens per model: the provider's `usage` counts, or an estimate when it sends none.

The estimate is OpenAI's rule of thumb of about four characters per token of English text
(rounded up, plus a few tokens of framing per message). It needs no tokenizer, so it costs
nothing and works for every model; it is marked as an estimate wherever it is shown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD = 4
"""Tokens of role and framing around each chat message (OpenAI's chat format uses about 4)."""


@dataclass(frozen=True, slots=True)
class TokenCount:
    """Tokens one model spent, summed over calls (a plain dataclass: one is made per call)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated_tokens: int = 0
    """How many of these tokens were estimated (the provider sent no count for them)."""
    estimated: bool = False
    """Some call's counts were estimated."""

    def __add__(self, other: TokenCount) -> TokenCount:
        return TokenCount(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            estimated_tokens=self.estimated_tokens + other.estimated_tokens,
            estimated=self.estimated or other.estimated,
        )


Usage = dict[str, TokenCount]
"""Tokens by model name (as the episode names it)."""


def estimate_text(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


def estimate_prompt(messages: Sequence[Mapping[str, str]]) -> int:
    return sum(MESSAGE_OVERHEAD + estimate_text(m.get("content", "")) for m in messages)


def _reported(usage: Any, key: str) -> int | None:
    value = usage.get(key) if isinstance(usage, dict) else None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def counted(
    usage: Any, messages: Sequence[Mapping[str, str]], completion: str | None
) -> TokenCount:
    """One answered call's tokens: the provider's `usage`, each count it lacks estimated."""
    prompt = _reported(usage, "prompt_tokens")
    reply = _reported(usage, "completion_tokens")
    missing = prompt is None or reply is None
    estimated = 0
    if prompt is None:
        prompt = estimate_prompt(messages)
        estimated += prompt
    if reply is None:
        reply = estimate_text(completion or "")
        estimated += reply
    return TokenCount(
        prompt_tokens=prompt,
        completion_tokens=reply,
        estimated_tokens=estimated,
        estimated=missing,
    )


def add(usage: Usage, model: str, count: TokenCount) -> None:
    usage[model] = usage[model] + count if model in usage else count


def merged(*usages: Mapping[str, TokenCount]) -> Usage:
    out: Usage = {}
    for usage in usages:
        for model, count in usage.items():
            add(out, model, count)
    return out


class Prices(BaseModel, frozen=True):
    """US dollars per million tokens."""

    prompt: float
    completion: float

    def cost(self, count: TokenCount) -> float:
        dollars = count.prompt_tokens * self.prompt + count.completion_tokens * self.completion
        return round(dollars / 1_000_000, 12)
