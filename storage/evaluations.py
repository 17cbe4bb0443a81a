"""An evaluation's writes: kept in its episode's `evaluations` and, for results, in its own
record (storage/lua/set_evaluation.lua)."""

import json
from typing import NamedTuple

import redis.asyncio as redis

from parley.storage import keys
from parley.storage.models import EpisodeLog, Evaluation
from parley.storage.scripts import Script


class EvaluationKeys(NamedTuple):
    episode: str
    record: str


class EvaluationArgs(NamedTuple):
    path: str
    entry: str
    status: str
    rewards: str
    count_start: str
    fills: str
    reasoning: str
    prompt: str


SET_EVALUATION = Script("set_evaluation", EvaluationKeys, EvaluationArgs)


async def store_evaluation(
    client: redis.Redis,
    episode_id: str,
    entry: Evaluation,
    count_start: bool = False,
    fills: str | None = None,
) -> int:
    """Write the evaluation; with `fills` (the judge's prompt), its scores become the episode's
    own too, if the episode still has none. The starts so far (`count_start` counts one), or
    -1 when the episode is gone."""
    result = await SET_EVALUATION(
        client,
        EvaluationKeys(
            EpisodeLog.make_primary_key(episode_id), keys.evaluation_record(entry.id, episode_id)
        ),
        EvaluationArgs(
            path=f"$.evaluations[?(@.id=={json.dumps(entry.id)})]",
            entry=entry.model_dump_json(),
            status=entry.status.value,
            rewards=json.dumps(entry.rewards),
            count_start="1" if count_start else "",
            fills="" if fills is None else "1",
            reasoning=entry.reasoning,
            prompt=fills or "",
        ),
    )
    return int(result)
