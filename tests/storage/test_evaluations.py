"""An evaluation's writes: a re-judging queued, an evaluation stored, and the records and
re-judgings imported episodes carry."""

import time
import uuid
from typing import Any

import redis.asyncio as redis

from bench.support.episodes import queued_episode
from parley.engine.types import Aggregate, JudgeSpec
from parley.storage import evaluations, keys
from parley.storage.episode_store import EpisodeStore
from parley.storage.jobs import JobKind
from parley.storage.models import EpisodeLog, Evaluation, EvaluationStatus
from parley.storage.times import stored_time
from tests.support.jobs import private_queue, queued_jobs

FIELDS = {"environment": "env", "agents": ["a", "b"], "tag": "t", "models": ["judge", "m1", "m2"]}


async def stored_episodes(client: redis.Redis, count: int) -> list[str]:
    made = [queued_episode("evaluations") for _ in range(count)]
    await EpisodeStore(client).create(made, f"parley:test-evaluations:{uuid.uuid4().hex}")
    return [str(episode.pk) for episode in made]


def queued(judge: str = "j") -> Evaluation:
    return Evaluation(id=uuid.uuid4().hex, judge_model=judge, created_at=time.time())


def test_an_evaluation_record_is_grouped_by_its_judge() -> None:
    entry = queued("new-judge")
    record = evaluations.evaluation_record("ep", FIELDS, entry)
    assert record["models"] == ["new-judge", "m1", "m2"]
    assert (record["episode"], record["evaluation"], record["status"]) == ("ep", entry.id, "QUEUED")
    assert evaluations.rejudging_fields(entry)["evaluation_dimension_list_id"] == ""


async def test_a_queued_rejudging_is_its_record_entries_and_jobs(redis_client: redis.Redis) -> None:
    pks = await stored_episodes(redis_client, 2)
    jobs = private_queue(redis_client)
    entry = queued()
    await evaluations.queue_rejudging(redis_client, jobs, entry, [(pk, FIELDS) for pk in pks])
    stored: Any = await redis_client.hgetall(keys.rejudging(entry.id))
    assert stored["judge_model"] == "j" and stored["episodes"] == "2"
    for pk in pks:
        episode = await EpisodeLog.get(pk)
        assert [e.id for e in episode.evaluations] == [entry.id]
        record = await redis_client.json().get(keys.evaluation_record(entry.id, pk))
        assert record == evaluations.evaluation_record(pk, FIELDS, entry)
    assert await queued_jobs(redis_client, jobs) == [
        (JobKind.EVALUATION, pk, entry.id) for pk in pks
    ]


async def test_a_stored_evaluation_reaches_its_episode(redis_client: redis.Redis) -> None:
    (pk,) = await stored_episodes(redis_client, 1)
    jobs = private_queue(redis_client)
    entry = queued()
    await evaluations.queue_rejudging(redis_client, jobs, entry, [(pk, FIELDS)])
    done = entry.model_copy(update={"status": EvaluationStatus.COMPLETED, "rewards": [1.0, 2.0]})
    assert await evaluations.store_evaluation(redis_client, pk, done, count_start=True) == 1
    episode = await EpisodeLog.get(pk)
    assert [(e.status, e.rewards) for e in episode.evaluations] == [
        (EvaluationStatus.COMPLETED, [1.0, 2.0])
    ]
    assert await evaluations.store_evaluation(redis_client, uuid.uuid4().hex, done) == -1


async def test_imported_evaluations_count_their_episodes_once(redis_client: redis.Redis) -> None:
    entry = queued()
    episodes = [queued_episode("evaluations") for _ in range(2)]
    for episode in episodes:
        episode.evaluations = [entry]
    await evaluations.add_imported(redis_client, episodes)
    first = str(episodes[0].pk)
    key = keys.evaluation_record(entry.id, first)
    before = await redis_client.json().get(key)
    assert before == evaluations.evaluation_record(
        first, episodes[0].model_dump(mode="json"), entry
    )
    await redis_client.json().set(key, "$.tag", "kept")
    await evaluations.add_imported(redis_client, episodes[:1])
    assert await redis_client.json().get(key, "$.tag") == ["kept"]  # never overwritten
    stored: Any = await redis_client.hgetall(keys.rejudging(entry.id))
    assert stored["judge_model"] == "j" and stored["episodes"] == "3"


async def test_a_rejudging_read_back_is_the_evaluation_it_queued(redis_client: redis.Redis) -> None:
    """What a re-judging's hash keeps gives back the evaluation it was made from, its time as
    the evaluations keep it (storage/times.py); a hash of before panels, its judge alone."""
    jobs = private_queue(redis_client)
    entry = Evaluation(
        id=uuid.uuid4().hex,
        judge_model="panel(MEDIAN): a x2",
        evaluation_dimension_list_id="dims",
        created_at=1767225600.1234567,  # 17 significant digits: kept to 14
        judges=[JudgeSpec(model="a", repeats=2)],
        judge_aggregate=Aggregate.MEDIAN,
    )
    assert entry.created_at == stored_time(1767225600.1234567)
    await evaluations.queue_rejudging(redis_client, jobs, entry, [])
    stored: Any = await redis_client.hgetall(keys.rejudging(entry.id))
    assert evaluations.stored_rejudging(entry.id, stored) == entry
    old = {"judge_model": "j", "evaluation_dimension_list_id": "", "created_at": "12.5"}
    assert evaluations.stored_rejudging("old", old) == Evaluation(
        id="old", judge_model="j", created_at=12.5
    )
