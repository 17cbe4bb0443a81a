"""A rating study's writes against a real Redis: a rating saved with its progress in one step
(two tabs of one rater never lose or double one), drafts that a save outdates, a renewed or
closed link, and ratings stored exactly as Sotopia stores its AnnotationForEpisode, found by
Sotopia's own query on Sotopia's own index."""

import asyncio
import json
import uuid
from typing import Any

import redis.asyncio as redis
from ulid import ULID

from parley.engine.types import SOTOPIA_DIMENSIONS
from parley.storage import keys
from parley.storage.models import (
    AnnotationForEpisode,
    Annotator,
    Evaluation,
    EvaluationStatus,
    ExpectedScore,
    GoldEpisode,
    RatingStudy,
    StudyItem,
    StudyRater,
)
from parley.storage.studies import (
    ANNOTATION_SCHEMA,
    DraftScore,
    GoldCheck,
    GoldMiss,
    RatingDraft,
    RatingTarget,
    Saved,
    StudyStore,
    create_annotation_index,
    rater_entry,
    schema_hash,
    slot,
)
from parley.storage.vocabulary import RatingRefusal
from tests.support import sotopia_records as sotopia

TOKENS = ("a" * 64, "b" * 64)
"""The two raters' token hashes."""


async def command(client: redis.Redis, *args: str) -> Any:
    return await client.execute_command(*args)  # type: ignore[no-untyped-call]


async def new_study(client: redis.Redis, episodes: int = 3) -> RatingStudy:
    """A stored study of two raters, each given every one of `episodes` made-up episodes."""
    pk = str(ULID())
    annotators = [Annotator(pk=str(ULID()), name=f"Rater {n}") for n in range(2)]
    study = RatingStudy(
        pk=pk,
        name=f"study {uuid.uuid4().hex[:6]}",
        episode_ids=[str(ULID()) for _ in range(episodes)],
        gold=[
            GoldEpisode(
                episode=0, expected=[ExpectedScore(agent=0, dimension="goal", score=8)], tolerance=1
            )
        ],
        rubric=SOTOPIA_DIMENSIONS,
        raters=[
            StudyRater(
                name=annotators[n].name,
                annotator_id=annotators[n].pk,
                token_hash=TOKENS[n],
                items=[StudyItem(episode=e, annotation=str(ULID())) for e in range(episodes)],
            )
            for n in range(2)
        ],
    )
    assert await StudyStore(client).create(study, annotators)
    return study


def rating(
    study: RatingStudy, rater: int, position: int, goal: float = 5.0
) -> AnnotationForEpisode:
    item = study.raters[rater].items[position]
    scores = {d.name: 1.0 for d in SOTOPIA_DIMENSIONS} | {"goal": goal}
    overall = sum(scores.values()) / len(scores)
    return AnnotationForEpisode(
        pk=item.annotation,
        episode=study.episode_ids[item.episode],
        annotator_id=study.raters[rater].annotator_id,
        rewards=[(overall, {**scores, "overall_score": overall})] * 2,
        reasoning=f"rater {rater}, goal {goal}",
    )


async def save(
    store: StudyStore,
    study: RatingStudy,
    rater: int,
    episode: int,
    revision: int = 0,
    goal: float = 5.0,
    token: str | None = None,
    annotation: AnnotationForEpisode | None = None,
    gold: GoldCheck | None = None,
) -> Saved:
    """Rater `rater`'s rating of `episode` (by default their own, with their token)."""
    return await store.save_rating(
        RatingTarget(
            str(study.pk), rater, episode, TOKENS[rater] if token is None else token, revision
        ),
        annotation or rating(study, min(rater, 1), episode, goal),
        gold,
    )


async def test_a_study_its_raters_and_their_keys_are_stored_at_once(
    redis_client: redis.Redis,
) -> None:
    study = await new_study(redis_client)
    store = StudyStore(redis_client)
    assert await store.get(str(study.pk)) == study
    for number, rater in enumerate(study.raters):
        assert await store.rater_of(rater.token_hash) == (str(study.pk), number)
        annotator = await redis_client.json().get(keys.annotator(rater.annotator_id))
        assert annotator == {"pk": rater.annotator_id, "name": rater.name, "email": ""}
    assert not await store.create(study, [])  # its id is taken: nothing written again


async def test_a_save_counts_once_and_a_stale_one_changes_nothing(
    redis_client: redis.Redis,
) -> None:
    study = await new_study(redis_client)
    store, pk = StudyStore(redis_client), str(study.pk)
    first = await save(store, study, 0, 1)
    assert first.refusal is None and (first.revision, first.rated) == (1, 1)
    stale = await save(store, study, 0, 1, revision=0, goal=9.0)
    assert (stale.refusal, stale.revision) == (RatingRefusal.STALE, 1)
    stored: Any = await redis_client.json().get(
        keys.annotation(study.raters[0].items[1].annotation)
    )
    assert stored["rewards"][0][1]["goal"] == 5.0  # the stale save changed nothing
    again = await save(store, study, 0, 1, revision=1, goal=9.0)
    assert again.refusal is None and (again.revision, again.rated) == (2, 1)  # revised, not doubled
    other = await save(store, study, 0, 2)
    assert (other.revision, other.rated) == (1, 2)
    state = await store.state(pk)
    assert state.rated == {0: 2}
    assert state.revisions == {slot(0, 1): 2, slot(0, 2): 1}


async def test_two_tabs_saving_one_episode_at_once_store_one_rating(
    redis_client: redis.Redis,
) -> None:
    study = await new_study(redis_client)
    store = StudyStore(redis_client)
    results = await asyncio.gather(*(save(store, study, 1, 2, goal=g) for g in (2.0, 8.0)))
    assert sorted(r.refusal is None for r in results) == [False, True]
    kept = next(r for r in results if r.refusal is None)
    refused = next(r for r in results if r.refusal is not None)
    assert (kept.revision, kept.rated) == (1, 1)
    assert (refused.refusal, refused.revision) == (RatingRefusal.STALE, 1)
    state = await store.state(str(study.pk))
    assert state.rated == {1: 1} and state.revisions == {slot(1, 2): 1}


async def test_two_tabs_saving_different_episodes_at_once_count_both(
    redis_client: redis.Redis,
) -> None:
    study = await new_study(redis_client, episodes=6)
    store = StudyStore(redis_client)
    results = await asyncio.gather(*(save(store, study, 0, e) for e in range(6)))
    assert all(r.refusal is None for r in results)
    assert sorted(r.rated for r in results) == [1, 2, 3, 4, 5, 6]
    assert (await store.state(str(study.pk))).rated == {0: 6}


async def test_a_wrong_token_a_closed_study_and_a_missing_one_are_refused(
    redis_client: redis.Redis,
) -> None:
    study = await new_study(redis_client)
    store, pk = StudyStore(redis_client), str(study.pk)
    assert (await save(store, study, 0, 0, token=TOKENS[1])).refusal == RatingRefusal.TOKEN
    assert (await save(store, study, 5, 0, token=TOKENS[0])).refusal == RatingRefusal.TOKEN
    assert (await save(store, study, 0, 0, token="")).refusal == RatingRefusal.TOKEN
    gone = study.model_copy(update={"pk": str(ULID())})
    assert (await save(store, gone, 0, 0)).refusal == RatingRefusal.GONE
    assert await store.close(pk, 1000.0) == 1
    assert await store.close(pk, 2000.0) == 0  # closed once: its time kept
    assert (await store.get(pk)).closed_at == 1000.0  # type: ignore[union-attr]
    assert (await save(store, study, 0, 0)).refusal == RatingRefusal.CLOSED
    assert (await save(store, study, 0, 0, token=TOKENS[1])).refusal == RatingRefusal.TOKEN
    assert await store.close(str(ULID()), 1.0) == -1
    assert await store.state(pk) == type(await store.state(pk))()  # nothing was ever stored
    assert not await redis_client.exists(keys.annotation(study.raters[0].items[0].annotation))


async def test_a_draft_is_kept_until_a_save_and_one_sent_before_it_is_dropped(
    redis_client: redis.Redis,
) -> None:
    study = await new_study(redis_client)
    store, pk = StudyStore(redis_client), str(study.pk)
    typed = RatingDraft(scores=[DraftScore(agent=0, dimension="goal", score=3)], reasoning="so far")
    assert (await store.save_draft(RatingTarget(pk, 0, 1, TOKENS[0], 0), typed)).refusal is None
    assert await store.rater_state(pk, 0, 1) == (0, typed)
    assert (
        await store.save_draft(RatingTarget(pk, 0, 1, TOKENS[1], 0), typed)
    ).refusal == RatingRefusal.TOKEN
    await save(store, study, 0, 1)
    assert await store.rater_state(pk, 0, 1) == (1, None)  # the save took the draft away
    late = await store.save_draft(
        RatingTarget(pk, 0, 1, TOKENS[0], 0), typed
    )  # sent before the save
    assert (late.refusal, late.revision) == (RatingRefusal.STALE, 1)
    assert await store.rater_state(pk, 0, 1) == (1, None)
    assert (await store.save_draft(RatingTarget(pk, 0, 1, TOKENS[0], 1), typed)).refusal is None


async def test_a_gold_check_is_kept_with_its_rating(redis_client: redis.Redis) -> None:
    study = await new_study(redis_client)
    store = StudyStore(redis_client)
    check = GoldCheck(misses=[GoldMiss(agent=0, dimension="goal", expected=8, given=2)])
    await save(store, study, 1, 0, goal=2.0, gold=check)
    state = await store.state(str(study.pk))
    assert state.gold == {slot(1, 0): check} and state.gold[slot(1, 0)].flagged


async def test_a_renewed_token_replaces_the_old_key(redis_client: redis.Redis) -> None:
    study = await new_study(redis_client)
    store, pk = StudyStore(redis_client), str(study.pk)
    new = "c" * 64
    assert await store.renew(pk, 0, TOKENS[1], new) == 0  # not the rater's token now
    assert await store.renew(pk, 0, TOKENS[0], new) == 1
    assert await store.rater_of(TOKENS[0]) is None
    assert await redis_client.get(keys.rater_token(new)) == rater_entry(pk, 0)
    assert (await save(store, study, 0, 0)).refusal == RatingRefusal.TOKEN
    assert (await save(store, study, 0, 0, token=new)).refusal is None
    assert await store.renew(pk, 7, new, "d" * 64) == -2
    assert await store.renew(str(ULID()), 0, new, "d" * 64) == -1


# Sotopia's records and index


async def test_a_rating_is_stored_as_sotopia_stores_an_annotation(
    redis_client: redis.Redis,
) -> None:
    study = await new_study(redis_client)
    annotation = rating(study, 0, 2)
    await save(StudyStore(redis_client), study, 0, 2, annotation=annotation)
    key = keys.annotation(annotation.pk)
    assert key.removesuffix(annotation.pk) == sotopia.ANNOTATION_KEY.removesuffix(
        sotopia.ANNOTATION["pk"]
    )
    assert await redis_client.type(key) == "ReJSON-RL"
    stored: Any = await redis_client.json().get(key)  # decoded in the stored order
    assert list(stored) == list(sotopia.ANNOTATION)  # the same fields, in Sotopia's order
    for name, value in sotopia.ANNOTATION.items():
        assert type(stored[name]) is type(value), name
    rewards = stored["rewards"]
    assert [len(r) for r in rewards] == [2, 2] and set(rewards[0][1]) == set(
        sotopia.ANNOTATION["rewards"][0][1]
    )
    annotator: Any = await redis_client.json().get(keys.annotator(annotation.annotator_id))
    assert list(annotator) == list(sotopia.ANNOTATOR)
    assert keys.annotator("x").removesuffix("x") == sotopia.ANNOTATOR_KEY.removesuffix(
        sotopia.ANNOTATOR["pk"]
    )


async def test_sotopias_own_query_finds_ours_and_reads_its_own(redis_client: redis.Redis) -> None:
    study = await new_study(redis_client)
    ours = rating(study, 1, 1)
    await save(StudyStore(redis_client), study, 1, 1, annotation=ours)
    await command(
        redis_client, "JSON.SET", sotopia.ANNOTATION_KEY, "$", json.dumps(sotopia.ANNOTATION)
    )
    for annotation, key in (
        (ours.model_dump(mode="json"), keys.annotation(ours.pk)),
        (sotopia.ANNOTATION, sotopia.ANNOTATION_KEY),
    ):
        async with asyncio.timeout(10):
            while True:
                found = await command(redis_client, *sotopia.annotations_of(annotation["episode"]))
                if found["total_results"] >= 1:  # the index is filled in the background
                    break
                await asyncio.sleep(0.05)
        assert found["total_results"] == 1, found
        (hit,) = found["results"]
        assert hit["id"] == key and json.loads(hit["extra_attributes"]["$"]) == annotation
    await redis_client.delete(sotopia.ANNOTATION_KEY)


async def test_sotopias_index_has_sotopias_schema_and_hash(redis_client: redis.Redis) -> None:
    assert schema_hash(ANNOTATION_SCHEMA) == sotopia.ANNOTATION_INDEX_HASH
    assert await redis_client.get(keys.ANNOTATION_INDEX_HASH) == sotopia.ANNOTATION_INDEX_HASH
    info = await command(redis_client, "FT.INFO", keys.ANNOTATION_INDEX)
    assert info["index_definition"]["prefixes"] == [keys.annotation("")]
    fields = info["attributes"]
    assert [(f["identifier"], f["attribute"], f["type"]) for f in fields] == [
        ("$.pk", "pk", "TAG"),
        ("$.episode", "episode", "TAG"),
        ("$.annotator_id", "annotator_id", "TAG"),
        ("$.annotator_id", "annotator_id_fts", "TEXT"),
    ]
    assert not await create_annotation_index(redis_client)  # made once; left as it is after


async def test_an_index_of_that_name_made_otherwise_is_left_alone(
    redis_client: redis.Redis,
) -> None:
    """An older Sotopia's migrator may have made it with another schema: Parley neither fails
    nor rewrites it (Sotopia's migrator owns it)."""
    older = ANNOTATION_SCHEMA.replace(" $.annotator_id AS annotator_id_fts TEXT", "")
    await command(redis_client, "FT.DROPINDEX", keys.ANNOTATION_INDEX)
    try:
        await command(redis_client, "FT.CREATE", keys.ANNOTATION_INDEX, *older.split())
        assert not await create_annotation_index(redis_client)
        info = await command(redis_client, "FT.INFO", keys.ANNOTATION_INDEX)
        assert len(info["attributes"]) == 3
    finally:
        await command(redis_client, "FT.DROPINDEX", keys.ANNOTATION_INDEX)
        assert await create_annotation_index(redis_client)


async def test_scored_episodes_read_the_scores_of_stored_episodes_only(
    redis_client: redis.Redis,
) -> None:
    """A Parley episode gives its panel's runs; Sotopia's own record (no `judge_runs`) reads
    with none; an id not stored is left out; the conversation is not read."""
    parley_pk, sotopia_pk = str(ULID()), str(ULID())
    run = {"model": "j", "repeat": 1, "rewards": [[4.0, {"goal": 4.0}], [2.0, {"goal": 2.0}]]}
    parley = {
        **sotopia.EPISODE,
        "pk": parley_pk,
        "rewards": [[5.0, {"goal": 5.0}], [6.0, {"goal": 6.0}]],
        "judge_runs": [run],
    }
    own = {**sotopia.EPISODE, "pk": sotopia_pk}
    for record in (parley, own):
        await redis_client.json().set(f"{sotopia.LOGS}.EpisodeLog:{record['pk']}", "$", record)

    found = await StudyStore(redis_client).scored_episodes([parley_pk, "missing", sotopia_pk])

    assert list(found) == [parley_pk, sotopia_pk]
    assert found[parley_pk].agents == sotopia.EPISODE["agents"]
    assert found[parley_pk].models == sotopia.EPISODE["models"]
    assert found[parley_pk].rewards == [(5.0, {"goal": 5.0}), (6.0, {"goal": 6.0})]
    assert [(r.model, r.repeat, r.rewards) for r in found[parley_pk].judge_runs] == [
        ("j", 1, [(4.0, {"goal": 4.0}), (2.0, {"goal": 2.0})])
    ]
    assert found[sotopia_pk].judge_runs == []
    assert found[sotopia_pk].rewards == [tuple(r) for r in sotopia.EPISODE["rewards"]]
    assert not hasattr(found[sotopia_pk], "messages")


async def test_human_results_of_older_ratings_never_overwrite_newer_ones(
    redis_client: redis.Redis,
) -> None:
    """Records written from ratings at version 5 stand against a late writer of version 4; the
    same version or a later one writes them again. An episode no longer stored loses its
    record."""
    pk = str(ULID())
    await redis_client.json().set(
        f"{sotopia.LOGS}.EpisodeLog:{pk}", "$", {**sotopia.EPISODE, "pk": pk}
    )
    store, study = StudyStore(redis_client), str(ULID())

    def entry(goal: float) -> Evaluation:
        return Evaluation(
            id=study,
            judge_model="humans",
            status=EvaluationStatus.COMPLETED,
            rewards=[(goal, {"goal": goal}), (goal, {"goal": goal})],
        )

    async def stored_goal() -> Any:
        return await redis_client.json().get(keys.evaluation_record(study, pk), "$.rewards[0][0]")

    assert await store.write_human_results(study, 5, {pk: entry(5), "missing": entry(1)}, "[5]")
    assert not await redis_client.exists(keys.evaluation_record(study, "missing"))
    record: Any = await redis_client.json().get(keys.evaluation_record(study, pk))
    assert record["evaluation"] == study and record["models"][0] == "humans"
    assert record["environment"] == sotopia.EPISODE["environment"]
    assert (await store.results_inputs(study))[0] == "[5]"
    assert not await store.write_human_results(study, 4, {pk: entry(4)}, "[4]")
    assert await stored_goal() == [5] and (await store.results_inputs(study))[0] == "[5]"
    assert await store.write_human_results(study, 5, {pk: entry(3)}, "[5]")
    assert await stored_goal() == [3]
    assert await store.write_human_results(study, 6, {pk: entry(6)}, "[6]")
    assert await stored_goal() == [6]
    await redis_client.delete(f"{sotopia.LOGS}.EpisodeLog:{pk}")
    assert await store.write_human_results(study, 6, {pk: entry(6)}, "[6]")
    assert not await redis_client.exists(keys.evaluation_record(study, pk))
