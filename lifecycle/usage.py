"""An episode's token usage as stored: one row per model, priced from the models file, and the
totals that usage aggregates sum (indexed on the record)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from parley.engine.usage import Prices, TokenCount, Usage
from parley.storage.models import EpisodeLog

PriceOf = Callable[[str], Prices | None]


def stored_usage(episode: EpisodeLog) -> Usage:
    """What earlier attempts of the episode recorded (a resumed attempt adds to it)."""
    return {
        row.model: TokenCount(
            prompt_tokens=row.prompt_tokens,
            completion_tokens=row.completion_tokens,
            estimated_tokens=row.estimated_tokens,
            estimated=row.estimated,
        )
        for row in episode.usage
    }


def usage_rows(usage: Usage, price_of: PriceOf) -> list[dict[str, Any]]:
    """ModelUsage rows as JSON values, by model name (built as dicts: this runs every turn)."""
    rows = []
    for model in sorted(usage):
        count = usage[model]
        prices = price_of(model)
        rows.append(
            {
                "model": model,
                "prompt_tokens": count.prompt_tokens,
                "completion_tokens": count.completion_tokens,
                "estimated": count.estimated,
                "estimated_tokens": count.estimated_tokens,
                "cost": prices.cost(count) if prices is not None else None,
            }
        )
    return rows


def usage_fields(usage: Usage, price_of: PriceOf) -> dict[str, Any]:
    """The episode fields that hold its usage (JSON values): the rows, and the totals usage
    aggregates sum (indexed on the record). A worker writes them with every turn."""
    rows = usage_rows(usage, price_of)
    prompt = completion = estimated = 0
    cost: float | None = 0.0 if rows else None
    for row in rows:
        prompt += row["prompt_tokens"]
        completion += row["completion_tokens"]
        estimated += row["estimated_tokens"]
        # None unless every model used has prices: a partial sum would understate it
        cost = None if cost is None or row["cost"] is None else cost + row["cost"]
    return {
        "usage": rows,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "estimated_tokens": estimated,
        "cost": None if cost is None else round(cost, 12),
    }
