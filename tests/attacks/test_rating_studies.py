"""Rating studies against a real server and Redis, attacked where their records change under
them: an episode deleted (deleteEpisode) after the study was made must not tell a rater they
are done while episodes are left to rate, make the figures that compare a study with a
judgement unreadable, or stay counted in the study's results."""

import json
import uuid
from typing import Any

import pytest

from tests.support.server import GraphQLClient
from tests.support.studies import ASSIGNMENT, CREATE_STUDY, SAVE, finished_episodes, full_scores

pytestmark = pytest.mark.usefixtures("redis_client")  # binds the records the tests save

DELETE = "mutation($id: ID!) { deleteEpisode(input: {id: $id}) { deletedId userErrors { code } } }"
RESULTS = """
query($study: ID) {
  episodeResults(evaluation: $study, groupBy: [SEAT]) { groups { seat scored } }
}"""
HUMAN_AGREEMENT = """
query($study: ID!) {
  episodeResults { humanAgreement(studyId: $study) {
    dimension units pairs { first second pearson { n } }
  } }
}"""


async def new_study(
    gql: GraphQLClient, episodes: int, raters: int
) -> tuple[str, list[str], list[str], list[dict[str, Any]]]:
    """A study of new episodes, each rated by every rater: its id, episodes, tokens, rubric."""
    ids = await finished_episodes(f"att-study-{uuid.uuid4().hex[:8]}", episodes)
    fields = {"name": "Deleted", "episodes": {"ids": ids}, "raters": raters}
    made = await gql.data(CREATE_STUDY, {"input": {**fields, "ratersPerEpisode": raters}})
    payload = made["createRatingStudy"]
    assert payload["userErrors"] == [], payload
    tokens = [link["token"] for link in payload["raterLinks"]]
    return payload["study"]["id"], ids, tokens, payload["study"]["rubric"]


async def delete(gql: GraphQLClient, episode: str) -> None:
    deleted = (await gql.data(DELETE, {"id": episode}))["deleteEpisode"]
    assert deleted == {"deletedId": episode, "userErrors": []}, deleted


async def rate_all(
    gql: GraphQLClient, study: str, tokens: list[str], rubric: list[dict[str, Any]], episodes: int
) -> None:
    for rater, token in enumerate(tokens):
        for position in range(episodes):
            fields = {
                "studyId": study,
                "rater": rater,
                "raterToken": token,
                "position": position,
                "scores": full_scores(rubric, 2, pick=rater + position),
            }
            saved = (await gql.data(SAVE, {"input": fields}))["saveRating"]
            assert saved["userErrors"] == [], saved


def shown_episode(current: dict[str, Any], episodes: list[str]) -> str:
    """Which episode a rater is shown (finished_episodes numbers each one's lines)."""
    line = current["turns"][0]["text"]  # "Line 0 of episode <n>."
    return episodes[int(line.removesuffix(".").rsplit(" ", 1)[1])]


async def test_a_deleted_episode_does_not_tell_a_rater_they_are_done(gql: GraphQLClient) -> None:
    study, episodes, (token,), _ = await new_study(gql, 3, 1)
    asked = {"study": study, "rater": 0, "token": token}
    first = (await gql.data(ASSIGNMENT, asked))["raterAssignment"]["current"]
    gone = shown_episode(first, episodes)
    await delete(gql, gone)

    view = (await gql.data(ASSIGNMENT, asked))["raterAssignment"]
    assert view["rated"] == [False, False, False]
    assert view["current"] is not None, "two episodes are left to rate"
    assert shown_episode(view["current"], episodes) != gone
    at_gone = await gql.data(ASSIGNMENT, {**asked, "position": first["position"]})
    assert at_gone["raterAssignment"]["current"] is not None
    assert shown_episode(at_gone["raterAssignment"]["current"], episodes) != gone


async def test_a_study_with_a_deleted_episode_still_agrees_over_the_rest(
    gql: GraphQLClient,
) -> None:
    study, episodes, tokens, rubric = await new_study(gql, 3, 2)
    await rate_all(gql, study, tokens, rubric, 3)
    await delete(gql, episodes[0])

    body = await gql.post(HUMAN_AGREEMENT, {"study": study})
    assert "errors" not in body, json.dumps(body["errors"])
    figures = body["data"]["episodeResults"]["humanAgreement"]
    believability = next(f for f in figures if f["dimension"] == "believability")
    assert believability["units"] == 2 * 2  # two agents of each episode left
    assert believability["pairs"][0]["pearson"]["n"] == 2 * 2


async def test_results_of_a_study_leave_out_an_episode_deleted_since(gql: GraphQLClient) -> None:
    """The study's evaluation records were written when its results were first asked for; the
    episode deleted afterwards is no longer counted, as a re-judging's records of it go."""
    study, episodes, tokens, rubric = await new_study(gql, 2, 1)
    await rate_all(gql, study, tokens, rubric, 2)
    before = (await gql.data(RESULTS, {"study": study}))["episodeResults"]["groups"]
    assert [(g["seat"], g["scored"]) for g in before] == [(0, 2), (1, 2)]
    await delete(gql, episodes[0])

    after = (await gql.data(RESULTS, {"study": study}))["episodeResults"]["groups"]
    assert [(g["seat"], g["scored"]) for g in after] == [(0, 1), (1, 1)]


async def test_a_gold_episode_expecting_two_scores_of_one_agent_and_dimension_is_refused(
    gql: GraphQLClient, unchanged: Any
) -> None:
    """As a rating that scores an agent on a dimension twice is: which one would check the
    raters?"""
    ids = await finished_episodes(f"att-gold-{uuid.uuid4().hex[:8]}", 2)
    expected = [{"agent": 0, "dimension": "goal", "score": s} for s in (9, 2)]
    fields = {
        "name": "Gold twice",
        "episodes": {"ids": ids},
        "raters": 2,
        "gold": [{"episodeId": ids[0], "tolerance": 1, "expected": expected}],
    }
    async with unchanged():
        made = (await gql.data(CREATE_STUDY, {"input": fields}))["createRatingStudy"]
    assert made["study"] is None and made["raterLinks"] == [], made
    (error,) = made["userErrors"]
    assert error["field"] == ["input", "gold", "0", "expected", "1"], error
    assert error["code"] == "INVALID" and "twice" in error["message"], error


async def test_a_study_finishes_without_an_episode_deleted_before_it_was_rated(
    gql: GraphQLClient,
) -> None:
    """An unrated episode deleted since the study was made is no longer a rater's to rate: once
    the rest are rated the study is finished. One rated before it went stays counted."""
    study, episodes, (token,), rubric = await new_study(gql, 3, 1)
    progress = "query($id: ID!) { ratingStudy(id: $id) { progress { assigned rated finished } } }"
    asked = {"study": study, "rater": 0, "token": token}
    first = (await gql.data(ASSIGNMENT, asked))["raterAssignment"]["current"]
    fields = {
        "studyId": study,
        "rater": 0,
        "raterToken": token,
        "position": first["position"],
        "scores": full_scores(rubric, 2),
    }
    assert (await gql.data(SAVE, {"input": fields}))["saveRating"]["userErrors"] == []
    rated = shown_episode(first, episodes)
    unrated = [pk for pk in episodes if pk != rated]
    await delete(gql, rated)
    await delete(gql, unrated[0])
    found = (await gql.data(progress, {"id": study}))["ratingStudy"]["progress"]
    assert found == {"assigned": 2, "rated": 1, "finished": False}

    view = (await gql.data(ASSIGNMENT, asked))["raterAssignment"]["current"]
    assert shown_episode(view, episodes) == unrated[1]
    fields |= {"position": view["position"]}
    assert (await gql.data(SAVE, {"input": fields}))["saveRating"]["userErrors"] == []
    found = (await gql.data(progress, {"id": study}))["ratingStudy"]["progress"]
    assert found == {"assigned": 2, "rated": 2, "finished": True}


async def test_an_imported_episode_judged_under_a_studys_id_leaves_its_results_as_they_were(
    gql: GraphQLClient,
) -> None:
    """A study's results are its raters' means: an import whose episode carries an evaluation
    named by the study's id (a re-judging's id elsewhere, or a hostile file) would add that
    episode's scores to them. Its line is refused (CONFLICT) and nothing of it is written."""
    study, episodes, tokens, rubric = await new_study(gql, 2, 1)
    await rate_all(gql, study, tokens, rubric, 2)
    before = (await gql.data(RESULTS, {"study": study}))["episodeResults"]["groups"]
    tagged = "query($id: ID!) { episode(id: $id) { tag } }"
    tag = (await gql.data(tagged, {"id": episodes[0]}))["episode"]["tag"]
    exported = await gql.http.get("/export", params={"kind": "episodes", "tag": tag})
    line = json.loads(exported.text.splitlines()[0])
    scores = {"believability": 10.0, "overall_score": 10.0}
    line["episode_id"] = f"judged-as-{study}"
    line["parley"]["evaluations"] = [
        {"id": study, "judge_model": "someone", "status": "COMPLETED",
         "rewards": [[10.0, scores], [10.0, scores]]}
    ]  # fmt: skip
    answer = await gql.http.post(
        "/import", content=json.dumps(line), headers={"content-type": "application/x-ndjson"}
    )
    report = answer.json()
    assert report["created"] == {} and report["invalid"] == 1, report
    [problem] = report["problems"]
    assert problem["code"] == "CONFLICT" and "rating study" in problem["reason"], problem
    after = (await gql.data(RESULTS, {"study": study}))["episodeResults"]["groups"]
    assert after == before == [{"seat": 0, "scored": 2}, {"seat": 1, "scored": 2}]
    gone = "query($id: ID!) { episode(id: $id) { id } }"
    assert (await gql.data(gone, {"id": line["episode_id"]}))["episode"] is None
