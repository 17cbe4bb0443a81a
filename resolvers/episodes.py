"""Reading episodes."""

from collections.abc import Collection
from typing import Any

from resolvers.pagination import Page, fetch_page
from resolvers.records import get_or_none
from storage.models import EpisodeLog, EpisodeStatus


async def get_episode(pk: str) -> EpisodeLog | None:
    return await get_or_none(EpisodeLog, pk)


async def list_episodes(
    *,
    tag: str | None = None,
    status: EpisodeStatus | None = None,
    agent_id: str | None = None,
    scenario_id: str | None = None,
    first: int | None = None,
    after: str | None = None,
    fields: Collection[str] | None = None,
) -> Page[EpisodeLog]:
    """Newest first."""
    terms: list[Any] = []
    if tag:
        terms.append(EpisodeLog.tag == tag)
    if status is not None:
        terms.append(EpisodeLog.status == status.value)
    if agent_id:
        terms.append(EpisodeLog.agents << [agent_id])  # type: ignore[operator]
    if scenario_id:
        terms.append(EpisodeLog.environment == scenario_id)
    query = EpisodeLog.find(*terms).sort_by("-created_at")
    return await fetch_page(query, first, after, fields)
