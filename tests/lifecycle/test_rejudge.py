"""Re-judging finished episodes: queued as jobs, run by the worker against a real Redis and the
fake model server, stored beside the original rewards, selectable in results."""

import asyncio
import uuid
from typing import Any

import pytest
import redis.asyncio as redis

from bench.support.fake_llm import FakeLLM, Rule
from bench.support.simulation import make_world, queue_episode
from parley.core.errors import ErrorCode, UserError
from parley.lifecycle import rejudge, start
from parley.lifecycle.services import Services
from parley.resolvers.dimensions import create_dimension_list
from parley.resolvers.results import GroupBy, Results, ResultsFilter
from parley.storage import keys
from parley.storage.jobs import JobKind
from parley.storage.models import EpisodeLog, EpisodeStatus, EvaluationStatus
from tests.lifecycle.conftest import SLOW_JUDGE, burst
from tests.support import sotopia_records
from tests.support.server import GraphQLClient


async def finished(services: Services, model: str, tag: str, count: int = 2) -> list[str]:
    """COMPLETED episodes, played by the worker with the fake model."""
    scenario, agents = await make_world(tag)
    ids = [
        await queue_episode(services, scenario, agents, model, max_turns=2, tag=tag)
        for _ in range(count)
    ]
    await burst(services)
    for pk in ids:
        assert (await EpisodeLog.get(pk)).status == EpisodeStatus.COMPLETED
    return ids


@pytest.fixture
def tag() -> str:
    return f"rejudge-{uuid.uuid4().hex[:8]}"


async def one_rejudging(services: Services, model: str, tag: str) -> tuple[str, rejudge.Rejudging]:
    """A finished episode, and a re-judging of it by `model` queued."""
    [pk] = await finished(services, model, tag, count=1)
    rejudging, errors = await queue_rejudging(services, episode_ids=[pk], judge_model=model)
    assert not errors and rejudging is not None
    return pk, rejudging


async def queue_rejudging(
    services: Services, **fields: Any
) -> tuple[rejudge.Rejudging | None, list[UserError]]:
    """`rejudge.queue` through the services' client, job queue and models."""
    return await rejudge.queue(services.client, services.jobs, services.models, fields)


async def custom_list(client: redis.Redis, name: str) -> str:
    record, errors = await create_dimension_list(
        client, {"name": name, "dimensions": [{"name": "warmth", "range_low": 0, "range_high": 10}]}
    )
    assert not errors and record is not None
    return str(record.pk)


async def test_a_rejudging_scores_again_beside_the_original(
    services: Services, fake_llm: FakeLLM, tag: str
) -> None:
    model = fake_llm.model_name()
    ids = await finished(services, model, tag)
    originals = {pk: (await EpisodeLog.get(pk)).rewards for pk in ids}
    list_id = await custom_list(services.client, tag)
    judge = fake_llm.model_name("second-judge")

    rejudging, errors = await queue_rejudging(
        services, tag=tag, judge_model=judge, evaluation_dimension_list_id=list_id
    )
    assert not errors and rejudging is not None
    assert await rejudge.progress(services.client, rejudging.id) == {
        EvaluationStatus.QUEUED: 2,
        EvaluationStatus.RUNNING: 0,
        EvaluationStatus.COMPLETED: 0,
        EvaluationStatus.FAILED: 0,
    }
    await burst(services)

    counts = await rejudge.progress(services.client, rejudging.id)
    assert counts[EvaluationStatus.COMPLETED] == 2
    for pk in ids:
        episode = await EpisodeLog.get(pk)
        assert episode.rewards == originals[pk]
        [evaluation] = episode.evaluations
        assert evaluation.id == rejudging.id and evaluation.status == EvaluationStatus.COMPLETED
        assert evaluation.judge_model == judge
        assert len(evaluation.rewards) == 2
        first = evaluation.rewards[0]
        assert not isinstance(first, float) and set(first[1]) == {"warmth", "overall_score"}
    groups = await Results(services.client, rejudging.id).groups(
        ResultsFilter(tag=tag), [GroupBy.JUDGE_MODEL]
    )
    [group] = groups
    assert group.key[GroupBy.JUDGE_MODEL] == judge
    summaries = dict(group.summaries())
    assert set(summaries) == {"overall", "warmth"} and summaries["warmth"].count == 4
    original = await Results(services.client).groups(ResultsFilter(tag=tag), [GroupBy.JUDGE_MODEL])
    assert [g.key[GroupBy.JUDGE_MODEL] for g in original] == [model]


async def test_a_failing_judge_fails_only_its_own_evaluation(
    services: Services, fake_llm: FakeLLM, tag: str
) -> None:
    model = fake_llm.model_name()
    pk, good = await one_rejudging(services, model, tag)
    original = await EpisodeLog.get(pk)
    await burst(services)
    [judged] = (await EpisodeLog.get(pk)).evaluations
    fake_llm.add_rule(Rule(kind="judge", status=500, times=None))

    bad, _ = await queue_rejudging(services, episode_ids=[pk], judge_model=model)
    assert bad is not None
    await burst(services)

    episode = await EpisodeLog.get(pk)
    kept, failed = episode.evaluations
    assert kept.id == good.id and kept.status == EvaluationStatus.COMPLETED and kept.rewards
    assert kept == judged  # the later failure left the earlier evaluation as it was
    assert failed.id == bad.id and failed.status == EvaluationStatus.FAILED
    assert failed.error and "judge" in failed.error and failed.rewards == []
    assert episode.rewards == original.rewards
    counts = await rejudge.progress(services.client, bad.id)
    assert counts[EvaluationStatus.FAILED] == 1
    [group] = await Results(services.client, bad.id).groups(ResultsFilter(), [GroupBy.MODEL])
    assert group.failed == 1 and group.scored == 0  # one judgement (both seats), never averaged


async def test_rejudging_an_unjudged_episode_with_its_own_judge_gives_it_its_scores(
    slow_judge: Services, fake_llm: FakeLLM, tag: str
) -> None:
    """A judge that timed out left the episode COMPLETED without scores; re-judged by its own
    judge on its own dimensions, that judgement becomes its scores, which results and its
    experiment then count. Re-judged by another judge, it stays a separate evaluation."""
    scenario, agents = await make_world(tag)
    ids = [
        await queue_episode(slow_judge, scenario, agents, SLOW_JUDGE, max_turns=2, tag=tag)
        for _ in range(2)
    ]
    await burst(slow_judge)
    unjudged = [await EpisodeLog.get(pk) for pk in ids]
    assert all(e.status == EpisodeStatus.COMPLETED and e.judge_error for e in unjudged)
    [group] = await Results(slow_judge.client).groups(ResultsFilter(tag=tag), [GroupBy.MODEL])
    assert (group.scored, group.unscored, group.failed) == (0, 2, 0)  # counted in episodes
    fake_llm.reset()  # the judge answers again

    other, _ = await queue_rejudging(
        slow_judge, episode_ids=[ids[0]], judge_model=fake_llm.model_name("another-judge")
    )
    own, errors = await queue_rejudging(slow_judge, episode_ids=[ids[1]], judge_model=SLOW_JUDGE)
    assert not errors and own is not None and other is not None
    await burst(slow_judge)

    separate, filled = [await EpisodeLog.get(pk) for pk in ids]
    assert separate.rewards == [0.0, 0.0] and separate.judge_error == unjudged[0].judge_error
    assert [e.status for e in separate.evaluations] == [EvaluationStatus.COMPLETED]
    [evaluation] = filled.evaluations
    assert evaluation.id == own.id and evaluation.status == EvaluationStatus.COMPLETED
    assert filled.judge_error is None
    assert filled.rewards == evaluation.rewards and len(filled.rewards) == 2
    assert all(not isinstance(reward, float) for reward in filled.rewards)
    assert filled.reasoning == evaluation.reasoning and filled.reasoning
    assert filled.rewards_prompt
    assert [t.argument for t in filled.turns] == [t.argument for t in unjudged[1].turns]
    [group] = await Results(slow_judge.client).groups(ResultsFilter(tag=tag), [GroupBy.MODEL])
    assert (group.scored, group.unscored) == (2, 1)  # seat scores; episodes left out


async def test_an_evaluation_whose_worker_died_is_taken_over(
    services: Services, fake_llm: FakeLLM, tag: str
) -> None:
    model = fake_llm.model_name()
    pk, rejudging = await one_rejudging(services, model, tag)
    taken = await services.jobs.read("dead-worker", 10, block_ms=100)
    assert [(j.kind, j.subject, j.detail) for j in taken] == [
        (JobKind.EVALUATION, pk, rejudging.id)
    ]

    await asyncio.sleep(1.2)  # the dead worker's lease (1 s) lapses
    await burst(services)  # and this worker's sweep takes the job over

    [evaluation] = (await EpisodeLog.get(pk)).evaluations
    assert evaluation.status == EvaluationStatus.COMPLETED
    assert await services.jobs.depth() == (0, 0)


async def test_only_completed_episodes_can_be_rejudged(
    services: Services, fake_llm: FakeLLM, tag: str, unchanged: Any
) -> None:
    model = fake_llm.model_name()
    [done] = await finished(services, model, tag, count=1)
    scenario, agents = await make_world(f"{tag}-queued")
    queued = await queue_episode(services, scenario, agents, model)

    async with unchanged():
        _, errors = await queue_rejudging(services, episode_ids=[done, queued], judge_model=model)
        assert [(e.field, e.code) for e in errors] == [(["input", "episodeIds"], ErrorCode.INVALID)]
        assert f"{queued} is QUEUED" in errors[0].message
        assert "only COMPLETED episodes" in errors[0].message

        _, errors = await queue_rejudging(
            services, episode_ids=[done], judge_model=model, evaluation_dimension_list_id="nope"
        )
        assert [e.code for e in errors] == [ErrorCode.NOT_FOUND]

        _, errors = await queue_rejudging(services, episode_ids=[done], tag=tag, judge_model=model)
        assert [e.code for e in errors] == [ErrorCode.INVALID]


REJUDGE = """mutation($input: RejudgeEpisodesInput!) {
  rejudgeEpisodes(input: $input) {
    rejudging { id judgeModel episodes progress { queued running completed failed } }
    userErrors { field message code }
  }
}"""


async def test_the_mutation_over_http(
    redis_client: redis.Redis, gql: GraphQLClient, fake_llm: FakeLLM, unchanged: Any
) -> None:
    async with unchanged():
        data = await gql.data(
            REJUDGE, {"input": {"episodeIds": ["no-such-episode"], "judgeModel": "nobody/none"}}
        )
    errors = data["rejudgeEpisodes"]["userErrors"]
    assert data["rejudgeEpisodes"]["rejudging"] is None
    assert {(tuple(e["field"]), e["code"]) for e in errors} == {
        (("input", "judgeModel"), "INVALID"),
        (("input", "episodeIds"), "NOT_FOUND"),
    }

    pk = f"rejudge-http-{uuid.uuid4().hex[:8]}"
    await redis_client.json().set(
        EpisodeLog.make_primary_key(pk),
        "$",
        {
            "pk": pk,
            "environment": "env",
            "agents": ["a", "b"],
            "models": ["judge", "m0", "m1"],
            "messages": [],
            "rewards": [[1.0, {"goal": 1.0}], [2.0, {"goal": 2.0}]],
        },
    )  # as Sotopia writes it: no status, no evaluations
    judge = fake_llm.model_name()
    data = await gql.data(REJUDGE, {"input": {"episodeIds": [pk], "judgeModel": judge}})
    payload = data["rejudgeEpisodes"]
    assert payload["userErrors"] == []
    rejudging = payload["rejudging"]
    assert rejudging["episodes"] == 1 and rejudging["progress"]["queued"] == 1
    data = await gql.data(
        "query($id: ID!) { episode(id: $id) { rewards { overall } "
        "evaluations { id judgeModel status rewards { overall } error } } }",
        {"id": pk},
    )
    assert data["episode"]["rewards"] == [{"overall": 1.0}, {"overall": 2.0}]
    assert data["episode"]["evaluations"] == [
        {
            "id": rejudging["id"],
            "judgeModel": judge,
            "status": "QUEUED",
            "rewards": [],
            "error": None,
        }
    ]
    assert await redis_client.exists(keys.evaluation_record(rejudging["id"], pk))
    data = await gql.data(
        "query($id: ID!) { rejudging(id: $id) { episodes progress { queued } } }",
        {"id": rejudging["id"]},
    )
    assert data["rejudging"] == {"episodes": 1, "progress": {"queued": 1}}


async def test_deleting_an_episode_deletes_its_evaluation_records(
    services: Services, fake_llm: FakeLLM, tag: str
) -> None:
    model = fake_llm.model_name()
    pk, rejudging = await one_rejudging(services, model, tag)
    await burst(services)
    assert await services.client.exists(keys.evaluation_record(rejudging.id, pk))

    assert await start.delete(services, pk) == []

    assert not await services.client.exists(keys.evaluation_record(rejudging.id, pk))
    assert await Results(services.client, rejudging.id).groups(ResultsFilter(), []) == []


async def test_an_episode_sotopia_wrote_is_judged_from_turns_read_from_its_messages(
    services: Services, redis_client: redis.Redis, fake_llm: FakeLLM
) -> None:
    suffix = uuid.uuid4().hex[:2].upper()
    for key, doc in sotopia_records.RECORDS:
        stored = {**doc, "pk": doc["pk"][:-2] + suffix}
        if key.startswith(sotopia_records.LOGS):
            stored["agents"] = [pk[:-2] + suffix for pk in doc["agents"]]
            stored["environment"] = doc["environment"][:-2] + suffix
        await redis_client.json().set(key[:-2] + suffix, "$", stored)
    pk = sotopia_records.EPISODE["pk"][:-2] + suffix
    judge = fake_llm.model_name("sotopia-judge")

    rejudging, errors = await queue_rejudging(services, episode_ids=[pk], judge_model=judge)
    assert not errors and rejudging is not None
    await burst(services)

    episode = await EpisodeLog.get(pk)
    [evaluation] = episode.evaluations
    assert evaluation.status == EvaluationStatus.COMPLETED, evaluation.error
    assert len(evaluation.rewards) == 2
    kept = await redis_client.json().get(EpisodeLog.make_primary_key(pk), "$.rewards")
    assert kept == [sotopia_records.EPISODE["rewards"]]  # the original is kept
    prompts = [r.text for r in fake_llm.requests_of("judge") if "ferry" in r.text]
    assert prompts, "the judge was not asked about this episode"
    for _, speaker, _, argument, _ in sotopia_records.EXPECTED_TURNS:
        assert speaker in prompts[-1] and argument in prompts[-1]


async def test_a_tag_is_rejudged_without_its_failed_and_cancelled_episodes(
    services: Services, fake_llm: FakeLLM, tag: str
) -> None:
    model = fake_llm.model_name()
    [done] = await finished(services, model, tag, count=1)
    scenario, agents = await make_world(f"{tag}-cancelled")
    queued = await queue_episode(services, scenario, agents, model, tag=tag)
    cancelled, _ = await start.cancel(services, queued)
    assert cancelled is not None and cancelled.status == EpisodeStatus.CANCELLED

    rejudging, errors = await queue_rejudging(services, tag=tag, judge_model=model)
    assert errors == [] and rejudging is not None
    assert rejudging.episodes == 1
    assert (await EpisodeLog.get(queued)).evaluations == []
    assert [e.id for e in (await EpisodeLog.get(done)).evaluations] == [rejudging.id]
