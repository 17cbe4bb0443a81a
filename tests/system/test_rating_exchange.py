"""People's ratings across `parley export` and `parley import` as real processes: a study's
ratings and a rating Sotopia wrote, exported from one Redis and imported into an empty one,
are the same records there, found by Sotopia's own query; the file holds no rater's token; a
second import adds nothing."""

import json
from pathlib import Path

import redis.asyncio as redis

from bench.support.processes import parley_env, run
from parley.engine.types import SOTOPIA_DIMENSIONS
from parley.storage import keys
from parley.storage.models import (
    AnnotationForEpisode,
    Annotator,
    RatingStudy,
    StudyItem,
    StudyRater,
)
from tests.support import sotopia_records as sotopia
from tests.system.test_exchange_cli import (  # noqa: F401 (fixtures)
    empty_redis,
    export_lines,
    parley_world,
    source_redis,
    url_of,
)

TOKEN_HASHES = ("c" * 64, "d" * 64)


def rewards(goal: float) -> list[tuple[float, dict[str, float]] | float]:
    scores = {d.name: float(max(d.range_low, 0)) for d in SOTOPIA_DIMENSIONS} | {"goal": goal}
    overall = sum(scores.values()) / len(scores)
    return [(overall, {**scores, "overall_score": overall})] * 2


async def rated_world(client: redis.Redis) -> tuple[RatingStudy, list[str]]:
    """Parley's world and episodes, a study of two raters who rated its first two episodes,
    and one more rating of the first as Sotopia writes one; the ratings' keys and the
    annotators'."""
    written = await parley_world(client, "rated")
    episodes = [key.rsplit(":", 1)[-1] for key in written[4:6]]
    people = [Annotator(pk=f"rater-{n}", name=f"Rater {n}") for n in range(2)]
    study = RatingStudy(
        pk="study-rated",
        name="Garden study",
        episode_ids=episodes,
        rubric=SOTOPIA_DIMENSIONS,
        raters=[
            StudyRater(
                name=person.name,
                annotator_id=person.pk,
                token_hash=TOKEN_HASHES[n],
                items=[StudyItem(episode=e, annotation=f"rating-{n}-{e}") for e in range(2)],
            )
            for n, person in enumerate(people)
        ],
    )
    await client.json().set(RatingStudy.make_primary_key("study-rated"), "$", study.model_dump())
    made: list[str] = []
    for n, person in enumerate(people):
        await client.json().set(keys.annotator(person.pk), "$", person.model_dump())
        made.append(keys.annotator(person.pk))
        for e, episode in enumerate(episodes):
            annotation = AnnotationForEpisode(
                pk=f"rating-{n}-{e}",
                episode=episode,
                annotator_id=person.pk,
                rewards=rewards(3.0 + n + e),
                reasoning=f"Rater {n} on episode {e}.",
            )
            await client.json().set(
                keys.annotation(annotation.pk), "$", annotation.model_dump(mode="json")
            )
            made.append(keys.annotation(annotation.pk))
    theirs = {**sotopia.ANNOTATOR}
    rating = {**sotopia.ANNOTATION, "episode": episodes[0]}
    await client.json().set(keys.annotator(theirs["pk"]), "$", theirs)
    await client.json().set(keys.annotation(rating["pk"]), "$", rating)
    return study, [*made, keys.annotator(theirs["pk"]), keys.annotation(rating["pk"])]


async def test_ratings_round_trip_into_an_empty_parley(
    source_redis: redis.Redis,  # noqa: F811
    empty_redis: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    study, made = await rated_world(source_redis)
    source = parley_env(url_of(source_redis), tmp_path / "source-data")
    empty = parley_env(empty_redis, tmp_path / "empty-data")
    out = tmp_path / "rated.jsonl"
    lines = await export_lines(out, source)
    text = out.read_text()
    assert all(token not in text for token in TOKEN_HASHES)
    [study_line] = [line for line in lines if "rating_study_id" in line]
    assert set(study_line) == {
        "rating_study_id",
        "name",
        "rubric",
        "evaluation_dimension_list_id",
        "episode_ids",
    }
    ours = {rater.annotator_id for rater in study.raters}  # other tests' ratings may be there
    first_rating = min(n for n, line in enumerate(lines) if line.get("annotator_id") in ours)
    last_episode = max(n for n, line in enumerate(lines) if "episode_id" in line)
    assert last_episode < lines.index(study_line) < first_rating

    done = await run("import", str(out), env=empty)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "5 annotations, 3 annotators" in done.stdout.splitlines()[0], done.stdout

    target = redis.Redis.from_url(empty_redis, decode_responses=True)
    try:
        for key in made:
            assert await target.json().get(key) == await source_redis.json().get(key), key
            # Sotopia's classes (the pydantic shapes Parley keeps for them) read each one
            model = Annotator if ".annotators." in key else AnnotationForEpisode
            model.model_validate(await target.json().get(key))
        for episode in study.episode_ids:
            found = await target.execute_command(*sotopia.annotations_of(episode))  # type: ignore[no-untyped-call]
            count = found["total_results"] if isinstance(found, dict) else found[0]
            assert count == (3 if episode == study.episode_ids[0] else 2)
        assert await target.exists(RatingStudy.make_primary_key(str(study.pk))) == 0
    finally:
        await target.aclose()

    again = await run("import", str(out), env=empty)
    assert again.returncode == 0 and again.stdout.startswith("created: nothing"), again.stdout


async def test_an_export_of_some_episodes_carries_only_their_ratings(
    source_redis: redis.Redis,  # noqa: F811
    tmp_path: Path,
) -> None:
    study, _ = await rated_world(source_redis)
    source = parley_env(url_of(source_redis), tmp_path / "source-data")
    lines = await export_lines(
        tmp_path / "failed.jsonl", source, "--kind", "episodes,annotations", "--status", "failed"
    )
    assert lines and all("episode_id" in line for line in lines)  # no rated episode is FAILED
    ratings = await export_lines(tmp_path / "all.jsonl", source, "--kind", "annotations")
    assert len([line for line in ratings if "annotator_id" in line]) == 5
    [study_line] = [n for n, line in enumerate(ratings) if "rating_study_id" in line]
    named = [n for n, line in enumerate(ratings) if str(study.pk) in json.dumps(line)]
    assert named[0] == study_line and len(named) == 5  # the line, then its four ratings
