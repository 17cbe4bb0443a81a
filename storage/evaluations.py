"""An evaluation's writes: kept in its episode's `evaluations` and, for results, in its own
record (storage/lua/set_evaluation.lua); a re-judging's record and its queued evaluations."""

import json
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import redis.asyncio as redis
from redis.typing import EncodableT, FieldT

from parley.engine.types import Aggregate
from parley.storage import keys
from parley.storage.jobs import JobKind, JobQueue
from parley.storage.models import EpisodeLog, Evaluation
from parley.storage.scripts import Script

QUEUE_BATCH = 500
"""Episodes a re-judging queues in one transaction."""


class EvaluationKeys(NamedTuple):
    episode: str
    record: str
    scores: str


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
            EpisodeLog.make_primary_key(episode_id),
            keys.evaluation_record(entry.id, episode_id),
            keys.SCORES_VERSION,
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


def evaluation_record(episode_id: str, fields: dict[str, Any], entry: Evaluation) -> dict[str, Any]:
    """What results group an evaluation's scores by: the episode's scenario, agents, tag,
    experiment, arm and seat models, with the evaluation's judge in `models[0]`."""
    models = list(fields.get("models") or [])
    return {
        "episode": episode_id,
        "evaluation": entry.id,
        "environment": fields.get("environment"),
        "agents": fields.get("agents") or [],
        "tag": fields.get("tag") or "",
        "experiment_id": fields.get("experiment_id") or "",
        "arm": fields.get("arm") or "",
        "models": [entry.judge_model, *models[1:]],
        "evaluation_dimension_list_id": entry.evaluation_dimension_list_id,
        "status": entry.status.value,
        "rewards": entry.rewards,
        "starts": 0,
    }


def rejudging_fields(entry: Evaluation) -> dict[FieldT, EncodableT]:
    """The stored re-judging an evaluation belongs to (its count of episodes apart)."""
    return {
        "judge_model": entry.judge_model,
        "judges": json.dumps([judge.model_dump() for judge in entry.judges]),
        "judge_aggregate": entry.judge_aggregate.value,
        "evaluation_dimension_list_id": entry.evaluation_dimension_list_id or "",
        "created_at": entry.created_at,
    }


def stored_rejudging(rejudging_id: str, stored: Mapping[str, str]) -> Evaluation:
    """The evaluation a stored re-judging's hash (`rejudging_fields`) holds, as queued (a
    re-judging stored before panels has neither judges nor an aggregate: its judge alone)."""
    return Evaluation.model_validate(
        {
            "id": rejudging_id,
            "judge_model": stored["judge_model"],
            "evaluation_dimension_list_id": stored.get("evaluation_dimension_list_id") or None,
            "created_at": stored["created_at"],
            "judges": json.loads(stored.get("judges") or "[]"),
            "judge_aggregate": stored.get("judge_aggregate") or Aggregate.MEAN,
        }
    )


async def queue_rejudging(
    client: redis.Redis,
    jobs: JobQueue,
    queued: Evaluation,
    episodes: Sequence[tuple[str, dict[str, Any]]],
    experiment_id: str | None = None,
) -> None:
    """Store the re-judging `queued` (an evaluation not yet begun) of `episodes` (id, stored
    fields): the re-judging's record (listed under `experiment_id`, the experiment it was made
    from, if any), then, a batch at a time, each episode's entry of it, its record for results
    and its job."""
    entry = queued.model_dump(mode="json")
    stored = rejudging_fields(queued) | {"episodes": len(episodes)}
    async with client.pipeline(transaction=True) as pipe:
        pipe.hset(keys.rejudging(queued.id), mapping=stored)
        if experiment_id is not None:
            pipe.hset(keys.rejudging(queued.id), "experiment_id", experiment_id)
            pipe.zadd(keys.experiment_rejudgings(experiment_id), {queued.id: queued.created_at})
        await pipe.execute()
    for start in range(0, len(episodes), QUEUE_BATCH):
        async with client.pipeline(transaction=True) as pipe:
            for pk, fields in episodes[start : start + QUEUE_BATCH]:
                key = EpisodeLog.make_primary_key(pk)
                pipe.execute_command("JSON.SET", key, "$.evaluations", "[]", "NX")
                pipe.execute_command("JSON.ARRAPPEND", key, "$.evaluations", json.dumps(entry))
                pipe.json().set(
                    keys.evaluation_record(queued.id, pk),
                    "$",
                    evaluation_record(pk, fields, queued),
                )
                jobs.add(pipe, JobKind.EVALUATION, pk, queued.id)
            pipe.incr(keys.SCORES_VERSION)
            await pipe.execute()


async def experiment_rejudgings(client: redis.Redis, experiment_id: str) -> list[str]:
    """The ids of the re-judgings made of an experiment's episodes, oldest first."""
    found: list[Any] = await client.zrange(keys.experiment_rejudgings(experiment_id), 0, -1)
    return [str(pk) for pk in found]


async def list_imported_rejudgings(
    client: redis.Redis, experiment_id: str, rejudging_ids: Sequence[str]
) -> None:
    """List under an imported experiment the re-judgings made of it that its export named,
    those an import stored (from its episodes' evaluations) and no other experiment's, each at
    its creation time."""
    async with client.pipeline(transaction=False) as pipe:
        for pk in rejudging_ids:
            pipe.hmget(keys.rejudging(pk), ["created_at", "experiment_id"])
        found: list[Any] = await pipe.execute()
    async with client.pipeline(transaction=True) as pipe:
        for pk, (created, made_of) in zip(rejudging_ids, found, strict=True):
            if created is not None and made_of in (None, experiment_id):
                pipe.hset(keys.rejudging(pk), "experiment_id", experiment_id)
                pipe.zadd(keys.experiment_rejudgings(experiment_id), {pk: float(created)}, nx=True)
        await pipe.execute()


async def add_imported(client: redis.Redis, episodes: Sequence[EpisodeLog]) -> None:
    """The records results read a re-judging's scores from, and the re-judgings themselves,
    for the evaluations newly imported episodes carry (none is overwritten)."""
    async with client.pipeline(transaction=False) as pipe:
        for episode in episodes:
            pk = str(episode.pk)
            fields = episode.model_dump(mode="json")
            for entry in episode.evaluations:
                record = evaluation_record(pk, fields, entry)
                key = keys.evaluation_record(entry.id, pk)
                pipe.execute_command("JSON.SET", key, "$", json.dumps(record), "NX")
                for field, value in rejudging_fields(entry).items():
                    pipe.hsetnx(keys.rejudging(entry.id), field, value)
                pipe.hincrby(keys.rejudging(entry.id), "episodes", 1)
        await pipe.execute()
