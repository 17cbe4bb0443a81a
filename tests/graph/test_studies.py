"""Rating studies over real HTTP against a real Redis: a study made from episodes, a tag or an
experiment (completed episodes only, every refusal coded and nothing stored), raters who see
episodes blind in an order of their own and resume where they stopped, ratings stored as
Sotopia's AnnotationForEpisode with drafts, revisions, gold flags, renewed and closed links."""

import json
import uuid
from collections import Counter
from typing import Any

import pytest
import redis.asyncio as redis

from parley.core.limits import STUDY_RATERS_MAX
from parley.storage import keys
from parley.storage.models import EpisodeLog, EpisodeStatus
from tests.support.server import GraphQLClient
from tests.support.studies import (
    ASSIGNMENT,
    CLOSE,
    CREATE_STUDY,
    DRAFT,
    JUDGE_REASONING,
    JUDGE_SCORE,
    MODEL,
    RENEW,
    SAVE,
    SECRET,
    STUDY,
    finished_episodes,
    full_scores,
)

pytestmark = pytest.mark.usefixtures("redis_client")  # binds the records the tests save
CREATE_LIST = """
mutation($input: CreateEvaluationDimensionListInput!) {
  createEvaluationDimensionList(input: $input) {
    evaluationDimensionList { id } userErrors { message }
  }
}"""


def unique(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


async def create(gql: GraphQLClient, **fields: Any) -> dict[str, Any]:
    payload: dict[str, Any] = (await gql.data(CREATE_STUDY, {"input": fields}))["createRatingStudy"]
    return payload


async def made(gql: GraphQLClient, **fields: Any) -> tuple[dict[str, Any], list[str]]:
    """A study that must be made: it, and its raters' tokens."""
    payload = await create(gql, **fields)
    assert payload["userErrors"] == [], payload
    return payload["study"], [link["token"] for link in payload["raterLinks"]]


async def assignment(
    gql: GraphQLClient, study: str, rater: int, token: str, position: int | None = None
) -> dict[str, Any] | None:
    variables = {"study": study, "rater": rater, "token": token, "position": position}
    found: dict[str, Any] | None = (await gql.data(ASSIGNMENT, variables))["raterAssignment"]
    return found


async def first_line(gql: GraphQLClient, study: str, rater: int, token: str, position: int) -> str:
    """The first words of the rater's episode at `position`: which episode it is."""
    view = await assignment(gql, study, rater, token, position)
    assert view is not None and view["current"] is not None
    text: str = view["current"]["turns"][0]["text"]
    return text


async def rate(
    gql: GraphQLClient, study: str, rater: int, token: str, **fields: Any
) -> dict[str, Any]:
    given = {"studyId": study, "rater": rater, "raterToken": token, **fields}
    payload: dict[str, Any] = (await gql.data(SAVE, {"input": given}))["saveRating"]
    return payload


async def status(gql: GraphQLClient, study: str) -> dict[str, Any]:
    found: dict[str, Any] = (await gql.data(STUDY, {"id": study}))["ratingStudy"]
    return found


async def test_a_study_gives_each_episode_its_raters_and_each_rater_a_link(
    gql: GraphQLClient, redis_client: redis.Redis
) -> None:
    tag = unique("study")
    episodes = await finished_episodes(tag, 5)
    gold = (await finished_episodes(unique("gold"), 1))[0]
    study, tokens = await made(
        gql,
        name="Five episodes",
        episodes={"ids": episodes},
        raters=3,
        raterNames=["Ada", "Bo"],
        ratersPerEpisode=2,
        gold=[{"episodeId": gold, "expected": [{"agent": 0, "dimension": "goal", "score": 8}]}],
    )
    assert len(tokens) == 3 and len(set(tokens)) == 3
    assert [r["name"] for r in study["raters"]] == ["Ada", "Bo", "Rater 3"]
    assert study["showsSecrets"] is True  # Sotopia's rubric rates keeping secrets
    assert [d["name"] for d in study["rubric"]][-1] == "goal"
    found = await status(gql, study["id"])
    assert found["progress"] == {"assigned": 13, "rated": 0, "finished": False}
    by_episode = {e["episodeId"]: e for e in found["episodes"]}
    assert [len(by_episode[e]["raters"]) for e in episodes] == [2] * 5
    assert by_episode[gold] == {"episodeId": gold, "gold": True, "raters": [0, 1, 2], "ratedBy": []}
    assert sorted(r["assigned"] for r in found["raters"]) == [4, 4, 5]  # 10 shared out, +1 gold
    for rater, token in enumerate(tokens):
        view = await assignment(gql, study["id"], rater, token)
        assert view is not None and view["rated"] == [False] * found["raters"][rater]["assigned"]
        assert view["raterName"] == found["raters"][rater]["name"]
    for rater in found["raters"]:  # each rater is a Sotopia Annotator
        stored = await redis_client.json().get(keys.annotator(rater["annotatorId"]))
        assert stored == {"pk": rater["annotatorId"], "name": rater["name"], "email": ""}


async def test_a_rater_sees_the_episode_blind(gql: GraphQLClient) -> None:
    (episode,) = await finished_episodes(unique("blind"), 1)
    study, (token,) = await made(gql, name="Blind", episodes={"ids": [episode]}, raters=1)
    view = await assignment(gql, study["id"], 0, token)
    assert view is not None and view["current"] is not None
    task = view["current"]
    assert task["scenario"] == "Colleagues decide where to have lunch."
    assert [a["goal"] for a in task["agents"]] == [
        "Pick a place you like (seat 0)",
        "Pick a place you like (seat 1)",
    ]
    assert [a["secret"] for a in task["agents"]] == [SECRET, SECRET]
    assert [t["text"] for t in task["turns"]] == [f"Line {t} of episode 0." for t in range(3)]
    text = json.dumps(view)
    for hidden in (MODEL, "rated-model", JUDGE_REASONING, str(JUDGE_SCORE), episode, "COMPLETED"):
        assert hidden not in text, hidden


async def test_a_rubric_without_secrets_hides_them(gql: GraphQLClient) -> None:
    (episode,) = await finished_episodes(unique("nosecret"), 1)
    dimensions = [{"name": "warmth", "description": "How warm.", "rangeLow": 1, "rangeHigh": 5}]
    listed = await gql.data(
        CREATE_LIST, {"input": {"name": unique("warmth"), "dimensions": dimensions}}
    )
    list_id = listed["createEvaluationDimensionList"]["evaluationDimensionList"]["id"]
    study, (token,) = await made(
        gql, name="Warmth", episodes={"ids": [episode]}, raters=1, evaluationDimensionListId=list_id
    )
    assert study["showsSecrets"] is False and study["rubric"] == [
        {"name": "warmth", "rangeLow": 1, "rangeHigh": 5}
    ]
    view = await assignment(gql, study["id"], 0, token)
    assert view is not None and [a["secret"] for a in view["current"]["agents"]] == [None, None]
    assert SECRET not in json.dumps(view)


async def test_each_rater_has_an_order_of_their_own_that_a_reload_keeps(gql: GraphQLClient) -> None:
    episodes = await finished_episodes(unique("order"), 8, agents=2)
    study, tokens = await made(
        gql, name="Order", episodes={"ids": episodes}, raters=3, ratersPerEpisode=3
    )
    orders = []
    for rater, token in enumerate(tokens):
        seen = [await first_line(gql, study["id"], rater, token, p) for p in range(8)]
        again = [await first_line(gql, study["id"], rater, token, p) for p in range(8)]
        assert again == seen
        assert sorted(seen) == sorted(f"Line 0 of episode {n}." for n in range(8))
        orders.append(seen)
    assert len({tuple(order) for order in orders}) == 3


async def test_a_rating_is_saved_once_and_the_next_episode_comes(
    gql: GraphQLClient, redis_client: redis.Redis
) -> None:
    episodes = await finished_episodes(unique("rate"), 2)
    study, (token,) = await made(gql, name="Rate", episodes={"ids": episodes}, raters=1)
    pk = study["id"]
    first = await assignment(gql, pk, 0, token)
    assert (
        first is not None
        and first["current"]["position"] == 0
        and first["current"]["revision"] == 0
    )
    scores = full_scores(first["rubric"], 2, pick=3)
    saved = await rate(gql, pk, 0, token, position=0, scores=scores, reasoning="Both were fair.")
    assert saved == {"stored": True, "revision": 1, "rated": 1, "total": 2, "userErrors": []}
    found = await status(gql, pk)
    (rating,) = found["ratings"]
    annotation: Any = await redis_client.json().get(keys.annotation(rating["annotationId"]))
    assert (
        annotation["episode"] == rating["episodeId"]
        and annotation["annotator_id"] == found["raters"][0]["annotatorId"]
    )
    assert annotation["reasoning"] == "Both were fair."
    believability = {s["dimension"]: s["score"] for s in scores if s["agent"] == 0}
    mean = sum(believability.values()) / 7
    assert annotation["rewards"][0] == [mean, {**believability, "overall_score": mean}]
    nxt = await assignment(gql, pk, 0, token)
    assert nxt is not None and nxt["rated"] == [True, False] and nxt["current"]["position"] == 1
    beyond = await assignment(gql, pk, 0, token, 99)  # no such episode: the next one to rate
    assert beyond is not None and beyond["current"]["position"] == 1
    again = await assignment(gql, pk, 0, token, 0)
    assert again is not None and again["current"]["saved"]["reasoning"] == "Both were fair."
    assert {
        (s["agent"], s["dimension"], s["score"]) for s in again["current"]["saved"]["scores"]
    } == {(s["agent"], s["dimension"], s["score"]) for s in scores}
    stale = await rate(gql, pk, 0, token, position=0, scores=scores, revision=0)
    assert stale["stored"] is False and [e["code"] for e in stale["userErrors"]] == ["CONFLICT"]
    revised = await rate(
        gql, pk, 0, token, position=0, scores=scores, revision=1, reasoning="On reflection."
    )
    assert (revised["revision"], revised["rated"]) == (2, 1)
    await rate(gql, pk, 0, token, position=1, scores=scores)
    done = await assignment(gql, pk, 0, token)
    assert done is not None and done["rated"] == [True, True] and done["current"] is None
    assert (await status(gql, pk))["progress"] == {"assigned": 2, "rated": 2, "finished": True}


async def test_a_rating_with_a_score_missing_or_off_its_range_changes_nothing(
    gql: GraphQLClient, unchanged: Any
) -> None:
    (episode,) = await finished_episodes(unique("bad-rating"), 1)
    study, (token,) = await made(gql, name="Bad ratings", episodes={"ids": [episode]}, raters=1)
    rubric = (await assignment(gql, study["id"], 0, token))["rubric"]  # type: ignore[index]
    complete = full_scores(rubric, 2)
    cases = [
        (complete[:-1], "INVALID", ["input", "scores"]),
        (
            [*complete[:-1], {**complete[-1], "score": 11}],
            "INVALID",
            ["input", "scores", "13", "score"],
        ),
        (
            [*complete, {"agent": 2, "dimension": "goal", "score": 1}],
            "INVALID",
            ["input", "scores", "14", "agent"],
        ),
        (
            [*complete, {"agent": 0, "dimension": "charm", "score": 1}],
            "INVALID",
            ["input", "scores", "14", "dimension"],
        ),
        ([*complete, complete[0]], "INVALID", ["input", "scores", "14"]),
    ]
    async with unchanged():
        for scores, code, field in cases:
            refused = await rate(gql, study["id"], 0, token, position=0, scores=scores)
            assert refused["stored"] is False and refused["revision"] is None
            assert (refused["userErrors"][0]["code"], refused["userErrors"][0]["field"]) == (
                code,
                field,
            ), refused
        wrong = await rate(gql, study["id"], 0, "not-the-token", position=0, scores=complete)
        assert [(e["field"], e["code"]) for e in wrong["userErrors"]] == [
            (["input", "raterToken"], "FORBIDDEN")
        ]
        nowhere = await rate(gql, "no-such-study", 0, token, position=0, scores=complete)
        assert nowhere["userErrors"] == wrong["userErrors"]  # nothing said of the study
        beyond = await rate(gql, study["id"], 0, token, position=1, scores=complete)
        assert [(e["field"], e["code"]) for e in beyond["userErrors"]] == [
            (["input", "position"], "INVALID")
        ]
        long = await rate(
            gql, study["id"], 0, token, position=0, scores=complete, reasoning="x" * 5_001
        )
        assert [e["field"] for e in long["userErrors"]] == [["input", "reasoning"]]


async def test_a_draft_comes_back_after_a_reload_until_the_rating_is_saved(
    gql: GraphQLClient,
) -> None:
    (episode,) = await finished_episodes(unique("draft"), 1)
    study, (token,) = await made(gql, name="Drafts", episodes={"ids": [episode]}, raters=1)
    pk = study["id"]
    draft = {"studyId": pk, "rater": 0, "raterToken": token, "position": 0}
    typed = {
        **draft,
        "scores": [
            {"agent": 1, "dimension": "goal", "score": 6},
            {"agent": 0, "dimension": "goal"},
        ],
        "reasoning": "Half",
    }
    assert (await gql.data(DRAFT, {"input": typed}))["saveRatingDraft"] == {
        "stored": True,
        "userErrors": [],
    }
    view = await assignment(gql, pk, 0, token)  # a reload, or another device
    assert view is not None and view["current"]["saved"] is None
    assert view["current"]["draft"] == {
        "scores": [
            {"agent": 1, "dimension": "goal", "score": 6},
            {"agent": 0, "dimension": "goal", "score": None},
        ],
        "reasoning": "Half",
    }
    off = {**typed, "scores": [{"agent": 0, "dimension": "goal", "score": 99}]}
    refused = (await gql.data(DRAFT, {"input": off}))["saveRatingDraft"]
    assert refused["stored"] is False and refused["userErrors"][0]["field"] == [
        "input",
        "scores",
        "0",
        "score",
    ]
    await rate(gql, pk, 0, token, position=0, scores=full_scores(view["rubric"], 2))
    after = await assignment(gql, pk, 0, token, 0)
    assert (
        after is not None
        and after["current"]["draft"] is None
        and after["current"]["revision"] == 1
    )
    late = (await gql.data(DRAFT, {"input": typed}))["saveRatingDraft"]  # typed before the save
    assert late["stored"] is False and late["userErrors"][0]["code"] == "CONFLICT"
    assert (await assignment(gql, pk, 0, token, 0))["current"]["draft"] is None  # type: ignore[index]


async def test_a_rater_far_off_on_gold_is_flagged_and_kept(gql: GraphQLClient) -> None:
    (episode,) = await finished_episodes(unique("flag"), 1)
    expected = [
        {"agent": 0, "dimension": "goal", "score": 8},
        {"agent": 1, "dimension": "secret", "score": -2},
    ]
    study, tokens = await made(
        gql,
        name="Gold",
        episodes={"ids": [episode]},
        raters=2,
        gold=[{"episodeId": episode, "expected": expected, "tolerance": 1.5}],
    )
    rubric = (await assignment(gql, study["id"], 0, tokens[0]))["rubric"]  # type: ignore[index]
    base = full_scores(rubric, 2, pick=0)

    def with_(goal: int, secret: int) -> list[dict[str, Any]]:
        picked = {(0, "goal"): goal, (1, "secret"): secret}
        return [{**s, "score": picked.get((s["agent"], s["dimension"]), s["score"])} for s in base]

    close = await rate(gql, study["id"], 0, tokens[0], position=0, scores=with_(7, -3))
    far = await rate(gql, study["id"], 1, tokens[1], position=0, scores=with_(2, -3))
    assert close["stored"] and far["stored"]  # a flag never stops a rating
    found = await status(gql, study["id"])
    assert [(r["goldRated"], r["goldFlagged"]) for r in found["raters"]] == [(1, 0), (1, 1)]
    checks = {c["rater"]: c for c in found["goldChecks"]}
    assert checks[0]["flagged"] is False and checks[0]["misses"] == []
    assert checks[1]["misses"] == [{"agent": 0, "dimension": "goal", "expected": 8.0, "given": 2.0}]


async def test_a_renewed_link_replaces_the_old_and_a_closed_study_takes_no_more(
    gql: GraphQLClient,
) -> None:
    (episode,) = await finished_episodes(unique("renew"), 1)
    study, (old,) = await made(
        gql, name="Renew", episodes={"ids": [episode]}, raters=1, raterNames=["Kim"]
    )
    pk = study["id"]
    renewed = (await gql.data(RENEW, {"study": pk, "rater": 0}))["renewRaterLink"]
    new = renewed["raterLink"]["token"]
    assert renewed["raterLink"]["name"] == "Kim" and new != old
    assert await assignment(gql, pk, 0, old) is None
    rubric = (await assignment(gql, pk, 0, new))["rubric"]  # type: ignore[index]
    refused = await rate(gql, pk, 0, old, position=0, scores=full_scores(rubric, 2))
    assert refused["userErrors"][0]["code"] == "FORBIDDEN"
    missing = (await gql.data(RENEW, {"study": pk, "rater": 3}))["renewRaterLink"]
    assert missing["raterLink"] is None and missing["userErrors"][0]["field"] == ["input", "rater"]
    closed = (await gql.data(CLOSE, {"id": pk}))["closeRatingStudy"]
    assert closed["userErrors"] == [] and closed["study"]["closedAt"]
    assert await assignment(gql, pk, 0, new) is None
    late = await rate(gql, pk, 0, new, position=0, scores=full_scores(rubric, 2))
    assert [(e["field"], e["code"]) for e in late["userErrors"]] == [
        (["input", "studyId"], "CONFLICT")
    ]
    again = (await gql.data(RENEW, {"study": pk, "rater": 0}))["renewRaterLink"]
    assert again["raterLink"] is None and again["userErrors"][0]["code"] == "CONFLICT"
    gone = (await gql.data(CLOSE, {"id": "no-such-study"}))["closeRatingStudy"]
    assert gone["userErrors"][0]["code"] == "NOT_FOUND"


# Making a study: every refusal is coded and stores nothing


async def unfinished(status: EpisodeStatus) -> str:
    (pk,) = await finished_episodes(unique(status.value.lower()), 1)
    episode = await EpisodeLog.get(pk)
    episode.status = status
    await episode.save()
    return pk


@pytest.mark.parametrize(
    ("fields", "code", "field"),
    [
        ({"episodes": {}}, "INVALID", ["input", "episodes"]),
        ({"episodes": {"ids": ["a"], "tag": "b"}}, "INVALID", ["input", "episodes"]),
        ({"episodes": {"ids": ["no-such-episode"]}}, "NOT_FOUND", ["input", "episodes"]),
        ({"episodes": {"tag": "no-episode-has-this-tag"}}, "INVALID", ["input", "episodes", "tag"]),
        ({"episodes": {"experimentId": "no-such-experiment"}}, "NOT_FOUND", ["input", "episodes"]),
        ({"raters": 0}, "INVALID", ["input", "raters"]),
        ({"raters": STUDY_RATERS_MAX + 1}, "INVALID", ["input", "raters"]),
        ({"raters": 2, "ratersPerEpisode": 3}, "INVALID", ["input", "ratersPerEpisode"]),
        ({"raterNames": ["a", "b"]}, "INVALID", ["input", "raterNames"]),
        ({"name": " "}, "INVALID", ["input", "name"]),
        (
            {"evaluationDimensionListId": "no-such-list"},
            "NOT_FOUND",
            ["input", "evaluationDimensionListId"],
        ),
        (
            {
                "gold": [
                    {
                        "episodeId": "no-such-episode",
                        "expected": [{"agent": 0, "dimension": "goal", "score": 1}],
                    }
                ]
            },
            "NOT_FOUND",
            ["input", "gold", "0", "episodeId"],
        ),
    ],
)
async def test_a_study_that_cannot_be_made_is_refused_with_a_code(
    gql: GraphQLClient, unchanged: Any, fields: dict[str, Any], code: str, field: list[str]
) -> None:
    (episode,) = await finished_episodes(unique("refused"), 1)
    given = {"name": "Refused", "episodes": {"ids": [episode]}, "raters": 1, **fields}
    async with unchanged():
        payload = await create(gql, **given)
    assert payload["study"] is None and payload["raterLinks"] == []
    assert (payload["userErrors"][0]["code"], payload["userErrors"][0]["field"]) == (code, field), (
        payload
    )


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (EpisodeStatus.RUNNING, "CONFLICT"),
        (EpisodeStatus.FAILED, "INVALID"),
        (EpisodeStatus.CANCELLED, "INVALID"),
    ],
)
async def test_only_completed_episodes_can_be_rated(
    gql: GraphQLClient, unchanged: Any, status: EpisodeStatus, code: str
) -> None:
    pk = await unfinished(status)
    async with unchanged():
        payload = await create(gql, name="Unfinished", episodes={"ids": [pk]}, raters=1)
    (error,) = payload["userErrors"]
    assert error["code"] == code and status.value in error["message"], error
    tagged = (await EpisodeLog.get(pk)).tag
    by_tag = await create(gql, name="Unfinished", episodes={"tag": tagged}, raters=1)
    assert [e["code"] for e in by_tag["userErrors"]] == [code]


@pytest.mark.parametrize(
    "expected",
    [
        {"agent": 2, "dimension": "goal", "score": 1},
        {"agent": 0, "dimension": "charm", "score": 1},
        {"agent": 0, "dimension": "goal", "score": 11},
    ],
)
async def test_a_gold_score_must_name_an_agent_and_a_dimension_within_its_range(
    gql: GraphQLClient, unchanged: Any, expected: dict[str, Any]
) -> None:
    (episode,) = await finished_episodes(unique("gold-bad"), 1)
    async with unchanged():
        payload = await create(
            gql,
            name="Bad gold",
            episodes={"ids": [episode]},
            raters=1,
            gold=[{"episodeId": episode, "expected": [expected]}],
        )
    assert [e["code"] for e in payload["userErrors"]] == ["INVALID"]
    assert payload["userErrors"][0]["field"][:4] == ["input", "gold", "0", "expected"]


async def test_a_study_of_a_tag_rates_its_episodes(gql: GraphQLClient) -> None:
    tag = unique("tagged")
    episodes = await finished_episodes(tag, 3)
    study, _ = await made(gql, name="Tagged", episodes={"tag": tag}, raters=2, ratersPerEpisode=2)
    found = await status(gql, study["id"])
    assert sorted(e["episodeId"] for e in found["episodes"]) == sorted(episodes)
    assert Counter(len(e["raters"]) for e in found["episodes"]) == {2: 3}


async def test_a_study_of_an_experiment_not_started_says_so(
    gql: GraphQLClient, unchanged: Any
) -> None:
    create_experiment = """
    mutation($input: CreateExperimentInput!) {
      createExperiment(input: $input) { experiment { id } userErrors { message } }
    }"""
    (episode,) = await finished_episodes(unique("experiment"), 1)
    scenario = (await EpisodeLog.get(episode)).environment
    agents = (await EpisodeLog.get(episode)).agents
    design = {
        "scenarios": {"ids": [scenario]},
        "agents": {"pairs": [agents]},
        "models": {"seats": [["local/gemma-3-270m", "local/gemma-3-270m"]]},
    }
    made_experiment = await gql.data(
        create_experiment, {"input": {"name": unique("rated"), "design": design}}
    )
    experiment = made_experiment["createExperiment"]["experiment"]["id"]
    async with unchanged():
        payload = await create(
            gql, name="Experiment", episodes={"experimentId": experiment}, raters=1
        )
    assert [(e["code"], e["field"]) for e in payload["userErrors"]] == [
        ("CONFLICT", ["input", "episodes", "experimentId"])
    ]
