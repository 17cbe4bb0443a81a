"""The usage fields a worker writes with each turn: ModelUsage rows, priced, and their totals."""

import json
from typing import Any

from parley.engine.usage import Prices, TokenCount, Usage
from parley.lifecycle.usage import usage_fields
from parley.storage.models import EpisodeLog, ModelUsage

PRICES = {"a": Prices(prompt=2.0, completion=8.0), "j": Prices(prompt=0.0, completion=1.0)}


def decoded(usage: Usage) -> dict[str, Any]:
    """The fields as the record holds them (they are sent as JSON)."""
    fields: dict[str, Any] = json.loads(json.dumps(usage_fields(usage, PRICES.get)))
    return fields


def test_rows_are_model_usage_records_with_prices_and_totals() -> None:
    fields = decoded(
        {
            "j": TokenCount(prompt_tokens=1_000_000, completion_tokens=10),
            "a": TokenCount(
                prompt_tokens=500, completion_tokens=250, estimated_tokens=250, estimated=True
            ),
        }
    )
    rows = fields["usage"]
    assert [row["model"] for row in rows] == ["a", "j"]
    for row in rows:  # the shape of storage's ModelUsage, field for field
        assert ModelUsage.model_validate(row).model_dump() == row
    assert rows[0]["cost"] == (500 * 2.0 + 250 * 8.0) / 1e6 and rows[1]["cost"] == 10 / 1e6
    assert fields["prompt_tokens"] == 1_000_500 and fields["completion_tokens"] == 260
    assert fields["estimated_tokens"] == 250
    assert fields["cost"] == round(rows[0]["cost"] + rows[1]["cost"], 12)
    episode = EpisodeLog.model_validate({"environment": "s", "agents": ["x"], **fields})
    assert episode.cost == fields["cost"] and episode.usage[0].estimated


def test_a_model_without_prices_leaves_the_episode_cost_null() -> None:
    fields = decoded({"a": TokenCount(prompt_tokens=5), "free": TokenCount(prompt_tokens=7)})
    assert [row["cost"] for row in fields["usage"]] == [0.00001, None]
    assert fields["cost"] is None
    assert decoded({}) == {
        "usage": [],
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "estimated_tokens": 0,
        "cost": None,
    }
