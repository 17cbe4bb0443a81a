"""The episodes a choice names: by ids, the episodes now filling an experiment's slots (of one
its budget or precision stopped, those it played), or every episode with a tag (exactly one of
the three), at most `limit` of them. A rating study rates
them; agreement between evaluations is measured over them."""

import redis.asyncio as redis

from parley.core.errors import BadArgument, ErrorCode, UserError, not_found, searchable_tag
from parley.resolvers.episodes import EPISODES, episode_query
from parley.resolvers.keyset import SortOrder
from parley.resolvers.search import search
from parley.resolvers.study_fields import EpisodeChoice
from parley.storage.experiments import ExperimentStore

AT = ["input", "episodes"]


async def chosen_episodes(
    client: redis.Redis, choice: EpisodeChoice, limit: int
) -> tuple[list[str], list[UserError]]:
    """The ids of the episodes `choice` names, in its order (not checked to be stored or
    completed), or why there are none."""
    given = [name for name in ("ids", "experiment_id", "tag") if getattr(choice, name)]
    if len(given) != 1:
        message = "name the episodes by exactly one of ids, experimentId or tag"
        return [], [UserError(AT, message, ErrorCode.INVALID)]
    if choice.ids:
        twice = sorted({pk for pk in choice.ids if choice.ids.count(pk) > 1})
        if twice:
            message = f"episode {twice[0]!r} is listed twice"
            return [], [UserError([*AT, "ids"], message, ErrorCode.INVALID)]
        return list(choice.ids), []
    if choice.experiment_id:
        return await _of_experiment(client, choice.experiment_id)
    assert choice.tag is not None
    return await _tagged(choice.tag, limit)


async def _of_experiment(client: redis.Redis, pk: str) -> tuple[list[str], list[UserError]]:
    store = ExperimentStore(client)
    experiment = await store.get(pk)
    if experiment is None:
        return [], [not_found("experiment", pk, "episodes")]
    filled = await store.slots(pk)
    empty = experiment.slot_count - len(filled)
    if empty and experiment.stopped is None:  # a stopped one holds its empty slots for good
        message = f"{empty} slots of experiment {pk!r} have no episode yet: start it first"
        return [], [UserError([*AT, "experimentId"], message, ErrorCode.CONFLICT)]
    return [filled[n] for n in sorted(filled)], []


async def _tagged(tag: str, limit: int) -> tuple[list[str], list[UserError]]:
    at = [*AT, "tag"]
    try:
        query = episode_query(tag=searchable_tag(tag))
    except BadArgument as err:
        return [], [UserError(at, str(err), ErrorCode.INVALID)]
    found = await search(query, EPISODES, SortOrder.ASCENDING, None, limit)
    if found.total > limit:
        message = f"{found.total} episodes have tag {tag!r}: at most {limit} can be chosen"
        return [], [UserError(at, message, ErrorCode.INVALID)]
    if not found.total:
        return [], [UserError(at, f"no episode has tag {tag!r}", ErrorCode.INVALID)]
    return [str(record.pk) for record in found.records], []
