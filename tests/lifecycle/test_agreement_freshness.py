"""Kept agreement figures against a real Redis: asked again while nothing they come from
changed, they are answered from one read of their inputs' version (no episode, rating or search
read reaches Redis, as its INFO commandstats count); after any change (a new rating, the
episodes' judge scoring again, a re-judging finishing, an episode deleted, an episode added to a
tag) the answer is what figures computed afresh give. The study is made and rated over real
HTTP; the figures are asked in this process."""

import time
import uuid
from typing import Any

import pytest
import redis.asyncio as redis

from parley.engine.types import OVERALL_SCORE
from parley.lifecycle.evaluation_agreement import evaluation_agreement_of
from parley.lifecycle.kept_figures import KeptFigures
from parley.lifecycle.studies import Studies
from parley.resolvers.evaluation_agreement import EvaluationDimension
from parley.storage import evaluations, keys
from parley.storage.episode_store import EpisodeStore
from parley.storage.models import EpisodeLog, EpisodeStatus, Evaluation, EvaluationStatus
from parley.storage.records import insert_new
from tests.support.jobs import private_queue
from tests.support.scores import reward
from tests.support.server import GraphQLClient
from tests.support.studies import finished_episodes, rated_study, save_rating

pytestmark = pytest.mark.usefixtures("redis_client")  # binds the records the tests save

EPISODES = 4
READS = ("json.get", "json.mget", "hgetall", "ft.search")
"""The commands that read episodes, ratings and a tag's episodes."""


async def calls(client: redis.Redis) -> dict[str, int]:
    """How many times Redis ran each command so far."""
    stats: dict[str, Any] = await client.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(stat["calls"]) for name, stat in stats.items()}


async def reads_while(client: redis.Redis, asked: Any) -> tuple[Any, dict[str, int]]:
    """What `asked` (an awaitable) answers, and the reads Redis ran meanwhile."""
    before = await calls(client)
    answer = await asked
    after = await calls(client)
    return answer, {name: after.get(name, 0) - before.get(name, 0) for name in READS}


def overall_pairs(found: list[EvaluationDimension]) -> list[int]:
    """The units each pair of evaluations compares on the overall score."""
    return [p.pearson.n for d in found if d.dimension == OVERALL_SCORE for p in d.pairs]


def fresh(client: redis.Redis) -> Studies:
    """Studies that keep nothing yet: what figures computed afresh give."""
    return Studies(client, KeptFigures())


async def test_an_unchanged_study_is_answered_without_reading(
    gql: GraphQLClient, redis_client: redis.Redis
) -> None:
    study_id, _, _, _ = await rated_study(gql, EPISODES)
    studies = fresh(redis_client)
    study = await studies.get(study_id)
    assert study is not None
    first, computing = await reads_while(redis_client, studies.agreement(study))
    assert computing["json.get"] >= EPISODES and computing["json.mget"] >= 1
    again, kept = await reads_while(redis_client, studies.agreement(study))
    assert again is first and kept == dict.fromkeys(READS, 0)
    assert studies.figures.computed == 1 and studies.figures.read == 1


async def test_every_change_of_a_study_gives_fresh_figures(
    gql: GraphQLClient, redis_client: redis.Redis
) -> None:
    study_id, episodes, tokens, rubric = await rated_study(gql, EPISODES)
    studies = fresh(redis_client)
    study = await studies.get(study_id)
    assert study is not None
    answers = [await studies.agreement(study)]

    await save_rating(gql, study_id, 1, tokens[1], 0, rubric, goal=10, revision=1)
    answers.append(await studies.agreement(study))
    assert answers[-1] != answers[-2] and answers[-1] == await fresh(redis_client).agreement(study)

    store = EpisodeStore(redis_client)
    assert await store.mark(
        episodes[1],
        0,
        {"rewards": [reward(1.0, believability=1.0), reward(9.0, believability=9.0)]},
    )
    answers.append(await studies.agreement(study))
    assert answers[-1] != answers[-2] and answers[-1] == await fresh(redis_client).agreement(study)

    await store.delete(await EpisodeLog.get(episodes[2]))
    answers.append(await studies.agreement(study))
    assert answers[-1] != answers[-2] and answers[-1] == await fresh(redis_client).agreement(study)
    assert studies.figures.computed == 4


async def test_a_rejudging_finishing_gives_fresh_figures(redis_client: redis.Redis) -> None:
    episodes = await finished_episodes(f"fresh-{uuid.uuid4().hex[:8]}", EPISODES)
    queued = Evaluation(id=uuid.uuid4().hex, judge_model="second-judge", created_at=time.time())
    fields = {"agents": ["a", "b"], "models": ["judge", "m1", "m2"]}
    jobs = private_queue(redis_client)
    await evaluations.queue_rejudging(redis_client, jobs, queued, [(pk, fields) for pk in episodes])
    studies = fresh(redis_client)
    asked = ({"ids": episodes}, [None, queued.id])
    before = await evaluation_agreement_of(studies, *asked)
    assert overall_pairs(before) == [0]  # nothing re-judged yet
    for n, pk in enumerate(episodes):
        done = queued.model_copy(
            update={
                "status": EvaluationStatus.COMPLETED,
                "rewards": [reward(n, believability=n), reward(9 - n, believability=9 - n)],
            }
        )
        await evaluations.store_evaluation(redis_client, pk, done)
    after = await evaluation_agreement_of(studies, *asked)
    assert overall_pairs(after) == [2 * EPISODES]
    assert after == await evaluation_agreement_of(fresh(redis_client), *asked)


async def test_an_episode_added_to_a_tag_gives_fresh_figures(redis_client: redis.Redis) -> None:
    tag = f"fresh-{uuid.uuid4().hex[:8]}"
    episodes = await finished_episodes(tag, EPISODES)
    studies = fresh(redis_client)
    first = await evaluation_agreement_of(studies, {"tag": tag}, [None])
    again, kept = await reads_while(
        redis_client, evaluation_agreement_of(studies, {"tag": tag}, [None])
    )
    assert again is first and kept == dict.fromkeys(READS, 0)
    assert {d.units for d in first} == {2 * EPISODES}
    template = await EpisodeLog.get(episodes[0])
    added = EpisodeLog(
        environment=template.environment,
        agents=template.agents,
        tag=tag,
        models=template.models,
        status=EpisodeStatus.COMPLETED,
        rewards=[reward(3.0), reward(4.0)],
        created_at=time.time(),
    )
    assert await insert_new(redis_client, [added]) == [True]  # as an import adds one
    after = await evaluation_agreement_of(studies, {"tag": tag}, [None])
    assert {d.units for d in after} == {2 * (EPISODES + 1)}
    assert after == await evaluation_agreement_of(fresh(redis_client), {"tag": tag}, [None])


async def test_a_studys_records_are_written_again_only_after_a_change(
    gql: GraphQLClient, redis_client: redis.Redis
) -> None:
    """Results of a study's id write its raters' means first: not again (nothing read, no
    script run) while its ratings and episodes are unchanged; a new rating or a deleted episode
    writes them again."""
    study_id, episodes, tokens, rubric = await rated_study(gql, EPISODES)
    studies = fresh(redis_client)
    study = await studies.get(study_id)
    assert study is not None

    async def goals() -> list[Any]:
        """The raters' mean goal of each episode's first agent, as its record keeps it."""
        records = [keys.evaluation_record(study_id, pk) for pk in episodes]
        return [await redis_client.json().get(r, "$.rewards[0][1].goal") for r in records]

    async def written() -> bool:
        """Whether the records were written (the ratings read, the script run), or neither."""
        before = await calls(redis_client)
        await studies.write_results(study)
        after = await calls(redis_client)
        ran = [after.get(name, 0) > before.get(name, 0) for name in ("evalsha", "json.mget")]
        assert ran in ([True, True], [False, False]), ran
        return all(ran)

    assert await written()
    before = await goals()
    assert not await written()
    await save_rating(gql, study_id, 1, tokens[1], 0, rubric, goal=9, revision=1)
    assert await written()
    after = await goals()
    assert sum(a != b for a, b in zip(after, before, strict=True)) == 1  # the episode rated again
    assert not await written()
    await EpisodeStore(redis_client).delete(await EpisodeLog.get(episodes[3]))
    assert await written()
    assert not await redis_client.exists(keys.evaluation_record(study_id, episodes[3]))
