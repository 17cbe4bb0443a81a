"""A rating study read as an evaluation, over real HTTP against a real Redis: episodeResults of
the study's id are the raters' mean scores, as fresh as the last saved rating; and agreement of
the study with the episodes' own judge gives, for the study's raters as a panel, the alpha the
study's own agreement gives."""

import math
import statistics
from typing import Any

import pytest

from parley.engine.types import OVERALL_SCORE
from tests.support.server import GraphQLClient
from tests.support.studies import STUDY, rated_study, save_rating

pytestmark = pytest.mark.usefixtures("redis_client")  # binds the records the tests save

RESULTS = """
query($e: ID) {
  episodeResults(evaluation: $e, groupBy: [SEAT]) {
    groups { seat scored dimensions { dimension count mean } }
  }
}"""
AGREEMENT = """
query($episodes: StudyEpisodesInput!, $evaluations: [ID]!) {
  evaluationAgreement(episodes: $episodes, evaluations: $evaluations) {
    dimension panels { evaluation runs agreement { alpha { estimate } } }
    pairs { first second pearson { n } }
  }
}"""
STUDY_ALPHA = """
query($id: ID!) {
  ratingStudy(id: $id) { agreement { dimension humans { alpha { estimate } } } }
}"""
EPISODES = 4


def expected_means(ratings: list[dict[str, Any]], dimension: str) -> dict[int, float]:
    """By seat: the mean over episodes of the raters' mean score."""
    by_unit: dict[tuple[str, int], list[float]] = {}
    for rating in ratings:
        for score in rating["scores"]:
            if score["dimension"] == dimension:
                by_unit.setdefault((rating["episodeId"], score["agent"]), []).append(score["score"])
    return {
        seat: statistics.fmean(statistics.fmean(v) for (_, a), v in by_unit.items() if a == seat)
        for seat in (0, 1)
    }


async def test_results_of_a_study_are_its_raters_means_as_of_the_last_saved_rating(
    gql: GraphQLClient,
) -> None:
    study, _, tokens, rubric = await rated_study(gql, EPISODES)
    ratings = (await gql.data(STUDY, {"id": study}))["ratingStudy"]["ratings"]
    groups = (await gql.data(RESULTS, {"e": study}))["episodeResults"]["groups"]
    assert sorted(g["seat"] for g in groups) == [0, 1]
    for group in groups:
        assert group["scored"] == EPISODES
        goal = next(d for d in group["dimensions"] if d["dimension"] == "goal")
        assert math.isclose(goal["mean"], expected_means(ratings, "goal")[group["seat"]])

    await save_rating(gql, study, 1, tokens[1], 0, rubric, goal=10, revision=1)  # saved again
    again = (await gql.data(STUDY, {"id": study}))["ratingStudy"]["ratings"]
    assert expected_means(again, "goal") != expected_means(ratings, "goal")
    groups = (await gql.data(RESULTS, {"e": study}))["episodeResults"]["groups"]
    for group in groups:
        goal = next(d for d in group["dimensions"] if d["dimension"] == "goal")
        assert math.isclose(goal["mean"], expected_means(again, "goal")[group["seat"]])


async def test_agreement_with_a_study_takes_its_raters_as_a_panel(gql: GraphQLClient) -> None:
    study, episodes, _, rubric = await rated_study(gql, EPISODES)
    found = (
        await gql.data(AGREEMENT, {"episodes": {"ids": episodes}, "evaluations": [None, study]})
    )["evaluationAgreement"]
    own = (await gql.data(STUDY_ALPHA, {"id": study}))["ratingStudy"]["agreement"]
    alphas = {f["dimension"]: f["humans"]["alpha"]["estimate"] for f in own}
    assert [f["dimension"] for f in found] == [*(d["name"] for d in rubric), OVERALL_SCORE]
    for figures in found:
        (panel,) = figures["panels"]
        assert panel["evaluation"] == study and panel["runs"] == ["rater#0", "rater#1"]
        assert panel["agreement"]["alpha"]["estimate"] == alphas[figures["dimension"]]
        (pair,) = figures["pairs"]
        assert (pair["first"], pair["second"]) == (None, study)
        judged = figures["dimension"] in ("believability", OVERALL_SCORE)  # the judge's only
        assert pair["pearson"]["n"] == (2 * EPISODES if judged else 0)


async def test_an_id_that_is_neither_a_rejudging_nor_a_study_is_refused(gql: GraphQLClient) -> None:
    body = await gql.post(RESULTS, {"e": "01HZZZZZZZZZZZZZZZZZZZZZZZ"})
    (error,) = body["errors"]
    assert error["message"].startswith("no re-judging or rating study with id"), error
    assert error["extensions"]["code"] == "BAD_USER_INPUT"


async def test_results_show_their_agreement_with_a_study_beside_them(gql: GraphQLClient) -> None:
    """`humanAgreement` beside the episodes' own results is the pair evaluationAgreement gives
    for the study's episodes; a study that does not exist is a coded error."""
    study, episodes, _, _ = await rated_study(gql, EPISODES)
    query = """
    query($study: ID!) {
      episodeResults { humanAgreement(studyId: $study) {
        dimension pairs { first second pearson { n estimate } }
      } }
    }"""
    beside = (await gql.data(query, {"study": study}))["episodeResults"]["humanAgreement"]
    found = (
        await gql.data(AGREEMENT, {"episodes": {"ids": episodes}, "evaluations": [None, study]})
    )["evaluationAgreement"]
    assert [f["dimension"] for f in beside] == [f["dimension"] for f in found]
    for mine, theirs in zip(beside, found, strict=True):
        assert mine["pairs"][0]["first"] is None and mine["pairs"][0]["second"] == study
        assert mine["pairs"][0]["pearson"]["n"] == theirs["pairs"][0]["pearson"]["n"]
    body = await gql.post(query, {"study": "01HZZZZZZZZZZZZZZZZZZZZZZZ"})
    (error,) = body["errors"]
    assert error["message"].startswith("no rating study with id"), error
    assert error["extensions"]["code"] == "BAD_USER_INPUT"
