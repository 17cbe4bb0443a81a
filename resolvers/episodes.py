"""Reading episodes, and rebuilding their event history from what is stored."""

from typing import Any

from resolvers.pagination import Page, fetch_page
from resolvers.records import get_or_none
from storage.events import EpisodeEvent
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
    return await fetch_page(query, first, after)


async def list_tagged(
    tag: str | None, status: EpisodeStatus | None = None, first: int = 100
) -> list[EpisodeLog]:
    """Up to `first` episodes, newest first, whose tag is exactly `tag` (any tag when None).

    The index narrows the search (it matches tags ignoring case); the exact match is made here.
    """
    page = await list_episodes(tag=tag, status=status, first=first)
    return [e for e in page.items if tag is None or e.tag == tag]


def stored_events(episode: EpisodeLog, after: int = 0) -> list[EpisodeEvent]:
    """The episode's events with a sequence above `after`, rebuilt from its stored history."""
    pk = str(episode.pk)
    events: list[EpisodeEvent] = []
    previous: EpisodeStatus | None = None
    for change in episode.status_history:
        if change.sequence > after:
            events.append(
                EpisodeEvent(
                    type="status",
                    episode_id=pk,
                    sequence=change.sequence,
                    at=change.at,
                    attempt=change.attempt,
                    tag=episode.tag,
                    status=change.status,
                    previous_status=previous,
                    reason=change.reason,
                )
            )
        previous = change.status
    for turn in episode.turns:
        if turn.sequence > after:
            events.append(
                EpisodeEvent(
                    type="turn",
                    episode_id=pk,
                    sequence=turn.sequence,
                    at=turn.at,
                    attempt=episode.attempt,
                    tag=episode.tag,
                    turn=turn,
                )
            )
    return sorted(events, key=lambda e: e.sequence)
