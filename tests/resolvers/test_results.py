"""Grouped results from RediSearch against a reference computed from the raw scores."""

import json
import math
import random
import statistics
from collections import defaultdict
from typing import Any

import pytest
import redis.asyncio as redis
from scipy import stats
from ulid import ULID

from parley.resolvers.results import GroupBy, Results, ResultsFilter
from parley.resolvers.statistics import Summary
from parley.storage import keys
from parley.storage.connection import wait_indexed
from parley.storage.models import CustomEvaluationDimension, CustomEvaluationDimensionList
from parley.storage.results_index import STANDARD, ResultsIndex
from tests.support.server import GraphQLClient

PREFIX = f":{keys.SOTOPIA_LOGS_MODULE}.EpisodeLog:"
JUDGE = "judge-model"
PARTNER = "partner-model"
SCENARIOS = ["env-1", "env-2", "env-3"]


def reward(rng: random.Random, dims: tuple[str, ...] = STANDARD) -> list[Any]:
    scores = {d: float(rng.randint(-5, 10)) for d in dims}
    overall = statistics.fmean(scores.values())
    return [overall, {**scores, "overall_score": overall}]


def episode(
    tag: str, scenario: str, models: list[str], rewards: Any, **extra: Any
) -> dict[str, Any]:
    """An episode as Sotopia stores it; `extra` adds Parley's keys (status, ...)."""
    return {
        "pk": str(ULID()),
        "environment": scenario,
        "agents": [f"agent-{scenario}-0", f"agent-{scenario}-1"],
        "tag": tag,
        "models": models,
        "messages": [],
        "reasoning": "",
        "rewards": rewards,
        "rewards_prompt": "",
        **extra,
    }


async def store(client: redis.Redis, docs: list[dict[str, Any]]) -> None:
    async with client.pipeline(transaction=False) as pipe:
        for doc in docs:
            pipe.json().set(PREFIX + doc["pk"], "$", doc)
        await pipe.execute()


def benchmark_sample(tag: str, seed: int = 7) -> list[dict[str, Any]]:
    """Two models against one partner in both seats, unevenly repeated, plus episodes that
    must not be averaged: failed, cancelled, unfinished, and a judge that gave no scores."""
    rng = random.Random(seed)
    docs = []
    for model in ("model-a", "model-b"):
        for scenario in SCENARIOS:
            for seat in (0, 1):
                for _ in range(rng.randint(1, 5)):
                    seats = [model, PARTNER] if seat == 0 else [PARTNER, model]
                    extra = {"status": "COMPLETED"} if rng.random() < 0.5 else {}
                    docs.append(
                        episode(tag, scenario, [JUDGE, *seats], [reward(rng), reward(rng)], **extra)
                    )
    for status in ("FAILED", "CANCELLED", "QUEUED"):
        docs.append(episode(tag, "env-1", [JUDGE, "model-a", PARTNER], [], status=status))
    docs.append(episode(tag, "env-2", [JUDGE, "model-a", PARTNER], [0.0, 0.0]))
    return docs


def sotopia_reference(docs: list[dict[str, Any]], model: str) -> dict[str, tuple[float, float]]:
    """Sotopia's get_avg_reward over the scored episodes, with the exact t quantile."""
    cells: dict[str, list[dict[str, float]]] = defaultdict(list)
    for doc in docs:
        if not doc["rewards"] or isinstance(doc["rewards"][0], float):
            continue
        seat = 0 if doc["models"][1] == model else 1
        cells[f"{doc['environment']}_{seat}"].append(doc["rewards"][seat][1])
    everything = [r for rewards in cells.values() for r in rewards]
    out = {}
    for dim in everything[0]:
        mean = statistics.fmean(r[dim] for r in everything)
        variances = [
            statistics.variance([r[dim] for r in rs]) if len(rs) > 1 else 0.0
            for rs in cells.values()
        ]
        sem = math.sqrt(statistics.fmean(variances) / len(everything))
        out[dim] = (mean, float(stats.t.ppf(0.975, df=len(everything))) * sem)
    return out


def scores_of(docs: list[dict[str, Any]], model: str, dim: str) -> list[float]:
    found = []
    for doc in docs:
        if not doc["rewards"] or isinstance(doc["rewards"][0], float):
            continue
        for seat in (0, 1):
            if doc["models"][1 + seat] == model:
                value = doc["rewards"][seat]
                found.append(value[0] if dim == "overall" else value[1][dim])
    return found


def check(summary: Summary, scores: list[float]) -> None:
    n = len(scores)
    assert summary.count == n
    assert summary.mean == pytest.approx(statistics.fmean(scores), rel=1e-9, abs=1e-9)
    sd = statistics.stdev(scores)
    assert summary.sd == pytest.approx(sd, rel=1e-6)
    margin = float(stats.t.ppf(0.975, df=n - 1)) * sd / math.sqrt(n)
    assert summary.interval is not None
    assert summary.interval.margin == pytest.approx(margin, rel=1e-6)
    assert summary.interval.low == pytest.approx(statistics.fmean(scores) - margin, rel=1e-6)
    assert summary.interval.degrees_of_freedom == n - 1


async def test_each_model_matches_the_reference_and_sotopia_margin(
    redis_client: redis.Redis,
) -> None:
    tag = f"results-{ULID()}"
    docs = benchmark_sample(tag)
    await store(redis_client, docs)

    groups = await Results(redis_client).groups(
        ResultsFilter(tag=tag, partner_model=PARTNER), [GroupBy.MODEL]
    )

    assert [g.key[GroupBy.MODEL] for g in groups] == ["model-a", "model-b"]
    for group in groups:
        model = str(group.key[GroupBy.MODEL])
        model_docs = [d for d in docs if model in d["models"][1:]]
        reference = sotopia_reference(model_docs, model)
        summaries = dict(group.summaries())
        assert set(summaries) == {"overall", *STANDARD}
        for dim, summary in summaries.items():
            check(summary, scores_of(model_docs, model, dim))
            sotopia_dim = "overall_score" if dim == "overall" else dim
            mean, margin = reference[sotopia_dim]
            assert summary.mean == pytest.approx(mean, rel=1e-9, abs=1e-9)
            assert summary.sotopia_margin == pytest.approx(margin, rel=1e-6)
            assert summary.cells == 6
    a = groups[0]
    assert (a.failed, a.cancelled, a.unfinished, a.unscored) == (1, 1, 1, 1)
    assert a.scored == len(scores_of(docs, "model-a", "overall"))
    b = groups[1]
    assert (b.failed, b.cancelled, b.unfinished, b.unscored) == (0, 0, 0, 0)


async def test_grouping_by_seat_and_scenario_splits_the_scores(redis_client: redis.Redis) -> None:
    tag = f"results-{ULID()}"
    docs = benchmark_sample(tag, seed=11)
    await store(redis_client, docs)

    groups = await Results(redis_client).groups(
        ResultsFilter(tag=tag, model=["model-b"]), [GroupBy.SEAT, GroupBy.SCENARIO]
    )

    assert len(groups) == 6
    for group in groups:
        seat, scenario = group.key[GroupBy.SEAT], group.key[GroupBy.SCENARIO]
        expected = [
            d["rewards"][seat][1]["goal"]
            for d in docs
            if d["environment"] == scenario and d["models"][1 + int(str(seat))] == "model-b"
        ]
        goal = dict(group.summaries())["goal"]
        assert goal.count == len(expected)
        assert goal.mean == pytest.approx(statistics.fmean(expected))
        if len(expected) > 1:
            assert goal.sd == pytest.approx(statistics.stdev(expected), rel=1e-6)
        else:
            assert goal.sd is None and goal.interval is None


async def test_paired_comparison_matches_a_paired_t_interval(redis_client: redis.Redis) -> None:
    tag = f"results-{ULID()}"
    docs = benchmark_sample(tag, seed=3)
    await store(redis_client, docs)

    compared = dict(
        await Results(redis_client).compare(ResultsFilter(tag=tag), "model-a", "model-b")
    )

    diffs = []
    for scenario in SCENARIOS:
        for seat in (0, 1):
            means = []
            for model in ("model-a", "model-b"):
                scores = [
                    d["rewards"][seat][1]["goal"]
                    for d in docs
                    if d["environment"] == scenario
                    and d["models"][1 + seat] == model
                    and d["rewards"]
                    and not isinstance(d["rewards"][0], float)
                ]
                means.append(statistics.fmean(scores))
            diffs.append(means[0] - means[1])
    goal = compared["goal"]
    assert goal.pairs == 6
    assert goal.mean_difference == pytest.approx(statistics.fmean(diffs))
    margin = float(stats.t.ppf(0.975, df=5)) * statistics.stdev(diffs) / math.sqrt(6)
    assert goal.interval is not None
    assert goal.interval.margin == pytest.approx(margin, rel=1e-6)


async def test_a_custom_dimension_is_indexed_when_it_first_appears(
    redis_client: redis.Redis,
) -> None:
    tag = f"results-{ULID()}"
    dimension = CustomEvaluationDimension(name=f"warmth {ULID()}", range_low=0, range_high=10)
    await dimension.save()
    listed = CustomEvaluationDimensionList(name=tag, dimension_pks=[dimension.pk])
    await listed.save()
    rng = random.Random(5)
    docs = [
        episode(
            tag,
            "env-1",
            [JUDGE, "model-a", PARTNER],
            [reward(rng, (dimension.name,)), reward(rng, (dimension.name,))],
            evaluation_dimension_list_id=listed.pk,
        )
        for _ in range(4)
    ]
    await store(redis_client, docs)  # stored before the index knows the dimension
    await ResultsIndex(redis_client).ensure_dimensions([dimension.name])
    await wait_indexed(redis_client, timeout=30)  # the rescan of stored documents

    groups = await Results(redis_client).groups(ResultsFilter(tag=tag), [GroupBy.MODEL])

    a = next(g for g in groups if g.key[GroupBy.MODEL] == "model-a")
    summaries = dict(a.summaries())
    assert set(summaries) == {"overall", dimension.name}
    expected = [d["rewards"][0][1][dimension.name] for d in docs]
    assert summaries[dimension.name].count == 4
    assert summaries[dimension.name].mean == pytest.approx(statistics.fmean(expected))


async def test_values_with_special_characters_filter_exactly(redis_client: redis.Redis) -> None:
    tag = f"odd, tag: {{x}} | y-{ULID()}"
    rng = random.Random(1)
    model = "custom/llama-3@http://gpu:8000/v1"
    docs = [episode(tag, "env-1", [JUDGE, model, PARTNER], [reward(rng), reward(rng)])]
    await store(redis_client, docs)

    groups = await Results(redis_client).groups(
        ResultsFilter(tag=tag, model=[model]), [GroupBy.MODEL]
    )

    assert [(g.key[GroupBy.MODEL], g.scored) for g in groups] == [(model, 1)]
    assert json.dumps(groups[0].key[GroupBy.MODEL]) == json.dumps(model)


RESULTS_QUERY = """query($filter: EpisodeResultsFilter, $groupBy: [ResultsGroupBy!], $ev: ID) {
  episodeResults(filter: $filter, groupBy: $groupBy, evaluation: $ev) {
    groups { model seat scored failed cancelled unfinished unscored
      dimensions { dimension count mean sd sotopiaMargin settings
        confidenceInterval { low high margin degreesOfFreedom } } }
  }
}"""


async def test_results_over_http(redis_client: redis.Redis, gql: GraphQLClient) -> None:
    tag = f"results-{ULID()}"
    docs = benchmark_sample(tag, seed=21)
    await store(redis_client, docs)

    data = await gql.data(
        RESULTS_QUERY, {"filter": {"tag": tag, "model": "model-a"}, "groupBy": ["MODEL"]}
    )

    [group] = data["episodeResults"]["groups"]
    assert group["model"] == "model-a" and group["seat"] is None
    assert (group["failed"], group["cancelled"], group["unfinished"], group["unscored"]) == (
        1,
        1,
        1,
        1,
    )
    overall = group["dimensions"][0]
    scores = scores_of(docs, "model-a", "overall")
    assert overall["dimension"] == "overall" and overall["count"] == len(scores)
    assert overall["mean"] == pytest.approx(statistics.fmean(scores))
    reference = sotopia_reference([d for d in docs if "model-a" in d["models"]], "model-a")
    assert overall["sotopiaMargin"] == pytest.approx(reference["overall_score"][1], rel=1e-6)
    assert overall["confidenceInterval"]["degreesOfFreedom"] == len(scores) - 1


async def test_results_of_an_unknown_rejudging_are_refused(gql: GraphQLClient) -> None:
    body = await gql.post(RESULTS_QUERY, {"ev": "no-such-rejudging"})

    assert body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert "no re-judging" in body["errors"][0]["message"]


async def test_without_sotopia_margin_the_means_are_the_same(
    redis_client: redis.Redis, gql: GraphQLClient
) -> None:
    tag = f"results-{ULID()}"
    docs = benchmark_sample(tag, seed=31)
    await store(redis_client, docs)
    plain = """query($filter: EpisodeResultsFilter) { episodeResults(filter: $filter) {
      groups { model scored unscored dimensions { dimension count mean sd } } } }"""
    fragment = """query($filter: EpisodeResultsFilter) { episodeResults(filter: $filter) {
      groups { model dimensions { dimension ...margin } } } }
      fragment margin on DimensionResult { sotopiaMargin settings }"""
    variables = {"filter": {"tag": tag, "model": "model-b"}}

    [group] = (await gql.data(plain, variables))["episodeResults"]["groups"]
    [with_margin] = (await gql.data(fragment, variables))["episodeResults"]["groups"]

    goal = next(d for d in group["dimensions"] if d["dimension"] == "goal")
    scores = scores_of(docs, "model-b", "goal")
    assert goal["count"] == len(scores) and group["scored"] == len(scores)
    assert goal["mean"] == pytest.approx(statistics.fmean(scores))
    assert goal["sd"] == pytest.approx(statistics.stdev(scores), rel=1e-6)
    reference = sotopia_reference([d for d in docs if "model-b" in d["models"]], "model-b")
    margin = next(d for d in with_margin["dimensions"] if d["dimension"] == "goal")
    assert margin["sotopiaMargin"] == pytest.approx(reference["goal"][1], rel=1e-6)
    assert margin["settings"] == 6


async def test_counts_apart_are_of_episodes_when_both_seats_fall_in_one_group(
    redis_client: redis.Redis,
) -> None:
    """A model against itself: each episode has both seats in the model's group, and is one
    failed (or unscored, or unfinished) episode there, not two; by seat, one in each."""
    tag = f"results-{ULID()}"
    rng = random.Random(5)
    self_play = [JUDGE, "model-s", "model-s"]
    docs = [episode(tag, "env-1", self_play, [], status="FAILED") for _ in range(12)]
    docs += [episode(tag, "env-1", self_play, [], status="CANCELLED") for _ in range(2)]
    docs += [episode(tag, "env-1", self_play, [0.0, 0.0], status="COMPLETED") for _ in range(3)]
    docs.append(episode(tag, "env-1", self_play, [], status="RUNNING"))
    docs.append(episode(tag, "env-2", self_play, [reward(rng), reward(rng)], status="COMPLETED"))
    # another pairing: one seat scored, the other not (counted unscored for that seat's model)
    docs.append(
        episode(tag, "env-2", [JUDGE, "model-s", "model-t"], [reward(rng), 0.0], status="COMPLETED")
    )
    await store(redis_client, docs)

    by_model = await Results(redis_client).groups(ResultsFilter(tag=tag), [GroupBy.MODEL])
    counts = {
        g.key[GroupBy.MODEL]: (g.failed, g.cancelled, g.unfinished, g.unscored, g.scored)
        for g in by_model
    }
    assert counts == {"model-s": (12, 2, 1, 3, 3), "model-t": (0, 0, 0, 1, 0)}

    by_seat = await Results(redis_client).groups(
        ResultsFilter(tag=tag, model=("model-s",)), [GroupBy.MODEL, GroupBy.SEAT]
    )
    assert [(g.key[GroupBy.SEAT], g.failed, g.unscored, g.scored) for g in by_seat] == [
        (0, 12, 3, 2),
        (1, 12, 3, 1),
    ]
    partnered = await Results(redis_client).groups(
        ResultsFilter(tag=tag, partner_model="model-t"), [GroupBy.MODEL]
    )
    assert [(g.key[GroupBy.MODEL], g.failed, g.unscored, g.scored) for g in partnered] == [
        ("model-s", 0, 0, 1)
    ]


async def test_the_arm_filter_keeps_one_arm_of_an_experiment(redis_client: redis.Redis) -> None:
    tag = f"arms-{ULID()}"
    rng = random.Random(3)
    docs = [
        episode(tag, "env-1", [JUDGE, "model-a", PARTNER], [reward(rng), reward(rng)], arm=arm)
        for arm in ("control", "control", "alarm")
    ]
    docs.append(episode(tag, "env-1", [JUDGE, "model-a", PARTNER], [reward(rng), reward(rng)]))
    await store(redis_client, docs)  # the last as Sotopia writes one: no arm

    def scored(arm: str | None) -> Any:
        return Results(redis_client).groups(ResultsFilter(tag=tag, arm=arm), [GroupBy.MODEL])

    [control] = [g for g in await scored("control") if g.key[GroupBy.MODEL] == "model-a"]
    expected = [d["rewards"][0][0] for d in docs[:2]]
    assert control.scored == 2
    assert dict(control.summaries())["overall"].mean == pytest.approx(statistics.fmean(expected))
    [alarm] = [g for g in await scored("alarm") if g.key[GroupBy.MODEL] == "model-a"]
    assert alarm.scored == 1
    [every] = [g for g in await scored(None) if g.key[GroupBy.MODEL] == "model-a"]
    assert every.scored == 4


async def test_an_index_made_before_the_arm_field_gets_it(redis_client: redis.Redis) -> None:
    """An older Parley's indexes have no `arm`: start-up adds it, and documents stored before
    are filtered by it (RediSearch rescans on FT.ALTER)."""
    from parley.storage import results_index

    tag = f"old-{ULID()}"
    rng = random.Random(4)
    docs = [
        episode(tag, "env-1", [JUDGE, "model-a", PARTNER], [reward(rng), reward(rng)], arm=arm)
        for arm in ("control", "alarm")
    ]
    await store(redis_client, docs)
    older = [name for name in results_index.TAGS if name != "arm"]
    for index, prefix in results_index.INDEXES.items():
        await redis_client.execute_command("FT.DROPINDEX", index)  # type: ignore[no-untyped-call]
        await redis_client.execute_command(  # type: ignore[no-untyped-call]
            "FT.CREATE", index, "ON", "JSON", "PREFIX", 1, prefix, "SCHEMA",
            *results_index._tag_schema(older), *results_index._score_schema(["overall"]),
        )  # fmt: skip
    indexes = ResultsIndex(redis_client)
    assert "arm" not in (await indexes._fields(keys.RESULTS_INDEX) or set())

    await indexes.prepare()
    await wait_indexed(redis_client, timeout=30)

    for index in results_index.INDEXES:
        assert "arm" in (await indexes._fields(index) or set())
    groups = await Results(redis_client).groups(
        ResultsFilter(tag=tag, arm="control"), [GroupBy.MODEL]
    )
    # the control episode alone: one score of each seat's model
    assert {g.key[GroupBy.MODEL]: g.scored for g in groups} == {"model-a": 1, PARTNER: 1}
