"""People's ratings in an import, against a real Redis: Sotopia's own AnnotationForEpisode and
Annotator lines import once; a rating of a study is checked against the study's line; each
hostile line is refused with its code and writes nothing; a file of 10,000 ratings imports in
batches."""

import io
import json
import math
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as redis

from parley.client.exchange import remote_import
from parley.core.import_report import Problem
from parley.core.limits import REASONING_MAX
from parley.engine.types import SOTOPIA_DIMENSIONS
from parley.resolvers import annotation_exchange as ratings
from parley.resolvers.exporter import EpisodeFilter, export_text
from parley.resolvers.importer import import_lines
from parley.resolvers.sotopia_format import Kind
from parley.storage import keys
from parley.storage.models import AnnotationForEpisode, Annotator, RatingStudy
from parley.storage.studies import RatingTarget, StudyStore
from tests.storage.test_studies import new_study
from tests.support import sotopia_records as sotopia
from tests.support.server import serve

PART_LIMIT = 6000
"""A server's body limit that splits a file of a study's ratings into several parts."""
SUFFIXES = iter(string.ascii_uppercase)
"""Second letters of the ids of each study's episode (the first is Q)."""


def renamed(doc: dict[str, Any], suffix: str) -> dict[str, Any]:
    """A Sotopia record of the fixtures with its ids given `suffix` (as `sotopia.with_ids`)."""
    text = json.dumps(doc)
    for pk in (sotopia.EPISODE["pk"], sotopia.ANNOTATOR["pk"], sotopia.ANNOTATION["pk"]):
        text = text.replace(pk, pk[:-2] + suffix)
    loaded: dict[str, Any] = json.loads(text)
    return loaded


def sotopia_file(suffix: str) -> tuple[list[str], dict[str, Any], dict[str, Any]]:
    """A file as Sotopia's records make one: its world and episode, then a person and their
    rating of the episode (their `model_dump`, no Parley data); and those two."""
    person = renamed(sotopia.ANNOTATOR, suffix)
    rating = renamed(sotopia.ANNOTATION, suffix)
    return [*sotopia.with_ids(suffix), json.dumps(person), json.dumps(rating)], person, rating


async def stored(client: redis.Redis, key: str) -> Any:
    return await client.json().get(key)


async def test_a_sotopia_written_rating_imports_once_with_its_annotator(
    redis_client: redis.Redis,
) -> None:
    lines, person, rating = sotopia_file("R1")
    report = await import_lines(redis_client, lines)
    assert report.invalid == 0, report.problems
    assert report.created["annotations"] == 1 and report.created["annotators"] == 1
    assert await stored(redis_client, keys.annotation(rating["pk"])) == rating
    assert await stored(redis_client, keys.annotator(person["pk"])) == person
    # Sotopia's own classes read what was stored (the pydantic shapes Parley keeps for them)
    AnnotationForEpisode.model_validate(await stored(redis_client, keys.annotation(rating["pk"])))
    again = await import_lines(redis_client, lines)
    assert again.created == {} and again.invalid == 0
    assert again.skipped["annotations"] == 1 and again.skipped["annotators"] == 1


async def test_a_stored_rating_is_never_overwritten_by_an_import(
    redis_client: redis.Redis,
) -> None:
    """Identity is the record's id: a line of a stored id is skipped, whatever it holds."""
    lines, _, rating = sotopia_file("R2")
    await import_lines(redis_client, lines)
    changed = {**rating, "reasoning": "someone else's words"}
    report = await import_lines(redis_client, [json.dumps(changed)])
    assert report.skipped["annotations"] == 1 and report.invalid == 0
    assert (await stored(redis_client, keys.annotation(rating["pk"])))["reasoning"] == rating[
        "reasoning"
    ]


def hostile(rating: dict[str, Any]) -> dict[str, tuple[dict[str, Any], str, str]]:
    """Bad ratings of the (stored) fixture episode: the line, its code, words of its reason."""
    scores = rating["rewards"][0][1]
    return {
        "wrong type": ({**rating, "rewards": "high"}, "INVALID", "rewards"),
        "bool score": (
            {**rating, "rewards": [[True, scores], rating["rewards"][1]]},
            "INVALID",
            "rewards",
        ),
        "out of range": (
            {**rating, "rewards": [[3.0, {**scores, "goal": 11.0}], rating["rewards"][1]]},
            "INVALID",
            "goal 11 is out of its range 0..10",
        ),
        "secret above zero": (
            {**rating, "rewards": [[3.0, {**scores, "secret": 2.0}], rating["rewards"][1]]},
            "INVALID",
            "secret 2 is out of its range -10..0",
        ),
        "overall off its scores": (
            {**rating, "rewards": [[99.0, scores], rating["rewards"][1]]},
            "INVALID",
            "overall score 99",
        ),
        "no such episode": (
            {**rating, "episode": "never-stored-episode"},
            "NOT_FOUND",
            "'never-stored-episode', which is neither stored nor in the lines before it",
        ),
        "no such annotator": (
            {**rating, "annotator_id": "nobody-at-all"},
            "NOT_FOUND",
            "annotator 'nobody-at-all', who is neither stored nor in the lines before it",
        ),
        "reasoning too long": (
            {**rating, "reasoning": "x" * (REASONING_MAX + 1)},
            "INVALID",
            "reasoning",
        ),
        "four rewards for two agents": (
            {**rating, "rewards": rating["rewards"] * 2},
            "INVALID",
            "4 rewards for the 2 agents",
        ),
        "bad id": ({**rating, "pk": "a b"}, "INVALID", "an id is 1 to 100"),
        "NaN score": (
            {**rating, "rewards": [[3.0, {**scores, "goal": math.nan}], rating["rewards"][1]]},
            "INVALID",
            "rewards",
        ),
        "10,000 rewards": ({**rating, "rewards": [0.0] * 10_000}, "INVALID", "rewards"),
        "10,000 dimensions": (
            {**rating, "rewards": [[0.0, {f"d{n}": 0.0 for n in range(10_000)}], 0.0]},
            "INVALID",
            "rewards",
        ),
        "lone surrogate": ({**rating, "reasoning": "split \ud800"}, "INVALID", "surrogate"),
        "unknown field": ({**rating, "token_hash": "ab"}, "INVALID", "token_hash"),
        "not a study of this file": (
            {**rating, "parley": {"rating_study_id": "no-such-study"}},
            "NOT_FOUND",
            "rating study 'no-such-study', whose line is not before it",
        ),
    }


async def test_each_hostile_rating_is_refused_with_its_code_and_writes_nothing(
    redis_client: redis.Redis, unchanged: Any
) -> None:
    lines, _, rating = sotopia_file("R3")
    await import_lines(redis_client, lines)
    cases = hostile({**rating, "pk": "hostile-rating-r3"})
    async with unchanged():
        for name, (line, code, words) in cases.items():
            report = await import_lines(redis_client, [json.dumps(line)])
            assert report.invalid == 1 and not report.created, (name, report)
            [problem] = report.problems
            assert problem.code == code and words in problem.reason, (name, problem)


async def test_a_bad_annotator_line_is_refused_and_the_good_rating_after_it_is_not(
    redis_client: redis.Redis,
) -> None:
    lines, person, rating = sotopia_file("R4")
    lines[-2] = json.dumps({**person, "name": ""})  # the person: no name
    report = await import_lines(redis_client, lines)
    reasons = {p.line: (p.code, p.reason) for p in report.problems}
    assert reasons[len(lines) - 1][0] == "INVALID" and "annotator" in reasons[len(lines) - 1][1]
    assert reasons[len(lines)][0] == "NOT_FOUND"  # its annotator was never written
    assert await stored(redis_client, keys.annotation(rating["pk"])) is None


async def study_with_ratings(client: redis.Redis) -> tuple[RatingStudy, list[str]]:
    """A stored study of two raters over the fixture episode and a made-up one, the fixture
    episode rated by both; the ratings' ids."""
    lines, _, _ = sotopia_file("Q" + next(SUFFIXES))
    await import_lines(client, lines)
    episode = json.loads(lines[-3])["episode_id"]
    study = await new_study(client, episodes=2)
    study.episode_ids[0] = episode
    store = StudyStore(client)
    await client.json().set(RatingStudy.make_primary_key(str(study.pk)), "$", study.model_dump())
    made = []
    for rater in (0, 1):
        item = study.raters[rater].items[0]
        scores = {d.name: float(d.range_low) for d in SOTOPIA_DIMENSIONS} | {"goal": 6.0 + rater}
        overall = sum(scores.values()) / len(scores)
        annotation = AnnotationForEpisode(
            pk=item.annotation,
            episode=episode,
            annotator_id=study.raters[rater].annotator_id,
            rewards=[(overall, {**scores, "overall_score": overall})] * 2,
            reasoning=f"rater {rater} read it",
        )
        token = ("a" * 64, "b" * 64)[rater]
        saved = await store.save_rating(
            RatingTarget(str(study.pk), rater, 0, token, 0), annotation, None
        )
        assert saved.refusal is None
        made.append(item.annotation)
    return study, made


async def exported(client: redis.Redis, episode: str) -> list[dict[str, Any]]:
    """The annotation-kind lines an export of every finished episode holds for `episode`."""
    out = []
    async for text in export_text(client, [Kind.ANNOTATIONS], EpisodeFilter()):
        out += [json.loads(line) for line in text.splitlines()]
    wanted = {a["pk"] for a in out if a.get("episode") == episode}
    people = {a["annotator_id"] for a in out if a.get("pk") in wanted}
    return [
        line
        for line in out
        if line.get("pk") in wanted | people or episode in line.get("episode_ids", [])
    ]


@dataclass(frozen=True)
class ExportedStudy:
    """A study with ratings, as an export writes it: the study, its line and its first rating's
    line."""

    study: RatingStudy
    line: dict[str, Any]
    rating: dict[str, Any]


@pytest.fixture
async def exported_study(redis_client: redis.Redis) -> ExportedStudy:
    study, made = await study_with_ratings(redis_client)
    lines = await exported(redis_client, study.episode_ids[0])
    [line] = [x for x in lines if "rating_study_id" in x]
    rating = next(x for x in lines if x.get("pk") == made[0])
    return ExportedStudy(study, line, rating)


def rating_line(pk: str, episode: str, annotator: str, **more: Any) -> dict[str, Any]:
    """A rating line of no scores and no reasoning (`more` adds to it)."""
    return {
        "pk": pk,
        "episode": episode,
        "annotator_id": annotator,
        "rewards": [0.0, 0.0],
        "reasoning": "",
        **more,
    }


async def test_an_export_carries_a_studys_ratings_in_sotopias_shapes_and_no_tokens(
    redis_client: redis.Redis,
) -> None:
    study, made = await study_with_ratings(redis_client)
    lines = await exported(redis_client, study.episode_ids[0])
    [study_line] = [line for line in lines if "rating_study_id" in line]
    assert study_line == {
        "rating_study_id": str(study.pk),
        "name": study.name,
        "rubric": [d.model_dump() for d in study.rubric],
        "evaluation_dimension_list_id": None,
        "episode_ids": study.episode_ids,
    }
    text = json.dumps(lines)
    assert all(rater.token_hash not in text for rater in study.raters)
    annotations = [line for line in lines if "parley" in line]
    assert sorted(a["pk"] for a in annotations) == sorted(made)
    assert lines.index(study_line) < min(lines.index(a) for a in annotations)
    [free] = [line for line in lines if "annotator_id" in line and "parley" not in line]
    assert free == await stored(redis_client, keys.annotation(free["pk"]))  # as Sotopia wrote it
    for line in annotations:
        assert line.pop("parley") == {"rating_study_id": str(study.pk)}
        assert line == await stored(redis_client, keys.annotation(line["pk"]))
        AnnotationForEpisode.model_validate(line)
    people = [line for line in lines if set(line) == {"pk", "name", "email"}]
    expected = [r.annotator_id for r in study.raters] + [free["annotator_id"]]
    assert sorted(p["pk"] for p in people) == sorted(expected)
    for person in people:
        assert Annotator.model_validate(person).model_dump() == person


async def test_a_rating_of_an_episode_outside_its_study_is_refused(
    redis_client: redis.Redis,
) -> None:
    """A stored episode of another study (or of none) is no episode of the study the line
    names: refused, CONFLICT, nothing written."""
    study, _ = await study_with_ratings(redis_client)
    other, _ = await study_with_ratings(redis_client)
    [line] = [
        x for x in await exported(redis_client, study.episode_ids[0]) if "rating_study_id" in x
    ]
    rating = rating_line(
        "outside-its-study",
        other.episode_ids[0],
        study.raters[0].annotator_id,
        parley={"rating_study_id": str(study.pk)},
    )
    report = await import_lines(redis_client, [json.dumps(line), json.dumps(rating)])
    [problem] = report.problems
    assert problem.code == "CONFLICT" and "not one of rating study" in problem.reason
    assert await stored(redis_client, keys.annotation("outside-its-study")) is None


async def test_a_rating_beyond_its_studys_rubric_is_refused(
    redis_client: redis.Redis, exported_study: ExportedStudy
) -> None:
    line = exported_study.line
    narrow = {**line, "rubric": [d for d in line["rubric"] if d["name"] != "goal"]}
    fresh = {**exported_study.rating, "pk": "beyond-its-rubric"}
    report = await import_lines(redis_client, [json.dumps(narrow), json.dumps(fresh)])
    [problem] = report.problems
    assert problem.code == "INVALID" and "'goal' is not a dimension of its study" in problem.reason


async def test_a_rating_of_a_study_without_a_score_on_its_rubric_is_refused(
    redis_client: redis.Redis, unchanged: Any
) -> None:
    """A rating of a study scores every dimension of its rubric, as a rater's save must: a
    bare number, an empty table or a lone overall score (none of them in any range) is
    refused, INVALID, and nothing is written."""
    study, made = await study_with_ratings(redis_client)
    lines = await exported(redis_client, study.episode_ids[0])
    [line] = [x for x in lines if "rating_study_id" in x]
    rating = next(x for x in lines if x.get("pk") == made[0])
    partial = {k: v for k, v in rating["rewards"][0][1].items() if k != "goal"}
    cases = {
        "bare numbers": [1e300, -1e300],
        "no scores": [[999.0, {}], [-999.0, {}]],
        "a lone overall score": [[5.0, {"overall_score": 77.0}], rating["rewards"][1]],
        "a dimension missing": [[partial["overall_score"], partial], rating["rewards"][1]],
    }
    await import_lines(redis_client, [json.dumps(line)])
    async with unchanged():
        for name, rewards in cases.items():
            fresh = {**rating, "pk": "off-its-rubric", "rewards": rewards}
            report = await import_lines(redis_client, [json.dumps(fresh)])
            assert not report.created, (name, report)
            [problem] = report.problems
            assert problem.code == "INVALID" and "no score on" in problem.reason, (name, problem)


async def study_ratings(client: redis.Redis, study: RatingStudy) -> list[Any]:
    """What a study's ratings are read from: which of its raters' episodes were saved, and the
    rating of each saved one (its item's AnnotationForEpisode)."""
    store = StudyStore(client)
    state = await store.state(str(study.pk))
    saved = [
        item.annotation
        for number, rater in enumerate(study.raters)
        for item in rater.items
        if state.revisions.get(f"{number}:{item.episode}", 0) > 0
    ]
    return [state.revisions, await store.annotations(saved)]


async def test_a_free_rating_of_another_studys_episode_leaves_that_study_as_it_was(
    redis_client: redis.Redis,
) -> None:
    """A Sotopia rating of an episode a stored study rates is stored as Sotopia's record, and
    the study's ratings are the ones its raters saved, still."""
    study, made = await study_with_ratings(redis_client)
    before = await study_ratings(redis_client, study)
    assert sorted(str(a.pk) for a in before[1]) == sorted(made)
    rating = rating_line(
        "free-rating-of-a-study-episode",
        study.episode_ids[0],
        study.raters[0].annotator_id,
        rewards=[1.0, 1.0],
    )
    report = await import_lines(redis_client, [json.dumps(rating)])
    assert report.created["annotations"] == 1 and report.invalid == 0
    assert await study_ratings(redis_client, study) == before


async def test_a_file_of_ten_thousand_ratings_imports_once_in_batches(
    redis_client: redis.Redis,
) -> None:
    lines, _, rating = sotopia_file("RT")
    pks = [f"many-rt-{n}" for n in range(10_000)]
    many = [json.dumps({**rating, "pk": pk}) for pk in pks]
    try:
        report = await import_lines(redis_client, [*lines, *many])
        assert report.invalid == 0 and report.created["annotations"] == 10_001
        again = await import_lines(redis_client, many)
        assert again.created == {} and again.skipped["annotations"] == 10_000
        assert ratings.BATCH < 10_000
    finally:  # the session's Redis stays small for the tests that read all of it
        for start in range(0, len(pks), 1_000):
            await redis_client.delete(*(keys.annotation(pk) for pk in pks[start : start + 1_000]))


async def test_a_study_line_over_the_limits_is_refused(redis_client: redis.Redis) -> None:
    line = {
        "rating_study_id": "too-many",
        "name": "big",
        "rubric": [d.model_dump() for d in SOTOPIA_DIMENSIONS],
        "episode_ids": [f"e{n}" for n in range(10_000)],
    }
    report = await import_lines(redis_client, [json.dumps(line)])
    [problem] = report.problems
    assert problem.code == "INVALID" and problem.reason.startswith("rating study")


async def test_a_study_line_whose_rubric_names_a_dimension_twice_is_refused(
    redis_client: redis.Redis, unchanged: Any
) -> None:
    """A rubric a study could not have (a dimension twice, at two ranges; a dimension named as
    the overall score) is no line to check ratings against: refused, INVALID, nothing kept."""
    goal = {"name": "goal", "description": "", "range_low": 0, "range_high": 10}
    rubrics = {
        "goal twice": [goal, {**goal, "range_high": 100}],
        "overall as a dimension": [goal, {**goal, "name": "overall_score"}],
    }
    async with unchanged():
        for name, rubric in rubrics.items():
            line = {"rating_study_id": "odd-rubric", "name": name, "rubric": rubric,
                    "episode_ids": ["e1"]}  # fmt: skip
            report = await import_lines(redis_client, [json.dumps(line)])
            [problem] = report.problems
            assert problem.code == "INVALID" and "rubric" in problem.reason, (name, problem)


async def test_a_stored_rating_another_writer_got_wrong_is_exported_and_refused_on_import(
    redis_client: redis.Redis,
) -> None:
    """The export writes it as it is (it neither stops nor drops it silently); the import says
    what is wrong with it."""
    lines, _, rating = sotopia_file("RW")
    await import_lines(redis_client, lines)
    wrong = {**rating, "pk": "wrongly-written", "rewards": "ten"}
    await redis_client.json().set(keys.annotation("wrongly-written"), "$", wrong)
    out = await exported(redis_client, rating["episode"])
    assert wrong in out
    report = await import_lines(redis_client, [json.dumps(wrong)])
    [problem] = report.problems
    assert problem.code == "INVALID" and "rewards" in problem.reason


async def test_a_studys_ratings_in_a_later_part_of_the_file_are_checked_against_its_line(
    redis_client: redis.Redis, exported_study: ExportedStudy
) -> None:
    """A remote import sends a file in parts of 256 KiB, each imported on its own: the study
    line read in one part checks the ratings of the next (and nothing else than its line is
    kept of the study)."""
    line, rating = exported_study.line, exported_study.rating
    first = await import_lines(redis_client, [json.dumps({**line, "rating_study_id": "parted"})])
    assert first.invalid == 0 and not first.created
    named = {**rating, "parley": {"rating_study_id": "parted"}}
    good = {**named, "pk": "in-a-later-part"}
    scores = rating["rewards"][0][1]
    bad = {**named, "pk": "out-of-range-later", "rewards": [[3.0, {**scores, "goal": 12.0}]] * 2}
    report = await import_lines(redis_client, [json.dumps(good), json.dumps(bad)])
    assert report.created["annotations"] == 1, report
    [problem] = report.problems
    assert problem.line == 2 and "goal 12 is out of its range 0..10" in problem.reason
    assert not await redis_client.exists(RatingStudy.make_primary_key("parted"))


async def test_a_remote_import_in_parts_keeps_a_studys_ratings_and_their_codes(
    redis_url: str, exported_study: ExportedStudy, tmp_path: Path
) -> None:
    """`parley import --url` against a server whose body limit splits the file into parts: every
    rating after its study's line is stored, and a refused one is reported in the file's line
    numbers with its code."""
    study = exported_study.study
    line = {**exported_study.line, "rating_study_id": "sent-in-parts"}
    named = {**exported_study.rating, "parley": {"rating_study_id": "sent-in-parts"}}
    ratings = [{**named, "pk": f"in-part-{n}"} for n in range(40)]
    ratings[-1] = {**ratings[-1], "episode": study.episode_ids[1]}  # stored nowhere
    text = "\n".join(json.dumps(x) for x in [line, *ratings]) + "\n"
    assert len(text) > 4 * PART_LIMIT > len(json.dumps(line))
    async with serve(redis_url, tmp_path / "api", max_body_bytes=PART_LIMIT) as url:
        report = await remote_import(url, None, io.BytesIO(text.encode()))
    assert report.created["annotations"] == 39, report
    assert report.problems == [Problem(41, report.problems[0].reason, "NOT_FOUND")]
    assert "neither stored nor in the lines before it" in report.problems[0].reason


async def test_the_ratings_of_an_episode_whose_id_has_punctuation_are_exported(
    redis_client: redis.Redis,
) -> None:
    """The episodes an export selects are looked up by a TAG query on their ids, where '-' and
    '.' must be escaped."""
    lines, person, rating = sotopia_file("-.")
    report = await import_lines(redis_client, lines)
    assert report.invalid == 0 and rating["episode"].endswith("-.")
    out = await exported(redis_client, rating["episode"])
    assert rating in out and person in out
