"""Reading episodes."""

from collections.abc import Collection
from typing import Any

from resolvers.errors import searchable_tag
from resolvers.pagination import Page, fetch_hits, fetch_page
from resolvers.records import get_or_none
from resolvers.search import Hit
from storage.models import EpisodeLog, EpisodeStatus
from storage.tracking import TrackedDocuments


async def get_episode(pk: str) -> EpisodeLog | None:
    return await get_or_none(EpisodeLog, pk)


def episode_query(
    *,
    tag: str | None = None,
    status: EpisodeStatus | None = None,
    agent_id: str | None = None,
    scenario_id: str | None = None,
    experiment_id: str | None = None,
) -> Any:
    """Newest first."""
    terms: list[Any] = []
    if tag:
        terms.append(EpisodeLog.tag == searchable_tag(tag))
    if experiment_id:
        terms.append(EpisodeLog.experiment_id == searchable_tag(experiment_id))
    if status is not None:
        terms.append(EpisodeLog.status == status.value)
    if agent_id:
        terms.append(EpisodeLog.agents << [agent_id])  # type: ignore[operator]
    if scenario_id:
        terms.append(EpisodeLog.environment == scenario_id)
    return EpisodeLog.find(*terms).sort_by("-created_at")


async def list_episodes(
    *,
    tag: str | None = None,
    status: EpisodeStatus | None = None,
    agent_id: str | None = None,
    scenario_id: str | None = None,
    first: int | None = None,
    after: str | None = None,
) -> Page[EpisodeLog]:
    """Newest first, whole records."""
    query = episode_query(tag=tag, status=status, agent_id=agent_id, scenario_id=scenario_id)
    return await fetch_page(query, first, after)


async def find_episodes(
    *,
    tag: str | None = None,
    status: EpisodeStatus | None = None,
    agent_id: str | None = None,
    scenario_id: str | None = None,
    first: int | None = None,
    after: str | None = None,
    fields: Collection[str] | None = None,
    documents: TrackedDocuments | None = None,
) -> Page[Hit[EpisodeLog]]:
    """Newest first, each record read only when first needed (resolvers/search.py)."""
    query = episode_query(tag=tag, status=status, agent_id=agent_id, scenario_id=scenario_id)
    return await fetch_hits(query, first, after, fields, documents)
