"""Reading episodes."""

from typing import Any, Unpack

from parley.core.errors import searchable_tag
from parley.resolvers.keyset import newest_first
from parley.resolvers.pagination import Page, PageArgs, fetch_hits
from parley.resolvers.search import Hit, search_all, tag_terms
from parley.storage.models import UNFINISHED, EpisodeLog, EpisodeStatus
from parley.storage.records import get_or_none

EPISODES = newest_first("episodes")


async def get_episode(pk: str) -> EpisodeLog | None:
    return await get_or_none(EpisodeLog, pk)


def episode_query(
    *,
    tag: str | None = None,
    status: EpisodeStatus | None = None,
    agent_id: str | None = None,
    scenario_id: str | None = None,
    experiment_id: str | None = None,
    parent_id: str | None = None,
    finished: bool = False,
) -> Any:
    """The episodes matching the filters (listed in the order of EPISODES); `finished`: none
    that is still unfinished (Sotopia's, which have no status, are finished)."""
    terms = tag_terms(
        EpisodeLog,
        tag=tag,
        experiment_id=experiment_id,
        environment=scenario_id,
        parent_id=parent_id,
    )
    if status is not None:
        terms.append(EpisodeLog.status == status.value)
    if agent_id:
        terms.append(EpisodeLog.agents << [searchable_tag(agent_id)])  # type: ignore[operator]
    if finished:
        terms.append(~(EpisodeLog.status << [s.value for s in UNFINISHED]))  # type: ignore[operator]
    return EpisodeLog.find(*terms)


async def find_episodes(
    *,
    tag: str | None = None,
    status: EpisodeStatus | None = None,
    agent_id: str | None = None,
    scenario_id: str | None = None,
    parent_id: str | None = None,
    **page: Unpack[PageArgs],
) -> Page[Hit[EpisodeLog]]:
    """Newest first unless asked otherwise, each record read only when first needed
    (resolvers/search.py)."""
    query = episode_query(
        tag=tag, status=status, agent_id=agent_id, scenario_id=scenario_id, parent_id=parent_id
    )
    return await fetch_hits(query, EPISODES, **page)


FAMILY_MAX = 1000
"""At most this many episodes of one family are read (a root and its forks, theirs, ...)."""


async def forks_of(pk: str) -> list[EpisodeLog]:
    """The episodes forked from this one, oldest first."""
    found: list[EpisodeLog] = await search_all(
        EpisodeLog.find(EpisodeLog.parent_id == searchable_tag(pk)), EPISODES
    )
    return sorted(found, key=lambda e: (e.created_at, str(e.pk)))


async def family(pk: str) -> list[EpisodeLog]:
    """The episode's whole family: its root (the first ancestor still stored) and every fork
    under it, each after its parent (depth first, forks oldest first); empty when it is gone."""
    root = await get_or_none(EpisodeLog, pk)
    if root is None:
        return []
    seen = {pk}
    while root.parent_id and root.parent_id not in seen:
        parent = await get_or_none(EpisodeLog, root.parent_id)
        if parent is None:
            break
        seen.add(root.parent_id)
        root = parent
    members: list[EpisodeLog] = []
    stack, visited = [root], set()
    while stack and len(members) < FAMILY_MAX:
        member = stack.pop()
        if str(member.pk) in visited:
            continue
        visited.add(str(member.pk))
        members.append(member)
        stack += reversed(await forks_of(str(member.pk)))
    return members
