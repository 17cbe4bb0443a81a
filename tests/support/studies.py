"""Completed episodes to rate, written as a worker leaves them (a model and judge named, scores
and the judge's reasoning stored), so that a test can check a rater sees none of that."""

import time
import uuid
from typing import Any

from bench.support import people
from bench.support.simulation import make_world
from parley.engine.types import ActionType
from parley.storage.models import AgentProfile, EpisodeLog, EpisodeStatus, StoredTurn
from tests.support.server import GraphQLClient

MODEL = "custom/rated-model@http://127.0.0.1:9"
JUDGE_REASONING = "The judge thought the first agent was evasive."
SECRET = "hides a second passport"
JUDGE_SCORE = 7.25


async def finished_episodes(tag: str, count: int, agents: int = 2) -> list[str]:
    """`count` COMPLETED episodes of one new world with `agents` agents (each with a secret);
    their ids, in order."""
    scenario, people = await make_world(tag, agents)
    for pk in people:
        agent = await AgentProfile.get(pk)
        agent.secret = SECRET
        agent.public_info = f"{agent.first_name} works on the third floor."
        await agent.save()
    names = [f"Ava{i} {tag}" for i in range(agents)]
    made = []
    for n in range(count):
        turns = [
            StoredTurn(
                turn=t,
                agent_index=t % agents,
                agent_name=names[t % agents],
                action_type=ActionType.SPEAK,
                argument=f"Line {t} of episode {n}.",
                sequence=t + 2,
            )
            for t in range(3)
        ]
        scores = {"believability": JUDGE_SCORE, "overall_score": JUDGE_SCORE}
        episode = EpisodeLog(
            environment=scenario,
            agents=people,
            tag=tag,
            models=[MODEL] * (agents + 1),
            status=EpisodeStatus.COMPLETED,
            turns=turns,
            rewards=[(JUDGE_SCORE, scores)] * agents,
            reasoning=JUDGE_REASONING,
            created_at=time.time(),
        )
        await episode.save()
        made.append(str(episode.pk))
    return made


CREATE_STUDY = """
mutation($input: CreateRatingStudyInput!) {
  createRatingStudy(input: $input) {
    study { id name ratersPerEpisode showsSecrets rubric { name rangeLow rangeHigh }
            raters { rater name annotatorId assigned rated } }
    raterLinks { rater name token }
    userErrors { field message code }
  }
}"""
ASSIGNMENT = """
query($study: ID!, $rater: Int!, $token: String!, $position: Int) {
  raterAssignment(studyId: $study, rater: $rater, raterToken: $token, position: $position) {
    studyName rater raterName rated rubric { name rangeLow rangeHigh }
    current {
      position revision scenario
      agents { name age occupation genderPronoun publicInfo personality goal secret }
      turns { turn speaker actionType text to }
      saved { scores { agent dimension score } reasoning }
      draft { scores { agent dimension score } reasoning }
    }
  }
}"""
SAVE = """
mutation($input: SaveRatingInput!) {
  saveRating(input: $input) { stored revision rated total userErrors { field message code } }
}"""
DRAFT = """
mutation($input: SaveRatingDraftInput!) {
  saveRatingDraft(input: $input) { stored userErrors { field message code } }
}"""
STUDY = """
query($id: ID!) {
  ratingStudy(id: $id) {
    id name closedAt progress { assigned rated finished }
    raters { rater name annotatorId assigned rated goldRated goldFlagged }
    episodes { episodeId gold raters ratedBy }
    goldChecks { rater episodeId flagged misses { agent dimension expected given } }
    ratings { rater episodeId annotationId reasoning scores { agent dimension score } }
  }
}"""
RENEW = """
mutation($study: ID!, $rater: Int!) {
  renewRaterLink(input: {studyId: $study, rater: $rater}) {
    raterLink { rater name token } userErrors { field message code }
  }
}"""
CLOSE = """
mutation($id: ID!) {
  closeRatingStudy(input: {id: $id}) { study { id closedAt } userErrors { field message code } }
}"""


def full_scores(rubric: list[dict[str, Any]], agents: int, pick: int = 0) -> list[dict[str, Any]]:
    """Every agent on every dimension: `pick` steps above each range's low end (capped)."""
    return [
        {"agent": a, "dimension": d["name"], "score": min(d["rangeLow"] + pick, d["rangeHigh"])}
        for a in range(agents)
        for d in rubric
    ]


async def rated_study(
    gql: GraphQLClient, count: int, raters: int = 2
) -> tuple[str, list[str], list[str], list[dict[str, Any]]]:
    """A study of `count` new episodes that every rater rates whole (rater r, position p: goal
    r + p, every other dimension its range's low end + r); its id, episodes, tokens and
    rubric."""
    episodes = await finished_episodes(f"hum-{uuid.uuid4().hex[:8]}", count)
    fields = {
        "name": "Humans",
        "episodes": {"ids": episodes},
        "raters": raters,
        "ratersPerEpisode": raters,
    }
    made = (await gql.data(CREATE_STUDY, {"input": fields}))["createRatingStudy"]
    assert made["userErrors"] == [], made
    study, rubric = made["study"]["id"], made["study"]["rubric"]
    tokens = [link["token"] for link in made["raterLinks"]]
    for rater, token in enumerate(tokens):
        for position in range(count):
            await save_rating(gql, study, rater, token, position, rubric, goal=rater + position)
    return study, episodes, tokens, rubric


async def save_rating(
    gql: GraphQLClient,
    study: str,
    rater: int,
    token: str,
    position: int,
    rubric: list[dict[str, Any]],
    goal: int,
    revision: int = 0,
) -> None:
    scores = [
        (a, d["name"], goal if d["name"] == "goal" else d["rangeLow"] + rater)
        for a in range(2)
        for d in rubric
    ]
    fields = people.rating(study, rater, token, position, scores, revision)
    saved = (await gql.data(SAVE, {"input": fields}))["saveRating"]
    assert saved["userErrors"] == [], saved
