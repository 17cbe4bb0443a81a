"""A rating study's agreement statistics over real HTTP against a real Redis: three raters'
ratings saved through the API and a judge panel's scores stored on the episodes give, per
dimension and overall, the figures krippendorff, pingouin and scipy compute from the same
tables, and the same intervals every time they are asked for."""

import json
import math
import os
import random
import uuid
from typing import Any

import numpy as np
import pingouin
import pytest
from scipy import stats

from bench.support.processes import run
from parley.client.study import RESULTS
from parley.engine.types import OVERALL_SCORE, JudgeRun
from parley.resolvers.study_agreement import PLACES
from parley.storage.models import EpisodeLog
from tests.support.references import pingouin_icc, reference_alpha
from tests.support.server import GraphQLClient
from tests.support.studies import CREATE_STUDY, SAVE, finished_episodes

pytestmark = [
    pytest.mark.usefixtures("redis_client"),  # binds the records the tests save
    pytest.mark.filterwarnings("ignore:The inplace keyword:DeprecationWarning:pingouin"),
]
VIEW = """
query($study: ID!, $rater: Int!, $token: String!, $position: Int) {
  raterAssignment(studyId: $study, rater: $rater, raterToken: $token, position: $position) {
    rated current { turns { text } }
  }
}"""
EPISODES, AGENTS, RATERS = 6, 2, 3
MODELS = ["model-a", "model-b", "model-c"]
RUNS = [("panel-judge", 0), ("panel-judge", 1)]
SKIPPED = (2, 5)
"""Rater 2 leaves episode 5 unrated: those units have two raters' scores, and no ICC."""

Scores = dict[tuple[int, int, str], float]
"""By (episode, agent, dimension)."""


def judged(rubric: list[dict[str, Any]], draw: random.Random) -> Scores:
    """A judge's scores of every unit, each within its range; overall: their mean."""
    found: Scores = {}
    for e in range(EPISODES):
        for a in range(AGENTS):
            given = [draw.uniform(d["rangeLow"], d["rangeHigh"]) for d in rubric]
            found |= {(e, a, d["name"]): s for d, s in zip(rubric, given, strict=True)}
            found[e, a, OVERALL_SCORE] = sum(given) / len(given)
    return found


def as_rewards(scores: Scores, e: int, rubric: list[dict[str, Any]]) -> list[Any]:
    return [
        (
            scores[e, a, OVERALL_SCORE],
            {
                **{d["name"]: scores[e, a, d["name"]] for d in rubric},
                OVERALL_SCORE: scores[e, a, OVERALL_SCORE],
            },
        )
        for a in range(AGENTS)
    ]


async def store_judges(
    episodes: list[str], rubric: list[dict[str, Any]], judges: dict[str, Scores]
) -> None:
    """Each episode's own scores, its panel's runs and the models that played its agents."""
    for e, pk in enumerate(episodes):
        episode = await EpisodeLog.get(pk)
        episode.models = ["panel", MODELS[e % 3], MODELS[(e + 1) % 3]]
        episode.rewards = as_rewards(judges["judge"], e, rubric)
        episode.judge_runs = [
            JudgeRun(model=m, repeat=r, rewards=as_rewards(judges[f"{m}#{r}"], e, rubric))
            for m, r in RUNS
        ]
        await episode.save()


async def rate_everything(
    gql: GraphQLClient, study: str, tokens: list[str], rubric: list[dict[str, Any]]
) -> dict[int, Scores]:
    """Every rater rates their episodes (but SKIPPED) with scores drawn at random; by rater."""
    draw = random.Random(25)
    given: dict[int, Scores] = {}
    for rater, token in enumerate(tokens):
        given[rater] = {}
        variables = {"study": study, "rater": rater, "token": token}
        view = (await gql.data(VIEW, variables))["raterAssignment"]
        for position in range(len(view["rated"])):
            shown = await gql.data(VIEW, {**variables, "position": position})
            first = shown["raterAssignment"]["current"]["turns"][0]["text"]
            episode = int(first.removeprefix("Line 0 of episode ").removesuffix("."))
            if (rater, episode) == SKIPPED:
                continue
            scores = [
                {
                    "agent": a,
                    "dimension": d["name"],
                    "score": draw.randint(d["rangeLow"], d["rangeHigh"]),
                }
                for a in range(AGENTS)
                for d in rubric
            ]
            for s in scores:
                given[rater][episode, s["agent"], s["dimension"]] = s["score"]
            for a in range(AGENTS):
                mine = [given[rater][episode, a, d["name"]] for d in rubric]
                given[rater][episode, a, OVERALL_SCORE] = sum(mine) / len(mine)
            fields = {
                "studyId": study,
                "rater": rater,
                "raterToken": token,
                "position": position,
                "scores": scores,
            }
            saved = (await gql.data(SAVE, {"input": fields}))["saveRating"]
            assert saved["userErrors"] == [], saved
    return given


def close(found: float | None, expected: float, tolerance: float = 1e-9) -> bool:
    return found is not None and math.isclose(found, expected, rel_tol=1e-9, abs_tol=tolerance)


def check_interval(figure: dict[str, Any]) -> None:
    assert figure["reason"] is None, figure
    assert figure["low"] <= figure["estimate"] <= figure["high"], figure


async def test_the_figures_equal_the_references_on_the_same_tables(
    gql: GraphQLClient, api_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(pingouin.options, "round.column.CI95", raising=False)  # unrounded
    episodes = await finished_episodes(f"agree-{uuid.uuid4().hex[:8]}", EPISODES, AGENTS)
    payload = (
        await gql.data(
            CREATE_STUDY,
            {
                "input": {
                    "name": "Agreement",
                    "episodes": {"ids": episodes},
                    "raters": RATERS,
                    "ratersPerEpisode": RATERS,
                }
            },
        )
    )["createRatingStudy"]
    assert payload["userErrors"] == [], payload
    study = payload["study"]["id"]
    rubric = payload["study"]["rubric"]
    tokens = [link["token"] for link in payload["raterLinks"]]
    draw = random.Random(7)
    judges = {name: judged(rubric, draw) for name in ["judge", *(f"{m}#{r}" for m, r in RUNS)]}
    await store_judges(episodes, rubric, judges)
    humans = await rate_everything(gql, study, tokens, rubric)

    found = (await gql.data(RESULTS, {"id": study}))["ratingStudy"]["agreement"]
    dimensions = [d["name"] for d in rubric] + [OVERALL_SCORE]
    assert [f["dimension"] for f in found] == dimensions
    units = [(e, a) for e in range(EPISODES) for a in range(AGENTS)]
    unit_models = [MODELS[(e + a) % 3] for e, a in units]
    for figures, dimension in zip(found, dimensions, strict=True):
        table = np.array(
            [[humans[r].get((e, a, dimension), np.nan) for r in range(RATERS)] for e, a in units]
        )
        rated = figures["humans"]
        assert rated["raters"] == RATERS
        assert close(
            rated["alpha"]["estimate"],
            reference_alpha(table),
        ), dimension
        assert rated["alpha"]["n"] == len(units)
        check_interval(rated["alpha"])

        complete = table[~np.isnan(table).any(axis=1)]
        assert rated["iccDropped"] == AGENTS  # the agents of the episode rater 2 skipped
        reference = pingouin_icc(table)
        for field, kind in (("icc1", "ICC(A,1)"), ("icck", "ICC(A,k)")):
            figure = rated[field]
            assert figure["n"] == len(complete)
            if figure["estimate"] is None:  # pingouin's figure is then outside [-1, 1]
                assert figure["reason"] == "NO_VARIATION"
                continue
            assert close(figure["estimate"], reference.at[kind, "ICC"]), (dimension, field)
            if figure["low"] is not None:
                low, high = reference.at[kind, "CI95"]
                assert close(figure["low"], low) and close(figure["high"], high), (dimension, field)

        mean = np.round(np.nanmean(table, axis=1), PLACES)  # equal means tie
        assert [j["judge"] for j in figures["judgeVsHumans"]] == list(judges)
        for compared, ranked in zip(figures["judgeVsHumans"], figures["rankings"], strict=True):
            judge = np.array([judges[compared["judge"]][e, a, dimension] for e, a in units])
            r = stats.pearsonr(mean, judge)
            assert close(compared["pearson"]["estimate"], float(r.statistic))
            interval = r.confidence_interval(0.95)
            assert close(compared["pearson"]["low"], float(interval.low))
            assert close(compared["pearson"]["high"], float(interval.high))
            assert close(
                compared["spearman"]["estimate"], float(stats.spearmanr(mean, judge).statistic)
            )
            check_interval(compared["spearman"])
            assert compared["pearson"]["n"] == compared["spearman"]["n"] == len(units)

            assert ranked["judge"] == compared["judge"]
            means = {m["model"]: m for m in ranked["models"]}
            assert sorted(means) == MODELS
            for model in MODELS:
                mine = [i for i, m in enumerate(unit_models) if m == model]
                assert close(means[model]["humanMean"], float(np.mean(mean[mine])))
                assert close(means[model]["judgeMean"], float(np.mean(judge[mine])))
            tau = stats.kendalltau(
                [means[m]["humanMean"] for m in MODELS], [means[m]["judgeMean"] for m in MODELS]
            )
            assert close(ranked["tau"]["estimate"], float(tau.statistic))

    again = (await gql.data(RESULTS, {"id": study}))["ratingStudy"]["agreement"]
    assert again == found  # the bootstrap is seeded by the study

    env = dict(os.environ)
    as_json = await run("study", "results", study, "--json", "--url", api_url, env=env)
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout)["agreement"] == found
    printed = await run("study", "results", study, "--url", api_url, env=env)
    assert printed.returncode == 0, printed.stderr
    overall = found[-1]
    alpha = overall["humans"]["alpha"]
    icc1 = overall["humans"]["icc1"]
    pearson = overall["judgeVsHumans"][0]["pearson"]
    for figure in (alpha, icc1, pearson):
        if figure["low"] is not None:
            shown = f"{figure['estimate']:.3f} [{figure['low']:.3f}, {figure['high']:.3f}]"
            assert shown in printed.stdout, printed.stdout
    assert "overall_score" in printed.stdout and "panel-judge#1" in printed.stdout


async def test_a_study_without_ratings_says_why_each_figure_is_missing(
    gql: GraphQLClient,
) -> None:
    episodes = await finished_episodes(f"agree-{uuid.uuid4().hex[:8]}", 2)
    payload = (
        await gql.data(
            CREATE_STUDY,
            {"input": {"name": "Unrated", "episodes": {"ids": episodes}, "raters": 2}},
        )
    )["createRatingStudy"]
    study = payload["study"]["id"]
    found = (await gql.data(RESULTS, {"id": study}))["ratingStudy"]["agreement"]
    overall = found[-1]
    assert overall["dimension"] == OVERALL_SCORE
    assert overall["humans"]["raters"] == 0
    assert overall["humans"]["alpha"] == {
        "n": 0,
        "estimate": None,
        "low": None,
        "high": None,
        "resamples": None,
        "reason": "TOO_FEW_UNITS",
    }
    (judge,) = overall["judgeVsHumans"]
    assert judge["judge"] == "judge" and judge["pearson"]["reason"] == "TOO_FEW_UNITS"
