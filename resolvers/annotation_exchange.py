"""People's ratings in an export and an import: Sotopia's `AnnotationForEpisode` and
`Annotator` records, each a line in its own shape (its `model_dump`, so that Sotopia's classes
load it as it is), and before the ratings of a rating study the study's line, Parley's own:
its name, rubric and episodes (never its raters' links: a token, or its hash, stays with the
server that gave it).

A rating line of a study names it under the one extra key, `parley`; its scores are checked
against that study's rubric. A rating line without it (as Sotopia writes one) is checked
against Sotopia's dimensions where it names them. A rating is imported when its episode is
stored (by the lines before it, or already) and its annotator too, with a score for each of
the episode's agents. A record's identity is its id: one already stored is skipped, never
overwritten, so importing a file again adds nothing. A study line is read to check the lines
after it (and kept for that, so its ratings in a later part of the file, as a remote import
sends one, are checked against it too), and is not stored as a study: its raters, links and
progress stay where it ran.
"""

import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any

import redis.asyncio as redis
from pydantic import AfterValidator, BaseModel, Field, ValidationError

from parley.core.errors import ErrorCode
from parley.core.import_report import ImportReport
from parley.core.limits import (
    LIST_MAX,
    PATTERNS,
    RECORD_ID,
    STUDY_EPISODES_MAX,
    Name,
    Reasoning,
    RecordId,
)
from parley.core.limits import ShortText as Email
from parley.core.wording import summary
from parley.engine.types import OVERALL_SCORE, SOTOPIA_DIMENSIONS, DimensionSpec
from parley.resolvers import sotopia_format as fmt
from parley.resolvers.dimensions import names_problem
from parley.storage import keys
from parley.storage.models import AnnotationForEpisode, Annotator, EpisodeLog, RatingStudy
from parley.storage.studies import imported_study, insert_ratings, keep_imported_study

BATCH = 500
STUDY_FIELD = fmt.RATING_STUDY_FIELD
ANNOTATORS = "annotators"
"""The report's count of Annotator lines (the ratings are counted as `fmt.Kind.ANNOTATIONS`)."""

Score = Annotated[float, Field(strict=True, allow_inf_nan=False)]
"""A number as JSON writes one: no bool, no NaN or infinity."""


def _rubric(rubric: list[DimensionSpec]) -> list[DimensionSpec]:
    """A rubric a study can have: each dimension named once, none as the overall score."""
    problem = names_problem([d.name for d in rubric])
    if problem is not None:
        raise ValueError(problem)
    return rubric


class StudyLine(BaseModel, extra="forbid"):
    """What a rating of a study needs beside it to be read: the study's name, rubric and
    episodes."""

    rating_study_id: RecordId
    name: Name
    rubric: Annotated[
        list[DimensionSpec], Field(min_length=1, max_length=LIST_MAX), AfterValidator(_rubric)
    ]
    evaluation_dimension_list_id: RecordId | None = None
    episode_ids: Annotated[list[RecordId], Field(max_length=STUDY_EPISODES_MAX)]


class AnnotatorLine(BaseModel, extra="forbid"):
    pk: RecordId
    name: Name
    email: Email = ""


class RatingExtra(BaseModel, extra="forbid"):
    rating_study_id: RecordId


Reward = tuple[Score, Annotated[dict[str, Score], Field(max_length=LIST_MAX + 1)]] | Score


class AnnotationLine(BaseModel, extra="forbid"):
    pk: RecordId
    episode: RecordId
    annotator_id: RecordId
    rewards: Annotated[list[Reward], Field(min_length=1, max_length=LIST_MAX)]
    reasoning: Reasoning
    parley: RatingExtra | None = None


@dataclass(frozen=True)
class Rating:
    """A rating line, and the study it names (None: a rating as Sotopia writes one)."""

    annotation: AnnotationForEpisode
    study: str | None


type Line = StudyLine | Annotator | Rating
LINES = (StudyLine, Annotator, Rating)


# Export


def study_line(study: RatingStudy) -> dict[str, Any]:
    """A stored study's line (as it is: the import checks it)."""
    return StudyLine.model_construct(
        rating_study_id=str(study.pk),
        name=study.name,
        rubric=study.rubric,
        evaluation_dimension_list_id=study.evaluation_dimension_list_id,
        episode_ids=study.episode_ids,
    ).model_dump(mode="json")


def annotation_line(doc: dict[str, Any], study: str | None) -> dict[str, Any]:
    """A stored rating's fields as they are (a record the import would refuse, one another
    writer got wrong, is written all the same, for the import to say what is wrong with it)."""
    line = {name: doc.get(name) for name in AnnotationForEpisode.model_fields}
    if study is not None:
        line[fmt.EXTRA] = {STUDY_FIELD: study}
    return line


async def _scan(client: redis.Redis, prefix: str) -> AsyncIterator[list[str]]:
    batch: list[str] = []
    async for key in client.scan_iter(match=f"{prefix}*", count=BATCH, _type="ReJSON-RL"):
        batch.append(key)
        if len(batch) >= BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


async def _documents(client: redis.Redis, names: Sequence[str]) -> list[dict[str, Any] | None]:
    if not names:
        return []
    raw: Any = await client.json().mget(list(names), "$")
    docs: list[dict[str, Any] | None] = []
    for name, value in zip(names, raw, strict=True):
        doc = value[0] if value and isinstance(value[0], dict) else None
        if doc is not None:
            doc.setdefault("pk", name.rsplit(":", 1)[-1])
        docs.append(doc)
    return docs


async def _studies(client: redis.Redis) -> tuple[dict[str, RatingStudy], dict[str, str]]:
    """Every stored study by id, and the study of each rating id any of them gives out."""
    studies: dict[str, RatingStudy] = {}
    of_rating: dict[str, str] = {}
    async for batch in _scan(client, RatingStudy.make_primary_key("")):
        for doc in await _documents(client, batch):
            try:
                study = RatingStudy.model_validate(doc)
            except ValidationError:  # none, or not a study: its ratings go without it
                continue
            studies[str(study.pk)] = study
            for rater in study.raters:
                of_rating.update((item.annotation, str(study.pk)) for item in rater.items)
    return studies, of_rating


async def _exported(client: redis.Redis, episodes: Any, pks: set[str]) -> set[str]:
    """Which of these episode ids the export's episode query (a redis-om FindQuery) matches."""
    ids = sorted(pk for pk in pks if _is_id(pk))
    if not ids:
        return set()
    query = EpisodeLog.find(*episodes.expressions, EpisodeLog.pk << ids)  # type: ignore[operator]
    reply: Any = await client.execute_command(  # type: ignore[no-untyped-call]
        "FT.SEARCH", keys.index_name("EpisodeLog"), str(query.query),
        "NOCONTENT", "LIMIT", 0, len(ids), "TIMEOUT", 0, "DIALECT", "3",
    )  # fmt: skip
    found = reply["results"] if isinstance(reply, dict) else reply[1:]
    names = [r["id"] if isinstance(r, dict) else r for r in found]
    return {str(name).rsplit(":", 1)[-1] for name in names}


def _is_id(pk: str) -> bool:
    return re.fullmatch(RECORD_ID, pk) is not None


async def lines(client: redis.Redis, episodes: Any) -> AsyncIterator[list[dict[str, Any]]]:
    """Batches of lines of the ratings of the episodes `episodes` (the export's episode query)
    matches: each study's line before its first rating, each annotator's before theirs."""
    studies, of_rating = await _studies(client)
    sent_studies: set[str] = set()
    sent_annotators: set[str] = set()
    async for batch in _scan(client, keys.annotation("")):
        docs = [d for d in await _documents(client, batch) if d is not None]
        wanted = await _exported(client, episodes, {str(d.get("episode", "")) for d in docs})
        docs = [d for d in docs if d.get("episode") in wanted]
        people = sorted({str(d.get("annotator_id")) for d in docs} - sent_annotators)
        found = await _documents(client, [keys.annotator(pk) for pk in people])
        annotators = {pk: doc for pk, doc in zip(people, found, strict=True) if doc}
        out: list[dict[str, Any]] = []
        for doc in docs:
            study = of_rating.get(str(doc.get("pk")))
            if study is not None and study not in sent_studies:
                sent_studies.add(study)
                out.append(study_line(studies[study]))
            person = str(doc.get("annotator_id"))
            if person in annotators and person not in sent_annotators:
                sent_annotators.add(person)
                found_person = annotators[person]
                out.append({name: found_person.get(name, "") for name in Annotator.model_fields})
            out.append(annotation_line(doc, study))
        if out:
            yield out


# Import


def parse(line: dict[str, Any]) -> Line:
    """The record a rating line holds; raises LineError saying what is wrong."""
    try:
        if STUDY_FIELD in line:
            return StudyLine.model_validate(line)
        if "annotator_id" not in line:
            return Annotator.model_validate(AnnotatorLine.model_validate(line).model_dump())
        valid = AnnotationLine.model_validate(line)
    except ValidationError as err:
        what = "rating study" if STUDY_FIELD in line else "annotation"
        what = what if "annotator_id" in line or STUDY_FIELD in line else "annotator"
        raise fmt.LineError(f"{what} {summary(err, PATTERNS)}") from None
    extra = valid.parley
    annotation = AnnotationForEpisode.model_validate(valid.model_dump(exclude={"parley"}))
    return Rating(annotation, extra.rating_study_id if extra else None)


SOTOPIA_RUBRIC = {d.name: d for d in SOTOPIA_DIMENSIONS}


def score_errors(rewards: Sequence[Any], rubric: dict[str, DimensionSpec] | None) -> list[str]:
    """What is wrong with a rating's scores: a dimension of its study's rubric without a
    score (as a rater's save needs them all) or one the rubric has not (with no study: only
    Sotopia's dimensions are known, any other is taken as it is, and a bare number is
    Sotopia's unscored agent), a score out of its dimension's range, an overall score outside
    the range of the scores it sums up."""
    problems = []
    for agent, reward in enumerate(rewards):
        scored = {} if isinstance(reward, float | int) else reward[1]
        missing = [name for name in rubric or {} if name not in scored]
        if missing:
            problems.append(f"agent {agent} has no score on {', '.join(missing)}")
        if isinstance(reward, float | int):
            continue
        overall, scores = reward
        known = rubric if rubric is not None else SOTOPIA_RUBRIC
        given = {k: v for k, v in scores.items() if k != OVERALL_SCORE}
        for name, score in given.items():
            spec = known.get(name)
            if spec is None and rubric is not None:
                problems.append(f"agent {agent}: {name!r} is not a dimension of its study")
            elif spec is not None and not spec.range_low <= score <= spec.range_high:
                problems.append(
                    f"agent {agent}: {name} {score:g} is out of its range "
                    f"{spec.range_low}..{spec.range_high}"
                )
        if given:
            low, high = min(given.values()), max(given.values())
            for value in (overall, scores.get(OVERALL_SCORE, overall)):
                if not low - 1e-9 <= value <= high + 1e-9:
                    problems.append(
                        f"agent {agent}: overall score {value:g} is outside its scores "
                        f"({low:g}..{high:g})"
                    )
                    break
    return problems


@dataclass
class RatingImporter:
    """Checks and writes rating lines in batches, after the lines before them are written."""

    client: redis.Redis
    report: ImportReport
    studies: dict[str, StudyLine] = field(default_factory=dict)
    """The studies whose lines this import has read."""
    pending: list[tuple[int, Annotator | Rating]] = field(default_factory=list)

    async def add(self, number: int, line: Line) -> None:
        if isinstance(line, StudyLine):
            self.studies[line.rating_study_id] = line
            await keep_imported_study(self.client, line.rating_study_id, line.model_dump_json())
            return
        if isinstance(line, Rating):
            if line.study is not None and line.study not in self.studies:
                kept = await imported_study(self.client, line.study)
                if kept is not None:
                    self.studies[line.study] = StudyLine.model_validate_json(kept)
            problem = self._against_study(line)
            if problem is not None:
                self.report.refuse(number, *problem)
                return
        self.pending.append((number, line))
        if len(self.pending) >= BATCH:
            await self.flush()

    def _against_study(self, rating: Rating) -> tuple[str, str] | None:
        """Why a rating does not fit its study (its line, episodes and rubric), if it does not."""
        annotation = rating.annotation
        if rating.study is None:
            rubric = None
        else:
            study = self.studies.get(rating.study)
            if study is None:
                return (
                    f"annotation names rating study {rating.study!r}, whose line is not before "
                    "it (nor in an import before)",
                    ErrorCode.NOT_FOUND.value,
                )
            if annotation.episode not in study.episode_ids:
                return (
                    f"annotation rates episode {annotation.episode!r}, which is not one of rating "
                    f"study {rating.study!r}'s episodes",
                    ErrorCode.CONFLICT.value,
                )
            rubric = {d.name: d for d in study.rubric}
        problems = score_errors(annotation.rewards, rubric)
        if problems:
            return "annotation " + "; ".join(problems), ErrorCode.INVALID.value
        return None

    async def flush(self) -> None:
        batch, self.pending = self.pending, []
        if not batch:
            return
        people = [line for _, line in batch if isinstance(line, Annotator)]
        made = await insert_ratings(self.client, people)
        for created in made:
            (self.report.created if created else self.report.skipped)[ANNOTATORS] += 1
        ratings = [(n, line.annotation) for n, line in batch if isinstance(line, Rating)]
        valid = await self._stored_references(ratings)
        made = await insert_ratings(self.client, [a for _, a in valid])
        kind = fmt.Kind.ANNOTATIONS.value
        for created in made:
            (self.report.created if created else self.report.skipped)[kind] += 1

    async def _stored_references(
        self, ratings: list[tuple[int, AnnotationForEpisode]]
    ) -> list[tuple[int, AnnotationForEpisode]]:
        """The ratings whose episode is stored, with a score for each of its agents, and whose
        annotator is; the others refused."""
        async with self.client.pipeline(transaction=False) as pipe:
            for _, annotation in ratings:
                pipe.json().get(EpisodeLog.make_primary_key(annotation.episode), "$.agents")
                pipe.exists(keys.annotator(annotation.annotator_id))
            found: list[Any] = await pipe.execute()
        valid = []
        for (number, annotation), agents, person in zip(
            ratings, found[::2], found[1::2], strict=True
        ):
            if not agents:
                self.report.refuse(
                    number,
                    f"annotation rates episode {annotation.episode!r}, which is neither stored "
                    "nor in the lines before it",
                    ErrorCode.NOT_FOUND.value,
                )
            elif not person:
                self.report.refuse(
                    number,
                    f"annotation names annotator {annotation.annotator_id!r}, who is neither "
                    "stored nor in the lines before it",
                    ErrorCode.NOT_FOUND.value,
                )
            elif len(annotation.rewards) != len(agents[0]):
                self.report.refuse(
                    number,
                    f"annotation has {len(annotation.rewards)} rewards for the "
                    f"{len(agents[0])} agents of episode {annotation.episode!r}",
                    ErrorCode.INVALID.value,
                )
            else:
                valid.append((number, annotation))
        return valid
