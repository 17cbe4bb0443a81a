"""replayEpisode and replayExperiment over HTTP: what they refuse (coded userErrors, nothing
written), and how an episode shows its replay's check."""

import pytest

from parley.engine.ledger import ReplayCode
from parley.storage.models import EpisodeLog, EpisodeStatus, ReplayCheck
from tests.support.server import GraphQLClient

pytestmark = pytest.mark.usefixtures("redis_client")  # binds the records the tests save

REPLAY_EPISODE = """
mutation($id: ID!) {
  replayEpisode(input: {id: $id}) { episode { id } userErrors { field message code } }
}"""
REPLAY_EXPERIMENT = """
mutation($id: ID!) {
  replayExperiment(input: {id: $id}) {
    experiment { id } changed userErrors { field message code }
  }
}"""
SHOWN = """
query($id: ID!) {
  episode(id: $id) {
    replayOf cache replay { matched code turnsMatched divergence }
  }
}"""


async def refused(gql: GraphQLClient, query: str, name: str, pk: str) -> list[dict[str, object]]:
    payload = (await gql.data(query, {"id": pk}))[name]
    assert payload.get("episode") is None and payload.get("experiment") is None
    errors: list[dict[str, object]] = payload["userErrors"]
    return errors


async def test_what_cannot_be_replayed_is_refused_with_a_code(gql: GraphQLClient) -> None:
    missing = "01NOSUCHRECORD00000000000A"
    [unknown] = await refused(gql, REPLAY_EPISODE, "replayEpisode", missing)
    assert unknown["code"] == "NOT_FOUND" and unknown["field"] == ["input", "id"]
    queued = EpisodeLog(environment="s", agents=["a", "b"], status=EpisodeStatus.QUEUED)
    await queued.save()
    [running] = await refused(gql, REPLAY_EPISODE, "replayEpisode", str(queued.pk))
    assert running["code"] == "CONFLICT" and "only a completed or failed" in str(running)
    done = EpisodeLog(environment="s", agents=["a", "b"], status=EpisodeStatus.COMPLETED)
    await done.save()
    [no_ledger] = await refused(gql, REPLAY_EPISODE, "replayEpisode", str(done.pk))
    assert no_ledger["code"] == "NOT_FOUND" and "no ledger" in str(no_ledger["message"])
    fork = EpisodeLog(
        environment="s",
        agents=["a", "b"],
        status=EpisodeStatus.COMPLETED,
        parent_id=str(done.pk),
        forked_at_turn=2,
    )
    await fork.save()
    [of_fork] = await refused(gql, REPLAY_EPISODE, "replayEpisode", str(fork.pk))
    assert of_fork["code"] == "INVALID" and "is a fork of" in str(of_fork["message"])
    [experiment] = await refused(gql, REPLAY_EXPERIMENT, "replayExperiment", missing)
    assert experiment["code"] == "NOT_FOUND"
    for record in (queued, done, fork):
        await EpisodeLog.delete(str(record.pk))


async def test_an_episode_shows_its_replays_check(gql: GraphQLClient) -> None:
    check = ReplayCheck(
        matched=False,
        code=ReplayCode.REPLAY_MISSING_CALL,
        turns_matched=2,
        divergence="REPLAY_MISSING_CALL: the source's ledger holds no call for seat 1's turn 2",
    )
    replay = EpisodeLog(
        environment="s",
        agents=["a", "b"],
        status=EpisodeStatus.FAILED,
        replay_of="01SOURCE000000000000000000",
        replay=check,
    )
    await replay.save()
    shown = (await gql.data(SHOWN, {"id": str(replay.pk)}))["episode"]
    assert shown == {
        "replayOf": "01SOURCE000000000000000000",
        "cache": False,
        "replay": {
            "matched": False,
            "code": "REPLAY_MISSING_CALL",
            "turnsMatched": 2,
            "divergence": check.divergence,
        },
    }
    plain = EpisodeLog(environment="s", agents=["a", "b"])
    await plain.save()
    shown = (await gql.data(SHOWN, {"id": str(plain.pk)}))["episode"]
    assert shown == {"replayOf": None, "cache": False, "replay": None}
    for record in (replay, plain):
        await EpisodeLog.delete(str(record.pk))
