"""Tokens and cost summed over many episodes, in Redis: one FT.AGGREGATE over the episode
index's sortable usage totals (no episode is loaded)."""

from dataclasses import dataclass

from parley.resolvers.episodes import episode_query
from parley.resolvers.results import aggregate_rows
from parley.storage.models import EpisodeLog, EpisodeStatus


@dataclass(frozen=True)
class UsageTotals:
    episodes: int
    """Episodes matched (whatever their usage)."""
    prompt_tokens: int
    completion_tokens: int
    estimated_tokens: int
    """How many of the tokens were estimated (no count from the provider)."""
    cost: float | None
    """US dollars summed over the priced episodes; None when none is priced."""
    priced_episodes: int
    """Episodes with a cost (every model they used has prices)."""


_SUMS = ("prompt_tokens", "completion_tokens", "estimated_tokens", "cost", "priced")


def usage_query(
    *, tag: str | None = None, experiment_id: str | None = None, status: EpisodeStatus | None = None
) -> str:
    query = episode_query(tag=tag, experiment_id=experiment_id, status=status)
    return str(query.query)


async def usage_totals(
    *, tag: str | None = None, experiment_id: str | None = None, status: EpisodeStatus | None = None
) -> UsageTotals:
    args: list[str | int] = ["FT.AGGREGATE", EpisodeLog.Meta.index_name]
    args += [usage_query(tag=tag, experiment_id=experiment_id, status=status)]
    args += ["APPLY", "exists(@cost)", "AS", "priced", "GROUPBY", 0, "REDUCE", "COUNT", 0]
    args += ["AS", "episodes"]
    for name in _SUMS:
        args += ["REDUCE", "SUM", 1, f"@{name}", "AS", name]
    args += ["DIALECT", 2]
    client = EpisodeLog.db()  # type: ignore[no-untyped-call]
    row = (await aggregate_rows(client, args) or [{}])[0]
    number = {name: float(row.get(name) or 0) for name in ("episodes", *_SUMS)}
    priced = int(number["priced"])
    return UsageTotals(
        episodes=int(number["episodes"]),
        prompt_tokens=int(number["prompt_tokens"]),
        completion_tokens=int(number["completion_tokens"]),
        estimated_tokens=int(number["estimated_tokens"]),
        cost=round(number["cost"], 9) if priced else None,
        priced_episodes=priced,
    )
