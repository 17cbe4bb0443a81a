"""Agreement between evaluations over real HTTP against a real Redis: the episodes' own judge
and a re-judging by a two-run panel give, per dimension and overall, the figures scipy and
krippendorff compute from the same scores; the same intervals every time; and every bad
argument is a coded error that names it."""

import math
import random
import uuid
from typing import Any

import krippendorff
import numpy as np
import pytest
import redis.asyncio as redis
from scipy import stats

from parley.engine.types import OVERALL_SCORE, JudgeRun
from parley.storage import keys
from parley.storage.models import EpisodeLog, Evaluation, EvaluationStatus
from tests.support.server import GraphQLClient
from tests.support.studies import finished_episodes

pytestmark = pytest.mark.usefixtures("redis_client")  # binds the records the tests save

ESTIMATE = "{ n estimate low high resamples reason }"
AGREEMENT = f"""
query($episodes: StudyEpisodesInput!, $evaluations: [ID]!) {{
  evaluationAgreement(episodes: $episodes, evaluations: $evaluations) {{
    dimension units
    panels {{ evaluation runs agreement {{ raters alpha {ESTIMATE} icc1 {ESTIMATE} }} }}
    pairs {{ first second pearson {ESTIMATE} spearman {ESTIMATE} tau {ESTIMATE}
             models {{ model firstMean secondMean }} }}
  }}
}}"""
EPISODES, AGENTS = 12, 2
MODELS = ["model-a", "model-b", "model-c"]
DIMENSIONS = ["goal", "believability"]
RUNS = [("judge-x", 0), ("judge-x", 1)]

Scores = dict[tuple[int, int, str], float]


def drawn(draw: random.Random) -> Scores:
    found: Scores = {}
    for e in range(EPISODES):
        for a in range(AGENTS):
            given = [float(draw.randint(0, 10)) for _ in DIMENSIONS]
            found |= {(e, a, d): s for d, s in zip(DIMENSIONS, given, strict=True)}
            found[e, a, OVERALL_SCORE] = sum(given) / len(given)
    return found


def rewards(scores: Scores, e: int) -> list[Any]:
    return [
        (scores[e, a, OVERALL_SCORE], {d: scores[e, a, d] for d in [*DIMENSIONS, OVERALL_SCORE]})
        for a in range(AGENTS)
    ]


async def judged_episodes(client: redis.Redis) -> tuple[list[str], str, dict[str, Scores]]:
    """Episodes with their own judge's scores and a finished re-judging by a two-run panel
    (its aggregate the runs' mean); the re-judging's id and every source's scores."""
    episodes = await finished_episodes(f"eva-{uuid.uuid4().hex[:8]}", EPISODES, AGENTS)
    draw = random.Random(11)
    runs = {f"{m}#{r}": drawn(draw) for m, r in RUNS}
    own = drawn(draw)
    mean = {k: (runs["judge-x#0"][k] + runs["judge-x#1"][k]) / 2 for k in own}
    rejudging = uuid.uuid4().hex
    for e, pk in enumerate(episodes):
        episode = await EpisodeLog.get(pk)
        episode.models = ["judge", MODELS[e % 3], MODELS[(e + 1) % 3]]
        episode.rewards = rewards(own, e)
        episode.evaluations = [
            Evaluation(
                id=rejudging,
                judge_model="panel(MEAN): judge-x x2",
                status=EvaluationStatus.COMPLETED,
                rewards=rewards(mean, e),
                judge_runs=[
                    JudgeRun(model=m, repeat=r, rewards=rewards(runs[f"{m}#{r}"], e))
                    for m, r in RUNS
                ],
            )
        ]
        await episode.save()
    await client.hset(keys.rejudging(rejudging), mapping={"judge_model": "x", "episodes": 1})
    return episodes, rejudging, {"own": own, "rejudged": mean, **runs}


def close(found: float | None, expected: float) -> bool:
    return found is not None and math.isclose(found, expected, rel_tol=1e-9, abs_tol=1e-9)


async def test_the_figures_equal_the_references_on_the_same_scores(
    gql: GraphQLClient, redis_client: redis.Redis
) -> None:
    episodes, rejudging, scores = await judged_episodes(redis_client)
    variables = {"episodes": {"ids": episodes}, "evaluations": [None, rejudging]}
    found = (await gql.data(AGREEMENT, variables))["evaluationAgreement"]

    assert [f["dimension"] for f in found] == [*DIMENSIONS, OVERALL_SCORE]
    units = [(e, a) for e in range(EPISODES) for a in range(AGENTS)]
    unit_models = [MODELS[(e + a) % 3] for e, a in units]
    for figures, dimension in zip(found, [*DIMENSIONS, OVERALL_SCORE], strict=True):
        assert figures["units"] == len(units)
        (panel,) = figures["panels"]  # the own judge is one judge: no panel
        assert panel["evaluation"] == rejudging
        assert panel["runs"] == ["judge-x#0", "judge-x#1"]
        table = np.array(
            [[scores[run][e, a, dimension] for run in panel["runs"]] for e, a in units]
        )
        reference = krippendorff.alpha(reliability_data=table.T, level_of_measurement="interval")
        assert close(panel["agreement"]["alpha"]["estimate"], reference), dimension
        assert panel["agreement"]["raters"] == 2

        (pair,) = figures["pairs"]
        assert pair["first"] is None and pair["second"] == rejudging
        own = np.array([scores["own"][e, a, dimension] for e, a in units])
        rejudged = np.array([scores["rejudged"][e, a, dimension] for e, a in units])
        r = stats.pearsonr(own, rejudged)
        assert close(pair["pearson"]["estimate"], float(r.statistic))
        interval = r.confidence_interval(0.95)
        assert close(pair["pearson"]["low"], float(interval.low))
        assert close(pair["pearson"]["high"], float(interval.high))
        rho = stats.spearmanr(own, rejudged).statistic
        assert close(pair["spearman"]["estimate"], float(rho))
        means = {m["model"]: m for m in pair["models"]}
        assert sorted(means) == MODELS
        for model in MODELS:
            mine = [i for i, m in enumerate(unit_models) if m == model]
            assert close(means[model]["firstMean"], float(np.mean(own[mine])))
            assert close(means[model]["secondMean"], float(np.mean(rejudged[mine])))
        tau = stats.kendalltau(
            [means[m]["firstMean"] for m in MODELS], [means[m]["secondMean"] for m in MODELS]
        )
        assert close(pair["tau"]["estimate"], float(tau.statistic))

    again = (await gql.data(AGREEMENT, variables))["evaluationAgreement"]
    assert again == found  # the bootstraps are seeded by what is compared


async def test_an_episode_a_rejudging_did_not_judge_has_no_score_from_it(
    gql: GraphQLClient, redis_client: redis.Redis
) -> None:
    episodes, rejudging, _ = await judged_episodes(redis_client)
    others = await finished_episodes(f"eva-{uuid.uuid4().hex[:8]}", 2, AGENTS)
    variables = {"episodes": {"ids": [*episodes, *others]}, "evaluations": [None, rejudging]}
    overall = (await gql.data(AGREEMENT, variables))["evaluationAgreement"][-1]
    assert overall["units"] == (EPISODES + 2) * AGENTS
    assert overall["pairs"][0]["pearson"]["n"] == EPISODES * AGENTS  # both scored only these


@pytest.mark.parametrize(
    ("episodes", "evaluations", "words"),
    [
        ({"ids": ["STORED"]}, [], "name 1 to 10 evaluations"),
        ({"ids": ["STORED"]}, [None] * 11, "name 1 to 10 evaluations"),
        ({"ids": ["STORED"]}, [None, None], "named twice"),
        ({"ids": ["STORED"]}, [None, "no-such-rejudging"], "no re-judging or rating study with id"),
        ({"ids": ["STORED", "01HZZZZZZZZZZZZZZZZZZZZZZZ"]}, [None], "no episode with id"),
        ({"ids": ["STORED"], "tag": "x"}, [None], "exactly one of ids, experimentId or tag"),
        ({"tag": "no-such-tag-anywhere"}, [None], "no episode has tag"),
        ({"experimentId": "01HZZZZZZZZZZZZZZZZZZZZZZZ"}, [None], "no experiment"),
        ({"ids": ["x" * 300]}, [None], "episodes.ids.0"),
    ],
)
async def test_a_bad_argument_is_a_coded_error_that_names_it(
    gql: GraphQLClient, episodes: dict[str, Any], evaluations: list[str | None], words: str
) -> None:
    (stored,) = await finished_episodes(f"eva-{uuid.uuid4().hex[:8]}", 1, AGENTS)
    chosen = {
        k: [stored if v == "STORED" else v for v in value] if k == "ids" else value
        for k, value in episodes.items()
    }
    body = await gql.post(AGREEMENT, {"episodes": chosen, "evaluations": evaluations})
    assert body["data"] is None
    (error,) = body["errors"]
    assert words in error["message"], error
    assert error["extensions"]["code"] == "BAD_USER_INPUT", error
