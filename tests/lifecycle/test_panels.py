"""Judge panels run by the worker against a real Redis and the fake model server: judge A
(asked twice) scores 8, judge B scores 2, judge C fails; the aggregate is checked exactly, in
episodes, experiments and re-judgings, after a worker lost mid-panel too, and bad panels are
refused with coded errors and nothing written."""

import asyncio
import json
import uuid
from typing import Any

import pytest
import redis.asyncio as redis
from pydantic import BaseModel, ConfigDict, model_validator

from bench.support.fake_llm import FakeLLM, Rule
from bench.support.simulation import make_world
from parley.core.errors import ErrorCode, UserError
from parley.core.limits import MAX_JUDGE_RUNS
from parley.engine.types import JudgeErrorCode, JudgeRun
from parley.lifecycle import rejudge, start
from parley.lifecycle.experiments import create_experiment, start_experiment
from parley.lifecycle.services import Services
from parley.lifecycle.worker import Worker, WorkerConfig, running_worker
from parley.resolvers import sotopia_format as fmt
from parley.resolvers.dimensions import create_dimension_list
from parley.resolvers.exporter import EpisodeFilter, export_text
from parley.resolvers.importer import import_lines
from parley.resolvers.results import GroupBy, Results, ResultsFilter
from parley.storage import keys
from parley.storage.evaluations import store_evaluation
from parley.storage.events import NOT_JUDGED
from parley.storage.models import EpisodeLog, EpisodeStatus, EvaluationStatus, Experiment
from parley.storage.records import get_or_none
from tests.support.panels import RUNS, judges, script, who_ran
from tests.support.server import GraphQLClient

Status = EpisodeStatus
DIMENSIONS = [
    {"name": "warmth", "range_low": 0, "range_high": 10},
    {"name": "candour", "range_low": 0, "range_high": 10},
]


def scored(value: float) -> tuple[float, dict[str, float]]:
    """One agent's reward with `value` on both dimensions (and so as its overall)."""
    return (value, {"warmth": value, "candour": value, "overall_score": value})


def label(fake: FakeLLM, aggregate: str) -> str:
    a, b, c = (fake.model_name(f"judge-{x}") for x in "abc")
    return f"panel({aggregate}): {a} x2, {b}, {c}"


def design_of(fields: dict[str, Any], model: str, **settings: Any) -> dict[str, Any]:
    """An experiment design of the world's scenario and agent pair, `model` in both seats."""
    return {
        "scenarios": {"ids": [fields["scenario_id"]]},
        "agents": {"pairs": [fields["agent_ids"]]},
        "models": {"seats": [[model, model]]},
        **settings,
    }


async def burst(services: Services, **overrides: Any) -> Worker:
    values: dict[str, Any] = {"lease_seconds": 1.0, "poll_seconds": 0.05, "consumer": "alive"}
    worker = Worker(services, WorkerConfig(**{**values, **overrides}))
    await asyncio.wait_for(worker.run(burst=True), 60)
    return worker


async def dimension_list(client: redis.Redis, tag: str) -> str:
    record, errors = await create_dimension_list(
        client, {"name": f"{tag}-dims", "dimensions": DIMENSIONS}
    )
    assert not errors and record is not None
    return str(record.pk)


async def world(services: Services, tag: str) -> dict[str, Any]:
    """The start fields of an episode of two turns, on the two 0..10 dimensions."""
    scenario, agents = await make_world(tag)
    return {
        "scenario_id": scenario,
        "agent_ids": agents,
        "max_turns": 2,
        "tag": tag,
        "evaluation_dimension_list_id": await dimension_list(services.client, tag),
    }


async def started(services: Services, fields: dict[str, Any], fake: FakeLLM) -> str:
    values = {**fields, "agent_models": [fake.model_name()]}
    episode, errors = await start.start(services, values)
    assert not errors and episode is not None, errors
    return str(episode.pk)


async def judged_by_one(services: Services, fake: FakeLLM) -> tuple[str, dict[str, Any], str]:
    """A new world's tag and fields, and an episode of it judged by one judge (the fake)."""
    tag = f"panel-{uuid.uuid4().hex[:8]}"
    fields = await world(services, tag)
    pk = await started(services, {**fields, "judge_model": fake.model_name()}, fake)
    await burst(services)
    return tag, fields, pk


async def rejudged_by_panel(
    services: Services, fields: dict[str, Any], pk: str, fake: FakeLLM, **more: Any
) -> tuple[rejudge.Rejudging | None, list[UserError]]:
    """Episode `pk` queued to be judged again by the panel `judges` makes, on the world's
    dimensions (with `more` of the rejudging's fields)."""
    return await rejudge.queue(
        services.client,
        services.jobs,
        services.models,
        {
            "episode_ids": [pk],
            "judges": judges(fake),
            "evaluation_dimension_list_id": fields["evaluation_dimension_list_id"],
            **more,
        },
    )


class SotopiaEpisodeLog(BaseModel):
    """Sotopia's EpisodeLog as its pydantic model reads a stored document (SOTOPIA.md §1):
    these fields and types, extra keys allowed, one reward per agent."""

    model_config = ConfigDict(extra="allow")
    pk: str | None = ""
    environment: str
    agents: list[str]
    tag: str | None = ""
    models: list[str] | None = []
    agent_classes: list[str] | None = []
    messages: list[list[tuple[str, str, str]]]
    reasoning: str = ""
    rewards: list[tuple[float, dict[str, float]] | float]
    rewards_prompt: str = ""

    @model_validator(mode="after")
    def one_reward_per_agent(self) -> "SotopiaEpisodeLog":
        assert len(self.rewards) == len(self.agents)
        return self


async def test_a_panel_scores_an_episode_with_the_mean_or_median_of_its_judges(
    services: Services, fake_llm: FakeLLM, redis_client: redis.Redis
) -> None:
    tag = f"panel-{uuid.uuid4().hex[:8]}"
    fields = await world(services, tag)
    script(fake_llm)
    mean = await started(services, {**fields, "judges": judges(fake_llm)}, fake_llm)
    median = await started(
        services,
        {**fields, "judges": judges(fake_llm), "judge_aggregate": "MEDIAN"},
        fake_llm,
    )
    await burst(services)

    for pk, aggregate, value in ((mean, "MEAN", 6.0), (median, "MEDIAN", 8.0)):
        episode = await EpisodeLog.get(pk)
        assert episode.status == Status.COMPLETED and episode.judge_error is None
        assert episode.rewards == [scored(value), scored(value)]  # (8 + 8 + 2) / 3; median 8
        assert (episode.models or [])[0] == label(fake_llm, aggregate)
        assert who_ran(episode.judge_runs) == RUNS
        a0, a1, b, c = episode.judge_runs
        assert a0.rewards == a1.rewards == [scored(8.0)] * 2 and b.rewards == [scored(2.0)] * 2
        assert c.code == JudgeErrorCode.UNAVAILABLE and c.error and "HTTP 500" in c.error
        assert episode.reasoning.count("Agent 2 comments:") == 3
        # each judge's tokens: its runs', and the episode's usage row of that model
        usage = {row.model: row for row in episode.usage}
        row = usage[fake_llm.model_name("judge-a")]
        assert row.prompt_tokens == a0.prompt_tokens + a1.prompt_tokens > 0
        assert row.completion_tokens == a0.completion_tokens + a1.completion_tokens > 0
        assert usage[fake_llm.model_name("judge-b")].prompt_tokens == b.prompt_tokens
        # Sotopia reads the stored document: the aggregate is its rewards
        document = await redis_client.json().get(EpisodeLog.make_primary_key(pk))
        sotopia = SotopiaEpisodeLog.model_validate(document)
        assert sotopia.rewards == [scored(value)] * 2

    groups = await Results(services.client).groups(ResultsFilter(tag=tag), [GroupBy.JUDGE_MODEL])
    means = {g.key[GroupBy.JUDGE_MODEL]: dict(g.summaries())["warmth"].mean for g in groups}
    assert means == {label(fake_llm, "MEAN"): 6.0, label(fake_llm, "MEDIAN"): 8.0}


async def test_when_every_judge_fails_the_episode_completes_without_scores(
    services: Services, fake_llm: FakeLLM
) -> None:
    """As with one judge that fails: the conversation stands, unscored, with the reason; and
    each run says why it failed."""
    tag = f"panel-{uuid.uuid4().hex[:8]}"
    fields = await world(services, tag)
    fake_llm.add_rule(Rule(kind="judge", status=503, times=None))
    pk = await started(services, {**fields, "judges": judges(fake_llm)}, fake_llm)
    await burst(services)
    episode = await EpisodeLog.get(pk)
    assert episode.status == Status.COMPLETED and episode.error is None
    assert episode.rewards == [0.0, 0.0] and len(episode.turns) == 2
    assert episode.judge_error is not None
    assert episode.judge_error.startswith("no judge of the panel gave valid scores: ")
    assert episode.status_history[-1].reason == NOT_JUDGED + episode.judge_error
    assert [run.code for run in episode.judge_runs] == [JudgeErrorCode.UNAVAILABLE] * 4
    assert all(run.error and run.error in episode.judge_error for run in episode.judge_runs)


async def test_a_panel_stopped_midway_keeps_its_runs_and_makes_the_rest(
    services: Services, fake_llm: FakeLLM
) -> None:
    """The worker stores each run as it ends; one stopped while judge B still thinks hands the
    episode back, and the next attempt asks judge A nothing more (it now answers 0, which
    would show) and makes B's run and C's again: each run counted once."""
    tag = f"panel-{uuid.uuid4().hex[:8]}"
    fields = await world(services, tag)
    script(fake_llm, b=None)
    pk = await started(services, {**fields, "judges": judges(fake_llm)}, fake_llm)

    async def three_runs_stored() -> bool:
        episode = await get_or_none(EpisodeLog, pk)
        return episode is not None and len(episode.judge_runs) == 3

    worker = Worker(services, WorkerConfig(lease_seconds=30, poll_seconds=0.05, consumer="stopped"))
    async with running_worker(worker):
        async with asyncio.timeout(30):
            while not await three_runs_stored():  # noqa: ASYNC110 - state in Redis
                await asyncio.sleep(0.05)
    stopped = await EpisodeLog.get(pk)
    assert stopped.status == Status.EVALUATING
    a, c = fake_llm.model_name("judge-a"), fake_llm.model_name("judge-c")
    assert [(run.model, run.repeat, run.counted) for run in stopped.judge_runs] == [
        (a, 0, True),
        (a, 1, True),
        (c, 0, False),
    ]

    fake_llm.reset()
    script(fake_llm, a=0)
    await burst(services)
    episode = await EpisodeLog.get(pk)
    assert episode.status == Status.COMPLETED and episode.attempt == 2
    assert fake_llm.requests_of("judge") and not [
        r for r in fake_llm.requests_of("judge") if r.body["model"] == "judge-a"
    ]
    assert episode.judge_runs[:2] == stopped.judge_runs[:2]
    assert episode.rewards == [scored(6.0), scored(6.0)]  # (8 + 8 + 2) / 3, A's runs kept


async def test_a_worker_lost_mid_panel_is_taken_over_and_the_panel_resumed(
    services: Services, fake_llm: FakeLLM
) -> None:
    """What a worker that died while judging leaves: the episode EVALUATING under its attempt,
    its conversation and the run it stored. After its lease the sweep takes the job over; the
    stored run (its 10 differs from what judge A answers now) counts once, beside the rest."""
    tag = f"panel-{uuid.uuid4().hex[:8]}"
    fields = await world(services, tag)
    script(fake_llm)
    pk = await started(services, {**fields, "judges": judges(fake_llm)}, fake_llm)
    [job] = await services.jobs.read("dead", 1, block_ms=100)
    assert job.subject == pk
    assert (await services.store.transition(pk, Status.RUNNING, fence=0, attempt_mode="restart")).ok
    for turn in range(2):
        line = {"turn": turn, "agent_index": turn, "agent_name": f"Ava{turn} {tag}"}
        body = {**line, "action_type": "speak", "argument": f"line {turn}", "to": []}
        assert await services.store.append_turn(pk, 1, body, turn + 1, []) is not None
    assert (await services.store.transition(pk, Status.EVALUATING, fence=1)).ok
    lost = JudgeRun(model=fake_llm.model_name("judge-a"), rewards=[scored(10.0)] * 2)
    assert await services.store.mark(pk, 1, {"judge_runs": [lost.model_dump(mode="json")]})

    await asyncio.sleep(1.1)  # the dead worker's lease lapses
    await burst(services)
    episode = await EpisodeLog.get(pk)
    assert episode.status == Status.COMPLETED and episode.attempt == 2
    assert episode.losses == 0  # it had stored its turns: progress, not a loss
    asked = [r for r in fake_llm.requests_of("judge") if r.body["model"] == "judge-a"]
    assert len(asked) == 2  # A's second run only: one request per agent
    assert episode.judge_runs[0] == lost
    assert episode.rewards == [scored((10 + 8 + 2) / 3)] * 2


async def test_a_restarted_attempt_clears_the_runs_of_the_last(
    services: Services, fake_llm: FakeLLM
) -> None:
    tag = f"panel-{uuid.uuid4().hex[:8]}"
    fields = await world(services, tag)
    pk = await started(services, {**fields, "judges": judges(fake_llm)}, fake_llm)
    assert (await services.store.transition(pk, Status.RUNNING, fence=0, attempt_mode="restart")).ok
    run = JudgeRun(model="m", rewards=[scored(1.0)] * 2).model_dump(mode="json")
    assert await services.store.mark(pk, 1, {"judge_runs": [run]})
    assert not await services.store.mark(pk, 0, {"judge_runs": []})  # fenced: not its attempt
    assert len((await EpisodeLog.get(pk)).judge_runs) == 1
    again = await services.store.transition(pk, Status.RUNNING, fence=1, attempt_mode="restart")
    assert again.ok and (await EpisodeLog.get(pk)).judge_runs == []


async def test_an_experiment_judges_each_episode_with_its_panel(
    services: Services, fake_llm: FakeLLM
) -> None:
    tag = f"panel-{uuid.uuid4().hex[:8]}"
    fields = await world(services, tag)
    script(fake_llm)
    model = fake_llm.model_name()
    design = design_of(
        fields,
        model,
        repeats=2,
        max_turns=2,
        judges=judges(fake_llm),
        judge_aggregate="MEDIAN",
        evaluation_dimension_list_id=fields["evaluation_dimension_list_id"],
    )
    experiment, errors = await create_experiment(
        services, {"name": tag, "tag": tag, "design": design}
    )
    assert not errors and experiment is not None
    same, errors = await create_experiment(services, {"name": tag, "tag": tag, "design": design})
    assert not errors and same is not None and same.pk == experiment.pk
    _, queued, errors = await start_experiment(services, str(experiment.pk))
    assert not errors and queued == 2
    await burst(services)
    episodes = await EpisodeLog.find(EpisodeLog.experiment_id == str(experiment.pk)).all()
    assert len(episodes) == 2
    for episode in episodes:
        assert episode.panel() == episodes[0].panel() and len(episode.judge_runs) == 4
        assert (episode.models or [])[0] == label(fake_llm, "MEDIAN")
        assert episode.rewards == [scored(8.0), scored(8.0)]


async def test_a_rejudging_by_a_panel_is_kept_beside_the_original(
    services: Services, fake_llm: FakeLLM
) -> None:
    tag, fields, pk = await judged_by_one(services, fake_llm)
    original = await EpisodeLog.get(pk)
    [run] = original.judge_runs  # one judge: the panel of one run
    assert run.model == fake_llm.model_name() and run.rewards == original.rewards
    script(fake_llm)

    rejudging, errors = await rejudged_by_panel(
        services, fields, pk, fake_llm, judge_aggregate="MEDIAN"
    )
    assert not errors and rejudging is not None
    assert rejudging.judge_model == label(fake_llm, "MEDIAN")
    restored = await rejudge.get_rejudging(services.client, rejudging.id)
    assert restored is not None and restored.panel() == rejudging.panel()
    assert (restored.judge_model, restored.episodes) == (rejudging.judge_model, 1)
    await burst(services)

    episode = await EpisodeLog.get(pk)
    assert episode.rewards == original.rewards
    [evaluation] = episode.evaluations
    assert evaluation.status == EvaluationStatus.COMPLETED
    assert evaluation.rewards == [scored(8.0), scored(8.0)]
    assert [r.counted for r in evaluation.judge_runs] == [True, True, True, False]
    assert evaluation.panel() == rejudging.panel()
    [group] = await Results(services.client, rejudging.id).groups(
        ResultsFilter(tag=tag), [GroupBy.JUDGE_MODEL]
    )
    assert group.key[GroupBy.JUDGE_MODEL] == label(fake_llm, "MEDIAN")
    assert dict(group.summaries())["candour"].mean == 8.0


async def test_a_rejudging_taken_over_mid_panel_keeps_the_runs_it_stored(
    services: Services, fake_llm: FakeLLM
) -> None:
    _, fields, pk = await judged_by_one(services, fake_llm)
    script(fake_llm)
    rejudging, _ = await rejudged_by_panel(services, fields, pk, fake_llm)
    assert rejudging is not None
    [job] = await services.jobs.read("dead-worker", 1, block_ms=100)
    assert job.detail == rejudging.id
    [entry] = (await EpisodeLog.get(pk)).evaluations
    lost = JudgeRun(model=fake_llm.model_name("judge-a"), rewards=[scored(10.0)] * 2)
    running = entry.model_copy(update={"status": EvaluationStatus.RUNNING, "judge_runs": [lost]})
    assert await store_evaluation(services.client, pk, running, count_start=True) == 1

    await asyncio.sleep(1.2)  # the dead worker's lease lapses
    await burst(services)
    [evaluation] = (await EpisodeLog.get(pk)).evaluations
    assert evaluation.status == EvaluationStatus.COMPLETED
    assert evaluation.judge_runs[0] == lost
    asked = [r for r in fake_llm.requests_of("judge") if r.body["model"] == "judge-a"]
    assert len(asked) == 2  # A's second run only
    assert evaluation.rewards == [scored((10 + 8 + 2) / 3)] * 2
    record: Any = await services.client.json().get(keys.evaluation_record(rejudging.id, pk))
    assert record["rewards"] == [list(scored((10 + 8 + 2) / 3))] * 2


async def test_an_unjudged_episode_gets_its_scores_from_its_own_panel_again(
    services: Services, fake_llm: FakeLLM
) -> None:
    tag = f"panel-{uuid.uuid4().hex[:8]}"
    fields = await world(services, tag)
    fake_llm.add_rule(Rule(kind="judge", status=503, times=None))
    pk = await started(services, {**fields, "judges": judges(fake_llm)}, fake_llm)
    await burst(services)
    assert (await EpisodeLog.get(pk)).judge_error
    fake_llm.reset()
    script(fake_llm)
    rejudging, errors = await rejudged_by_panel(services, fields, pk, fake_llm)
    assert not errors and rejudging is not None
    await burst(services)
    episode = await EpisodeLog.get(pk)
    assert episode.judge_error is None and episode.rewards == [scored(6.0), scored(6.0)]
    assert episode.rewards_prompt


BAD_PANELS = [
    ({"judges": []}, ["judges"], "at least 1"),
    ({"judges": [{"model": "{fake}", "repeats": 0}]}, ["judges", "0", "repeats"], "at least 1"),
    (
        {"judges": [{"model": "{fake}", "repeats": MAX_JUDGE_RUNS + 1}]},
        ["judges", "0", "repeats"],
        f"at most {MAX_JUDGE_RUNS}",
    ),
    (
        {"judges": [{"model": "{fake}", "repeats": 6}, {"model": "{other}", "repeats": 5}]},
        [],
        f"at most {MAX_JUDGE_RUNS} judge runs",
    ),
    ({"judges": [{"model": "{fake}"}, {"model": "{fake}"}]}, [], "name each judge"),
    ({"judges": [{"model": "{fake}"}], "judge_model": "{fake}"}, [], "not both"),
    ({"judges": [{"model": "{fake}"}], "judge_aggregate": "MODE"}, ["judgeAggregate"], "MEAN"),
]


def filled(value: Any, fake: FakeLLM) -> Any:
    if isinstance(value, dict):
        return {k: filled(v, fake) for k, v in value.items()}
    if isinstance(value, list):
        return [filled(v, fake) for v in value]
    if value == "{fake}":
        return fake.model_name()
    if value == "{other}":
        return fake.model_name("other")
    return value


@pytest.mark.parametrize(("panel", "where", "says"), BAD_PANELS)
async def test_a_bad_panel_is_refused_where_it_is_and_nothing_is_written(
    services: Services, fake_llm: FakeLLM, unchanged: Any, panel: Any, where: Any, says: str
) -> None:
    tag, fields, pk = await judged_by_one(services, fake_llm)
    panel = filled(panel, fake_llm)
    model = fake_llm.model_name()
    design = design_of(fields, model)
    async with unchanged():
        _, start_errors = await start.start(services, {**fields, "agent_models": [model], **panel})
        _, design_errors = await create_experiment(
            services, {"name": tag, "design": {**design, **panel}}
        )
        _, rejudge_errors = await rejudge.queue(
            services.client, services.jobs, services.models, {"episode_ids": [pk], **panel}
        )
    for errors, prefix in (
        (start_errors, ["input"]),
        (design_errors, ["input", "design"]),
        (rejudge_errors, ["input"]),
    ):
        assert [(e.field, e.code) for e in errors] == [([*prefix, *where], ErrorCode.INVALID)]
        assert says in errors[0].message, errors[0].message


async def test_an_unknown_judge_is_named_by_its_place_in_the_panel(
    services: Services, fake_llm: FakeLLM, unchanged: Any
) -> None:
    tag = f"panel-{uuid.uuid4().hex[:8]}"
    fields = await world(services, tag)
    panel = {"judges": [{"model": fake_llm.model_name()}, {"model": "nobody/none"}]}
    async with unchanged():
        _, errors = await start.start(
            services, {**fields, "agent_models": [fake_llm.model_name()], **panel}
        )
    assert [(e.field, e.code) for e in errors] == [
        (["input", "judges", "1", "model"], ErrorCode.INVALID)
    ]
    assert "unknown model 'nobody/none'" in errors[0].message


START = """mutation($input: StartSimulationInput!) {
  startSimulation(input: $input) {
    episode { id judgeModel judges { model repeats } judgeAggregate judgeRuns { model } }
    userErrors { field message code }
  }
}"""
EPISODE = """query($id: ID!) {
  episode(id: $id) {
    judgeModel judges { model repeats } judgeAggregate judgeRunsCounted judgeRunsFailed
    rewards { overall dimensions { dimension score } }
    judgeRuns { model repeat status code error promptTokens
                rewards { agentIndex overall dimensions { dimension score } } }
  }
}"""


async def test_panels_over_graphql(
    services: Services, gql: GraphQLClient, fake_llm: FakeLLM, unchanged: Any
) -> None:
    tag = f"panel-{uuid.uuid4().hex[:8]}"
    fields = await world(services, tag)
    graph_input = {
        "scenarioId": fields["scenario_id"],
        "agentIds": fields["agent_ids"],
        "agentModels": [fake_llm.model_name()],
        "maxTurns": 2,
        "tag": tag,
        "evaluationDimensionListId": fields["evaluation_dimension_list_id"],
    }
    async with unchanged():
        refused = await gql.data(START, {"input": {**graph_input, "judges": []}})
    [error] = refused["startSimulation"]["userErrors"]
    assert (error["field"], error["code"]) == (["input", "judges"], "INVALID")

    panel = [{"model": j["model"], "repeats": j.get("repeats", 1)} for j in judges(fake_llm)]
    queued = await gql.data(
        START, {"input": {**graph_input, "judges": panel, "judgeAggregate": "MEDIAN"}}
    )
    assert queued["startSimulation"]["userErrors"] == []
    episode = queued["startSimulation"]["episode"]
    assert episode["judges"] == panel and episode["judgeAggregate"] == "MEDIAN"
    assert episode["judgeModel"] == label(fake_llm, "MEDIAN") and episode["judgeRuns"] == []
    await services.store.transition(episode["id"], Status.CANCELLED, reason="cancelled")

    script(fake_llm)
    pk = await started(services, {**fields, "judges": judges(fake_llm)}, fake_llm)
    await burst(services)
    shown = (await gql.data(EPISODE, {"id": pk}))["episode"]
    assert (shown["judgeRunsCounted"], shown["judgeRunsFailed"]) == (3, 1)
    assert shown["judgeAggregate"] == "MEAN" and shown["judges"] == panel
    six = {"overall": 6.0, "dimensions": [{"dimension": "warmth", "score": 6.0},
                                          {"dimension": "candour", "score": 6.0}]}  # fmt: skip
    assert shown["rewards"] == [six, six]
    a0, a1, b, c = shown["judgeRuns"]
    assert (a0["repeat"], a1["repeat"], a0["status"], a0["code"]) == (0, 1, "COMPLETED", None)
    assert [r["overall"] for r in b["rewards"]] == [2.0, 2.0] and b["promptTokens"] > 0
    assert (c["status"], c["code"], c["rewards"]) == ("FAILED", "UNAVAILABLE", [])
    assert "HTTP 500" in c["error"]


async def test_a_panels_runs_travel_through_an_export_and_back(
    services: Services, fake_llm: FakeLLM
) -> None:
    """Sotopia's layout carries the aggregate as `rewards` and the panel, its runs and a
    panel re-judging's in Parley's extra keys; imported again, the episode, its evaluation
    record and its re-judging are as they were."""
    tag = f"panel-{uuid.uuid4().hex[:8]}"
    fields = await world(services, tag)
    script(fake_llm)
    pk = await started(services, {**fields, "judges": judges(fake_llm)}, fake_llm)
    await burst(services)
    rejudging, _ = await rejudged_by_panel(services, fields, pk, fake_llm, judge_aggregate="MEDIAN")
    assert rejudging is not None
    await burst(services)
    before = await EpisodeLog.get(pk)
    record_key = keys.evaluation_record(rejudging.id, pk)
    record: Any = await services.client.json().get(record_key)

    text = "".join(
        [
            part
            async for part in export_text(
                services.client, [fmt.Kind.EPISODES], EpisodeFilter(tag=tag)
            )
        ]
    )
    [line] = [json.loads(row) for row in text.splitlines()]
    assert line["rewards"] == [list(scored(6.0))] * 2  # Sotopia's field: the aggregate
    assert len(line[fmt.EXTRA]["judge_runs"]) == 4 and line[fmt.EXTRA]["judges"]

    await services.store.delete(before)
    await services.client.delete(keys.rejudging(rejudging.id))
    report = await import_lines(services.client, text.splitlines())
    assert (report.invalid, report.created) == (0, {"episodes": 1})
    after = await EpisodeLog.get(pk)
    assert after.judge_runs == before.judge_runs and after.panel() == before.panel()
    assert after.evaluations == before.evaluations
    imported: Any = await services.client.json().get(record_key)
    assert imported == {**record, "starts": 0}  # (its worker's starts are the old server's)
    assert imported["models"][0] == label(fake_llm, "MEDIAN")
    assert await rejudge.get_rejudging(services.client, rejudging.id) == rejudging


async def test_a_design_stored_before_panels_still_starts_with_its_judge(
    services: Services, fake_llm: FakeLLM
) -> None:
    """Its stored design has no `judges` or `judge_aggregate`: the same design created again
    is the same experiment (not a CONFLICT), and its episodes are judged by its judge model."""
    tag = f"panel-{uuid.uuid4().hex[:8]}"
    fields = await world(services, tag)
    model = fake_llm.model_name()
    design = design_of(fields, model, max_turns=2, judge_model=model)
    experiment, _ = await create_experiment(services, {"name": tag, "tag": tag, "design": design})
    assert experiment is not None
    key = Experiment.make_primary_key(str(experiment.pk))
    for name in ("judges", "judge_aggregate"):
        assert await services.client.json().delete(key, f"$.design.{name}") == 1
    again, errors = await create_experiment(services, {"name": tag, "tag": tag, "design": design})
    assert not errors and again is not None and again.pk == experiment.pk
    assert "judges" not in again.design
    _, queued, errors = await start_experiment(services, str(experiment.pk))
    assert not errors and queued == 1
    await burst(services)
    [episode] = await EpisodeLog.find(EpisodeLog.experiment_id == str(experiment.pk)).all()
    assert episode.models == [model, model, model] and episode.panel().label() == model
    assert episode.status == Status.COMPLETED and len(episode.judge_runs) == 1


async def test_a_record_judged_before_panels_shows_its_one_judge_run(
    gql: GraphQLClient, redis_client: redis.Redis
) -> None:
    """Sotopia's records (and Parley's before panels) store no runs: their judge's scores and
    reasoning are shown as its one run, and a failed judge's bare 0.0 as a failed run."""
    pk = f"panel-sotopia-{uuid.uuid4().hex[:8]}"
    reward: list[Any] = [4.0, {"goal": 6.0, "secret": 2.0, "overall_score": 4.0}]
    document: dict[str, Any] = {
        "pk": pk,
        "environment": "env",
        "agents": ["a", "b"],
        "models": ["gpt-4o", "m0", "m1"],
        "messages": [],
        "reasoning": "Agent 1 comments: fine",
        "rewards": [reward, reward],
    }
    await redis_client.json().set(EpisodeLog.make_primary_key(pk), "$", document)
    await redis_client.json().set(
        EpisodeLog.make_primary_key(f"{pk}-0"),
        "$",
        {**document, "pk": f"{pk}-0", "rewards": [0.0, 0.0]},
    )
    query = """query($id: ID!) { episode(id: $id) {
      judgeModel judges { model repeats } judgeAggregate judgeRunsCounted judgeRunsFailed
      judgeRuns { model repeat status reasoning error rewards { overall } } } }"""
    shown = (await gql.data(query, {"id": pk}))["episode"]
    assert shown == {
        "judgeModel": "gpt-4o",
        "judges": [{"model": "gpt-4o", "repeats": 1}],
        "judgeAggregate": "MEAN",
        "judgeRunsCounted": 1,
        "judgeRunsFailed": 0,
        "judgeRuns": [
            {
                "model": "gpt-4o",
                "repeat": 0,
                "status": "COMPLETED",
                "reasoning": "Agent 1 comments: fine",
                "error": None,
                "rewards": [{"overall": 4.0}, {"overall": 4.0}],
            }
        ],
    }
    unscored = (await gql.data(query, {"id": f"{pk}-0"}))["episode"]
    assert (unscored["judgeRunsCounted"], unscored["judgeRunsFailed"]) == (0, 1)
    assert unscored["judgeRuns"][0]["status"] == "FAILED"
    await redis_client.delete(*(EpisodeLog.make_primary_key(k) for k in (pk, f"{pk}-0")))


@pytest.mark.parametrize(
    "answer",
    [
        '{"reasoning": "no idea", "score": NaN}',
        '{"reasoning": "too good", "score": Infinity}',
        "Sure! Here are the scores: {not json",
    ],
)
async def test_a_judge_answering_no_usable_score_fails_only_its_own_runs(
    services: Services, fake_llm: FakeLLM, answer: str
) -> None:
    """Judge B answers every request (re-asks included) with no usable score: NaN or Infinity
    (which Python's JSON reads), or no JSON at all. Its run fails as INVALID_OUTPUT and the
    panel scores the episode with judge A's runs."""
    tag = f"panel-{uuid.uuid4().hex[:8]}"
    fields = await world(services, tag)
    fake_llm.add_rule(
        Rule(kind="judge", model="judge-a", score=8, times=None),
        Rule(kind="judge", model="judge-b", content=answer, times=None),
    )
    panel = [{"model": fake_llm.model_name("judge-a"), "repeats": 2}]
    panel.append({"model": fake_llm.model_name("judge-b")})
    pk = await started(services, {**fields, "judges": panel}, fake_llm)
    await burst(services)
    episode = await EpisodeLog.get(pk)
    assert episode.status == Status.COMPLETED and episode.error is None, episode.error
    assert episode.rewards == [scored(8.0), scored(8.0)]
    a0, a1, b = episode.judge_runs
    assert a0.counted and a1.counted and not b.counted
    assert b.code == JudgeErrorCode.INVALID_OUTPUT, (b.code, b.error)
