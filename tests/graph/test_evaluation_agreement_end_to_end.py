"""Agreement between evaluations from end to end, against real `parley serve` and `parley worker`
processes: an experiment judged by a panel of two judge models and rated by three people in a
rating study; every figure of the panel (alpha, ICC(2,1), ICC(2,k)), of the study's raters and of
the pair (Pearson, Spearman, Kendall's tau) is the same through the API, `parley experiment
agreement --json` and the web app's "Judges compared", and equals what krippendorff, pingouin and
scipy compute from the scores the records hold."""

import json
import math
import random
from dataclasses import dataclass
from typing import Any

import numpy as np
import pingouin
import pytest
from playwright.async_api import Browser, expect
from scipy import stats

from bench.support.fake_llm import FakeLLM, Rule
from bench.support.processes import run, worker_process
from bench.support.simulation import post
from parley.engine.types import OVERALL_SCORE
from parley.storage.models import EpisodeLog
from tests.graph import test_webapp
from tests.graph.test_webapp import CREATE_EXPERIMENT, Service, comparing_design, unique
from tests.graph.test_webapp_evaluations import START_EXPERIMENT, until_finished
from tests.support.browser import AppPage
from tests.support.references import pingouin_icc, reference_alpha
from tests.support.studies import ASSIGNMENT, CREATE_STUDY, SAVE

browser = test_webapp.browser
service = test_webapp.service

JUDGE_A = [-6, 3, -2, 8]
"""What the first judge gives every dimension of each episode (kept within each range)."""
JUDGE_B = [-4, 1, 0, 9]
RATERS = 3
ESTIMATE = "{ n estimate low high }"
AGREEMENT = f"""
query($id: ID!, $evaluations: [ID]!) {{
  evaluationAgreement(episodes: {{experimentId: $id}}, evaluations: $evaluations) {{
    dimension units
    panels {{ evaluation runs
              agreement {{ raters alpha {ESTIMATE} icc1 {ESTIMATE} icck {ESTIMATE} }} }}
    pairs {{ first second pearson {ESTIMATE} spearman {ESTIMATE} tau {ESTIMATE}
             models {{ model firstMean secondMean }} }}
  }}
}}"""
RATINGS = """
query($id: ID!) {
  ratingStudy(id: $id) {
    rubric { name } ratings { rater episodeId scores { agent dimension score } }
  }
}"""
PLACES = 12
"""The places the API rounds a unit's mean of the raters' scores to (equal means tie)."""

Unit = tuple[str, int]
"""An episode and one of its agents."""


@dataclass
class Judged:
    experiment: str
    study: str
    runs: list[str]
    """The panel's runs as the API names them, `model#repeat`."""
    judges: dict[str, dict[str, dict[Unit, float]]]
    """By run, by dimension: each unit's score, from the stored episodes."""
    raters: dict[int, dict[str, dict[Unit, float]]]
    """By rater, by dimension: each unit's score, from the stored ratings."""
    models: dict[Unit, str]
    """The model that played each unit's agent."""


async def stored_judges(
    episodes: list[str],
) -> tuple[list[str], dict[str, dict[str, dict[Unit, float]]], dict[Unit, str]]:
    """Each judge run's scores of each unit as the episodes store them, and each unit's model."""
    runs: dict[str, dict[str, dict[Unit, float]]] = {}
    models: dict[Unit, str] = {}
    for pk in episodes:
        episode = await EpisodeLog.get(pk)
        assert len(episode.judge_runs) == 2, episode.judge_runs
        for judged in episode.judge_runs:
            name = f"{judged.model}#{judged.repeat}"
            for agent, (overall, scores) in enumerate(judged.rewards):
                for dimension, score in {OVERALL_SCORE: overall, **scores}.items():
                    runs.setdefault(name, {}).setdefault(dimension, {})[pk, agent] = score
        assert episode.models is not None
        for agent in range(2):
            models[pk, agent] = episode.models[agent + 1]
    return list(runs), runs, models


async def stored_ratings(url: str, study: str) -> dict[int, dict[str, dict[Unit, float]]]:
    """Each rater's scores of each unit as the study stores them; overall their mean."""
    found = (await post(url, RATINGS, {"id": study}))["ratingStudy"]
    dimensions = [d["name"] for d in found["rubric"]]
    raters: dict[int, dict[str, dict[Unit, float]]] = {}
    for rating in found["ratings"]:
        mine = raters.setdefault(rating["rater"], {})
        for s in rating["scores"]:
            mine.setdefault(s["dimension"], {})[rating["episodeId"], s["agent"]] = s["score"]
    for mine in raters.values():
        units = list(mine[dimensions[0]])
        mine[OVERALL_SCORE] = {u: float(np.mean([mine[d][u] for d in dimensions])) for u in units}
    return raters


def given(rater: int, agents: list[str], agent: int, dimension: dict[str, Any]) -> int:
    """A rater's score: what the seat order and agent call for, give or take one, by rater."""
    low, high = dimension["rangeLow"], dimension["rangeHigh"]
    meant = random.Random(f"{agents}/{agent}/{dimension['name']}").randint(low, high)
    noise = random.Random(f"{rater}/{agents}/{agent}/{dimension['name']}").randint(-1, 1)
    return int(min(high, max(low, meant + noise)))


async def rate(url: str, made: dict[str, Any], episodes: int) -> None:
    """Every rater rates every episode whole, each in the order the study gives them: raters
    near each other, so that the figures have intervals to compare."""
    study, rubric = made["study"]["id"], made["study"]["rubric"]
    for link in made["raterLinks"]:
        for position in range(episodes):
            seen = {"study": study, "rater": link["rater"], "token": link["token"]}
            view = await post(url, ASSIGNMENT, {**seen, "position": position})
            agents = [a["name"] for a in view["raterAssignment"]["current"]["agents"]]
            scores = [
                {"agent": a, "dimension": d["name"], "score": given(link["rater"], agents, a, d)}
                for a in range(2)
                for d in rubric
            ]
            fields = {
                "studyId": study,
                "rater": link["rater"],
                "raterToken": link["token"],
                "position": position,
                "revision": 0,
                "scores": scores,
            }
            saved = (await post(url, SAVE, {"input": fields}))["saveRating"]
            assert saved["userErrors"] == [], saved


@pytest.fixture(scope="module")
async def judged(service: Service, fake_llm_server: FakeLLM) -> Judged:
    fake_llm_server.reset()
    tag = unique("agree")
    design = comparing_design(seed=9, pairs=1)  # 2 compared models x 2 seat orders
    del design["judgeModel"]
    design["judges"] = [
        {"model": fake_llm_server.model_name("judge-a")},
        {"model": fake_llm_server.model_name("judge-b")},
    ]
    made = await post(
        service.url, CREATE_EXPERIMENT, {"input": {"name": tag, "tag": tag, "design": design}}
    )
    assert made["createExperiment"]["userErrors"] == [], made
    experiment = made["createExperiment"]["experiment"]["id"]
    fake_llm_server.add_rule(
        *(Rule(kind="judge", model="judge-a", score=s) for s in JUDGE_A),
        *(Rule(kind="judge", model="judge-b", score=s) for s in JUDGE_B),
    )
    # One episode at a time: each episode's two judges take the same place in their lists.
    with worker_process(service.env, service.logs / "agreement-worker.log", concurrency=1):
        await post(service.url, START_EXPERIMENT, {"id": experiment})
        await until_finished(service.url, experiment)
    fake_llm_server.reset()
    fields = {
        "name": f"Rated {tag}",
        "episodes": {"experimentId": experiment},
        "raters": RATERS,
        "ratersPerEpisode": RATERS,
    }
    study = (await post(service.url, CREATE_STUDY, {"input": fields}))["createRatingStudy"]
    assert study["userErrors"] == [], study
    await rate(service.url, study, len(JUDGE_A))
    slots = await post(
        service.url,
        "query($id: ID!) { experiment(id: $id) { slots { nodes { episode { id } } } } }",
        {"id": experiment},
    )
    episodes = [s["episode"]["id"] for s in slots["experiment"]["slots"]["nodes"]]
    runs, judges, models = await stored_judges(episodes)
    raters = await stored_ratings(service.url, study["study"]["id"])
    return Judged(experiment, study["study"]["id"], runs, judges, raters, models)


def close(found: float | None, expected: float) -> bool:
    return found is not None and math.isclose(found, expected, rel_tol=1e-9, abs_tol=1e-9)


def check_panel(agreement: dict[str, Any], table: np.ndarray, where: str) -> None:
    """alpha, ICC(2,1) and ICC(2,k) as krippendorff and pingouin compute them from `table`."""
    assert close(agreement["alpha"]["estimate"], reference_alpha(table)), where
    icc = pingouin_icc(table)
    for field, kind in (("icc1", "ICC(A,1)"), ("icck", "ICC(A,k)")):
        figure = agreement[field]
        assert close(figure["estimate"], icc.at[kind, "ICC"]), (where, field)
        low, high = icc.at[kind, "CI95"]
        assert close(figure["low"], low) and close(figure["high"], high), (where, field)


def check_references(found: list[dict[str, Any]], judged: Judged) -> None:
    """Every figure of the panel, of the raters and of the pair, against the references."""
    units = sorted(judged.models)
    dimensions = [d["dimension"] for d in found]
    assert dimensions[-1] == OVERALL_SCORE and len(dimensions) == 8
    for figures in found:
        dimension = figures["dimension"]
        assert figures["units"] == len(units) == 8
        panel, people = figures["panels"]
        assert panel["evaluation"] is None and panel["runs"] == judged.runs
        runs = np.array([[judged.judges[r][dimension][u] for r in judged.runs] for u in units])
        check_panel(panel["agreement"], runs, f"panel {dimension}")
        assert people["evaluation"] == judged.study
        assert people["runs"] == [f"rater#{r}" for r in range(RATERS)]
        rated = np.array([[judged.raters[r][dimension][u] for r in range(RATERS)] for u in units])
        check_panel(people["agreement"], rated, f"raters {dimension}")

        (pair,) = figures["pairs"]
        assert (pair["first"], pair["second"]) == (None, judged.study)
        judge_mean, human_mean = runs.mean(axis=1), np.round(rated.mean(axis=1), PLACES)
        r = stats.pearsonr(judge_mean, human_mean)
        interval = r.confidence_interval(0.95)
        assert pair["pearson"]["n"] == len(units)
        assert close(pair["pearson"]["estimate"], float(r.statistic)), dimension
        assert close(pair["pearson"]["low"], float(interval.low))
        assert close(pair["pearson"]["high"], float(interval.high))
        rho = stats.spearmanr(judge_mean, human_mean).statistic
        assert close(pair["spearman"]["estimate"], float(rho)), dimension
        models = sorted(set(judged.models.values()))
        means = {m["model"]: m for m in pair["models"]}
        assert sorted(means) == models
        firsts, seconds = [], []
        for model in models:
            mine = [i for i, u in enumerate(units) if judged.models[u] == model]
            firsts.append(float(np.mean(judge_mean[mine])))
            seconds.append(float(np.mean(human_mean[mine])))
            assert close(means[model]["firstMean"], firsts[-1])
            assert close(means[model]["secondMean"], seconds[-1])
        tau = stats.kendalltau(firsts, seconds).statistic
        if math.isnan(tau):  # the two models tie in a ranking
            assert pair["tau"]["estimate"] is None
        else:
            assert close(pair["tau"]["estimate"], float(tau)), dimension


async def test_the_api_cli_and_web_app_give_the_references_figures(
    browser: Browser, service: Service, judged: Judged, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(pingouin.options, "round.column.CI95", raising=False)  # unrounded
    variables = {"id": judged.experiment, "evaluations": [None, judged.study]}
    found = (await post(service.url, AGREEMENT, variables))["evaluationAgreement"]
    check_references(found, judged)

    done = await run(
        "experiment",
        "agreement",
        judged.experiment,
        "--evaluation",
        "original",
        "--evaluation",
        judged.study,
        "--json",
        "--url",
        service.url,
        env=service.env,
    )
    assert done.returncode == 0, done.stderr
    from_cli = json.loads(done.stdout)
    check_references(from_cli, judged)

    async with AppPage.open(browser, service.url, f"#/experiments/{judged.experiment}") as tab:
        section = tab.page.locator("section.judges-compared")
        labels = section.locator("fieldset label")
        await expect(labels).to_have_count(2)  # the panel's judging and the study
        await section.get_by_role("button", name="Compare").click()  # both are ticked
        rows = section.locator("table.pairs tbody tr")
        await expect(rows).to_have_count(len(found))
        shown = []
        for figures in found:
            dimension = figures["dimension"]
            pair = section.locator(f'table.pairs tr[data-dimension="{dimension}"]')
            panels = section.locator(f'table.panels tr[data-dimension="{dimension}"]')
            keys = await panels.evaluate_all("rows => rows.map(r => r.dataset.evaluation)")
            assert keys == ["", judged.study]
            cells = await pair.locator("td.pearson, td.spearman, td.tau").evaluate_all(FIGURES)
            within = await panels.locator("td.alpha, td.icc1, td.icck").evaluate_all(FIGURES)
            shown.append(
                {
                    "dimension": dimension,
                    "panels": grouped(within, ["alpha", "icc1", "icck"]),
                    "pairs": grouped(cells, ["pearson", "spearman", "tau"]),
                }
            )
        assert shown == [
            {
                "dimension": f["dimension"],
                "panels": [
                    {k: p["agreement"][k] for k in ("alpha", "icc1", "icck")} for p in f["panels"]
                ],
                "pairs": [{k: p[k] for k in ("pearson", "spearman", "tau")} for p in f["pairs"]],
            }
            for f in found
        ]
        assert await tab.clean() == []


FIGURES = (
    "cells => cells.map(c => [c.dataset.estimate, c.dataset.low, c.dataset.high, c.dataset.n])"
)
"""Each figure cell's estimate, interval and count as the page keeps them."""


def grouped(cells: list[list[str]], names: list[str]) -> list[dict[str, Any]]:
    """The page's figure cells, row by row, shaped as the API's figures of each row."""

    def figure(cell: list[str]) -> dict[str, Any]:
        estimate, low, high = (None if v == "" else float(v) for v in cell[:3])
        return {"n": int(cell[3]), "estimate": estimate, "low": low, "high": high}

    rows = [cells[i : i + len(names)] for i in range(0, len(cells), len(names))]
    return [dict(zip(names, map(figure, row), strict=True)) for row in rows]


def said(figure: dict[str, Any]) -> str:
    """A figure as the command's tables print it."""
    return f"{figure['estimate']:.3f} [{figure['low']:.3f}, {figure['high']:.3f}]"


async def test_the_command_prints_a_table_per_dimension_of_every_evaluation_by_default(
    service: Service, judged: Judged
) -> None:
    """Without --evaluation it compares every evaluation of the experiment; a bare --evaluation
    is the episodes' own judging, as `original` is."""
    variables = {"id": judged.experiment, "evaluations": [None, judged.study]}
    found = (await post(service.url, AGREEMENT, variables))["evaluationAgreement"]
    url = ["--url", service.url]
    tables = await run("experiment", "agreement", judged.experiment, *url, env=service.env)
    assert tables.returncode == 0, tables.stderr
    for figures in found:
        dimension = figures["dimension"]
        assert f"{dimension}: within each panel" in tables.stdout
        assert f"{dimension}: between two evaluations, 8 agents" in tables.stdout
        (pair,) = figures["pairs"]
        row = next(
            line
            for line in tables.stdout.splitlines()
            if said(pair["pearson"]) in line and said(pair["spearman"]) in line
        )
        cells = [cell.strip() for cell in row.strip("│ ").split("│")]
        assert cells[:3] == ["original", judged.study, "8"], row
    every = await run("experiment", "agreement", judged.experiment, "--json", *url, env=service.env)
    bare = [judged.experiment, "--evaluation", "--evaluation", judged.study, "--json"]
    named = await run("experiment", "agreement", *bare, *url, env=service.env)
    assert every.returncode == named.returncode == 0, every.stderr + named.stderr
    assert json.loads(every.stdout) == json.loads(named.stdout)
    pairs = [(p["first"], p["second"]) for d in json.loads(every.stdout) for p in d["pairs"]]
    assert set(pairs) == {(None, judged.study)}


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["no-such-experiment"], "no experiment with id 'no-such-experiment'"),
        (
            [
                "EXPERIMENT",
                "--evaluation",
                "original",
                "--evaluation",
                "01HZZZZZZZZZZZZZZZZZZZZZZZ",
            ],
            "no re-judging or rating study with id '01HZZZZZZZZZZZZZZZZZZZZZZZ' (BAD_USER_INPUT)",
        ),
        (["EXPERIMENT", "--evaluation", "--evaluation", "original"], "(BAD_USER_INPUT)"),
    ],
)
async def test_a_mistake_is_said_in_one_coded_line_with_status_2(
    service: Service, judged: Judged, args: list[str], words: str
) -> None:
    given = [judged.experiment if a == "EXPERIMENT" else a for a in args]
    done = await run("experiment", "agreement", *given, "--url", service.url, env=service.env)
    assert done.returncode == 2 and words in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
