"""Rating studies: the study record, its raters' credential keys, and each rating saved as
Sotopia's AnnotationForEpisode, with the progress, draft and gold check beside it. Saving a
rating is one script (storage/lua/save_rating.lua) that checks the rater's token and the
revision the rating was based on, so two tabs of one rater never lose or double a rating.

Sotopia's own index over ratings is made here too, with Sotopia's name and schema (its
migrator's hash beside it), so that Sotopia's `AnnotationForEpisode.find()` reads them.
"""

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import redis.asyncio as redis
from pydantic import BaseModel

from parley.engine.types import JudgeRun
from parley.storage import keys
from parley.storage.evaluations import evaluation_record
from parley.storage.models import (
    AnnotationForEpisode,
    Annotator,
    EpisodeLog,
    Evaluation,
    RatingStudy,
)
from parley.storage.scripts import Script
from parley.storage.vocabulary import RatingRefusal

ANNOTATION_SCHEMA = (
    f"ON JSON PREFIX 1 {keys.annotation('')} SCHEMA $.pk AS pk TAG SEPARATOR | $.episode AS "
    "episode TAG SEPARATOR | $.annotator_id AS annotator_id TAG SEPARATOR | $.annotator_id AS "
    "annotator_id_fts TEXT  "
)
"""The schema Sotopia 0.1.5's migrator gives its AnnotationForEpisode index (redis-om 0.3.2),
byte for byte: the SHA-1 it keeps of it is the one it compares."""


class GoldMiss(BaseModel):
    """A score of a gold episode further from the expected one than the tolerance."""

    agent: int
    dimension: str
    expected: float
    given: float


class GoldCheck(BaseModel):
    """How a rater's saved rating of a gold episode compares with the expected scores."""

    misses: list[GoldMiss] = []

    @property
    def flagged(self) -> bool:
        return bool(self.misses)


class ScoredEvaluation(BaseModel):
    """A later judgement's scores: the aggregate and each of its panel's runs."""

    id: str
    rewards: list[tuple[float, dict[str, float]] | float] = []
    judge_runs: list[JudgeRun] = []


class ScoredEpisode(BaseModel):
    """What agreement figures read of an episode: its agents, the models that played them
    (Sotopia's `models`, the judge first), the judge's scores and each of its panel's runs, and
    the same of each later judgement."""

    agents: list[str] = []
    models: list[str] | None = []
    rewards: list[tuple[float, dict[str, float]] | float] = []
    judge_runs: list[JudgeRun] = []
    evaluations: list[ScoredEvaluation] = []


SCORED_PATHS = [f"$.{name}" for name in ScoredEpisode.model_fields]


class DraftScore(BaseModel):
    agent: int
    dimension: str
    score: int | None = None


class RatingDraft(BaseModel):
    """What a rater has typed for an episode and not saved yet."""

    scores: list[DraftScore] = []
    reasoning: str = ""


def slot(rater: int, episode: int) -> str:
    """A rater's episode, as the study's hashes name it."""
    return f"{rater}:{episode}"


def rater_entry(study_id: str, rater: int) -> str:
    """The value of a rater's `keys.rater_token` key."""
    return json.dumps([study_id, rater])


class RatingKeys(NamedTuple):
    study: str
    annotation: str
    ratings: str
    progress: str
    drafts: str
    gold: str


class RatingArgs(NamedTuple):
    rater: int
    slot: str
    token_hash: str
    revision: int
    body: str
    gold: str


class DraftKeys(NamedTuple):
    study: str
    ratings: str
    drafts: str


class DraftArgs(NamedTuple):
    rater: int
    slot: str
    token_hash: str
    revision: int
    body: str


class RenewKeys(NamedTuple):
    study: str
    old: str
    token: str


class RenewArgs(NamedTuple):
    rater: int
    old_hash: str
    token_hash: str
    entry: str


class StudyKeys(NamedTuple):
    study: str


class HumanResultsKeys(NamedTuple):
    version: str
    inputs: str


class HumanResultsArgs(NamedTuple):
    version: int
    inputs: str


class CloseArgs(NamedTuple):
    now: float


RATER_CHECK = ("json", "rater")
SAVE = Script("save_rating", RatingKeys, RatingArgs, RATER_CHECK)
DRAFT = Script("save_rating_draft", DraftKeys, DraftArgs, RATER_CHECK)
RENEW = Script("renew_rater", RenewKeys, RenewArgs, ("json",))
CLOSE = Script("close_study", StudyKeys, CloseArgs)
HUMAN_RESULTS = Script("write_human_results", HumanResultsKeys, HumanResultsArgs)
GROUPED_BY = ["$.environment", "$.agents", "$.tag", "$.experiment_id", "$.arm", "$.models"]
"""The episode's fields results group an evaluation's scores by."""


@dataclass(frozen=True)
class RatingTarget:
    """What a rating or a draft is written to: rater `rater`'s study episode `episode`, by the
    holder of the token of this hash, based on `revision`."""

    study_id: str
    rater: int
    episode: int
    token_hash: str
    revision: int

    @property
    def slot(self) -> str:
        return slot(self.rater, self.episode)


class Saved(NamedTuple):
    """What a save or a draft did: stored (then the revision it is at, and for a save the
    episodes the rater has rated), or refused (why, and the stored revision)."""

    refusal: RatingRefusal | None
    revision: int
    rated: int = 0


@dataclass(frozen=True)
class StudyState:
    """Where every rater of a study is."""

    revisions: dict[str, int] = field(default_factory=dict)
    """By slot: how many times its rating was saved (absent: never)."""
    rated: dict[int, int] = field(default_factory=dict)
    """By rater: how many of their episodes they have rated."""
    gold: dict[str, GoldCheck] = field(default_factory=dict)
    """By slot of a gold episode rated."""


class StudyStore:
    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    async def create(self, study: RatingStudy, annotators: Sequence[Annotator]) -> bool:
        """Store a new study, its raters as Sotopia Annotators and their credential keys, all at
        once; False (nothing written) when its id is taken."""
        pk = str(study.pk)
        key = RatingStudy.make_primary_key(pk)
        async with self.client.pipeline(transaction=True) as pipe:
            await pipe.watch(key)
            if await pipe.exists(key):
                return False
            pipe.multi()  # type: ignore[no-untyped-call]
            pipe.json().set(key, "$", study.model_dump(mode="json"))
            for annotator in annotators:
                pipe.json().set(keys.annotator(annotator.pk), "$", annotator.model_dump())
            for number, rater in enumerate(study.raters):
                pipe.set(keys.rater_token(rater.token_hash), rater_entry(pk, number))
            if study.experiment_id is not None:
                pipe.zadd(keys.experiment_studies(study.experiment_id), {pk: study.created_at})
            try:
                await pipe.execute()
            except redis.WatchError:
                return False
        return True

    async def of_experiment(self, experiment_id: str) -> list[RatingStudy]:
        """The studies made of an experiment's episodes, oldest first (one deleted since is
        left out)."""
        found: list[Any] = await self.client.zrange(keys.experiment_studies(experiment_id), 0, -1)
        studies = [await self.get(str(pk)) for pk in found]
        return [study for study in studies if study is not None]

    async def get(self, pk: str) -> RatingStudy | None:
        raw: Any = await self.client.json().get(RatingStudy.make_primary_key(pk), "$")
        return RatingStudy.model_validate(raw[0]) if raw else None

    async def rater_of(self, token_hash: str) -> tuple[str, int] | None:
        """The (study id, rater) a token's hash is keyed to, if any (to be checked against the
        study: a key may outlive its study)."""
        entry = await self.client.get(keys.rater_token(token_hash))
        try:
            study_id, rater = json.loads(entry) if entry else (None, None)
        except (ValueError, TypeError):
            return None
        if not isinstance(study_id, str) or not isinstance(rater, int):
            return None
        return study_id, rater

    async def save_rating(
        self, target: RatingTarget, annotation: AnnotationForEpisode, gold: GoldCheck | None
    ) -> Saved:
        """Save a rater's rating of one of their study episodes."""
        study_id = target.study_id
        reply: list[Any] = await SAVE(
            self.client,
            RatingKeys(
                RatingStudy.make_primary_key(study_id),
                keys.annotation(annotation.pk),
                keys.study_ratings(study_id),
                keys.study_progress(study_id),
                keys.study_drafts(study_id),
                keys.study_gold(study_id),
            ),
            RatingArgs(
                target.rater,
                target.slot,
                target.token_hash,
                target.revision,
                annotation.model_dump_json(),
                gold.model_dump_json() if gold is not None else "",
            ),
        )
        if int(reply[0]) == 1:
            return Saved(None, int(reply[1]), int(reply[2]))
        return Saved(RatingRefusal(reply[1]), int(reply[2]))

    async def save_draft(self, target: RatingTarget, draft: RatingDraft) -> Saved:
        study_id = target.study_id
        reply: list[Any] = await DRAFT(
            self.client,
            DraftKeys(
                RatingStudy.make_primary_key(study_id),
                keys.study_ratings(study_id),
                keys.study_drafts(study_id),
            ),
            DraftArgs(
                target.rater,
                target.slot,
                target.token_hash,
                target.revision,
                draft.model_dump_json(),
            ),
        )
        if int(reply[0]) == 1:
            return Saved(None, int(reply[1]))
        return Saved(RatingRefusal(reply[1]), int(reply[2]))

    async def renew(self, study_id: str, rater: int, old_hash: str, token_hash: str) -> int:
        """Replace rater `rater`'s token: 1, 0 when it changed meanwhile, -1 when the study is
        gone, -2 when it has no such rater."""
        done = await RENEW(
            self.client,
            RenewKeys(
                RatingStudy.make_primary_key(study_id),
                keys.rater_token(old_hash),
                keys.rater_token(token_hash),
            ),
            RenewArgs(rater, old_hash, token_hash, rater_entry(study_id, rater)),
        )
        return int(done)

    async def close(self, study_id: str, now: float) -> int:
        """1 closed now, 0 closed already, -1 no such study."""
        done = await CLOSE(
            self.client, StudyKeys(RatingStudy.make_primary_key(study_id)), CloseArgs(now)
        )
        return int(done)

    async def state(self, study_id: str) -> StudyState:
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.hgetall(keys.study_ratings(study_id))
            pipe.hgetall(keys.study_progress(study_id))
            pipe.hgetall(keys.study_gold(study_id))
            revisions, rated, gold = await pipe.execute()
        return StudyState(
            revisions={k: int(v) for k, v in revisions.items()},
            rated={int(k): int(v) for k, v in rated.items()},
            gold={k: GoldCheck.model_validate_json(v) for k, v in gold.items()},
        )

    async def agreement_version(self, study_ids: Sequence[str]) -> str:
        """The version of what agreement figures over these studies' ratings are computed
        from, in one round trip: `keys.SCORES_VERSION` and each study's ratings version (the
        sum of its rating revisions). Any change of a score, a choice's episodes or a rating
        changes it."""
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.get(keys.SCORES_VERSION)
            for study_id in study_ids:
                pipe.hvals(keys.study_ratings(study_id))
            scores, *ratings = await pipe.execute()
        return _version(scores, ratings)

    async def results_inputs(self, study_id: str) -> tuple[str, str]:
        """The version of a study's inputs (`agreement_version`) its evaluation records were
        last written from ("" for never), and the version now, in one round trip."""
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.get(keys.study_results_inputs(study_id))
            pipe.get(keys.SCORES_VERSION)
            pipe.hvals(keys.study_ratings(study_id))
            written, scores, ratings = await pipe.execute()
        return written or "", _version(scores, [ratings])

    async def rater_state(
        self, study_id: str, rater: int, episode: int
    ) -> tuple[int, RatingDraft | None]:
        """The revision of a rater's episode, and their draft of it, if any."""
        where = slot(rater, episode)
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.hget(keys.study_ratings(study_id), where)
            pipe.hget(keys.study_drafts(study_id), where)
            revision, draft = await pipe.execute()
        return int(revision or 0), RatingDraft.model_validate_json(draft) if draft else None

    async def annotations(self, pks: Sequence[str]) -> list[AnnotationForEpisode | None]:
        """The AnnotationForEpisode records of these ids (None where there is none)."""
        if not pks:
            return []
        raw: Any = await self.client.json().mget([keys.annotation(pk) for pk in pks], "$")
        return [AnnotationForEpisode.model_validate(r[0]) if r else None for r in raw]

    async def scored_episodes(self, pks: Sequence[str]) -> dict[str, ScoredEpisode]:
        """The scores of the stored episodes among `pks`, by id: only the fields agreement
        reads, not the conversations."""
        async with self.client.pipeline(transaction=False) as pipe:
            for pk in pks:
                pipe.json().get(EpisodeLog.make_primary_key(pk), *SCORED_PATHS)
            found: list[Any] = await pipe.execute()
        return {
            pk: ScoredEpisode.model_validate(
                {path[2:]: values[0] for path, values in raw.items() if values}
            )
            for pk, raw in zip(pks, found, strict=True)
            if raw is not None
        }

    async def stored_episodes(self, pks: Sequence[str]) -> set[str]:
        """The ids among `pks` of episodes still stored."""
        async with self.client.pipeline(transaction=False) as pipe:
            for pk in pks:
                pipe.exists(EpisodeLog.make_primary_key(pk))
            found: list[int] = await pipe.execute()
        return {pk for pk, there in zip(pks, found, strict=True) if there}

    async def write_human_results(
        self, study_id: str, version: int, entries: Mapping[str, Evaluation], inputs: str
    ) -> bool:
        """Write the study's evaluation of each stored episode of `entries` (the raters' means,
        by episode id) as the records results read, computed from the ratings at `version` (and
        from all its inputs at `inputs`, read before them: `results_inputs`), and delete those
        of episodes no longer stored; not if records of a later version are written. Whether
        they were."""
        pks = list(entries)
        async with self.client.pipeline(transaction=False) as pipe:
            for pk in pks:
                pipe.json().get(EpisodeLog.make_primary_key(pk), *GROUPED_BY)
            found: list[Any] = await pipe.execute()
        records = {
            keys.evaluation_record(study_id, pk): ""  # the episode is gone: so is its record
            if raw is None
            else json.dumps(
                evaluation_record(
                    pk, {path[2:]: values[0] for path, values in raw.items() if values}, entries[pk]
                )
            )
            for pk, raw in zip(pks, found, strict=True)
        }
        done = await HUMAN_RESULTS(
            self.client,
            HumanResultsKeys(
                keys.study_results_version(study_id), keys.study_results_inputs(study_id)
            ),
            HumanResultsArgs(version, inputs),
            more_keys=list(records),
            more_args=list(records.values()),
        )
        return bool(done)


def _version(scores: str | None, ratings: Sequence[Sequence[str]]) -> str:
    """`keys.SCORES_VERSION` and each study's ratings version (the sum of its revisions)."""
    return json.dumps([int(scores or 0), *(sum(map(int, found)) for found in ratings)])


def schema_hash(schema: str) -> str:
    """What Sotopia's migrator keeps of an index's schema to tell whether it changed."""
    return hashlib.sha1(schema.encode("utf-8")).hexdigest()


async def create_annotation_index(client: redis.Redis) -> bool:
    """Make Sotopia's index over ratings, with its name and schema and the hash its migrator
    keeps, unless an index of that name exists (Sotopia's, made by an import of Sotopia, or one
    of its older versions, which is left as it is); whether it was made."""
    try:
        await client.execute_command(  # type: ignore[no-untyped-call]
            "FT.CREATE", keys.ANNOTATION_INDEX, *ANNOTATION_SCHEMA.split()
        )
    except redis.ResponseError as err:
        if "already exists" in str(err).lower():
            return False
        raise
    await client.set(keys.ANNOTATION_INDEX_HASH, schema_hash(ANNOTATION_SCHEMA))
    return True


async def insert_ratings(
    client: redis.Redis, records: Sequence[Annotator | AnnotationForEpisode]
) -> list[bool]:
    """Store each imported rating or annotator unless its id is taken (then it is left as it
    is), in one round trip: whether each was stored."""
    if not records:
        return []
    async with client.pipeline(transaction=False) as pipe:
        for record in records:
            key = (
                keys.annotator(record.pk)
                if isinstance(record, Annotator)
                else keys.annotation(record.pk)
            )
            pipe.execute_command("JSON.SET", key, "$", record.model_dump_json(), "NX")
        results: list[Any] = await pipe.execute()
    return [bool(result) for result in results]


async def keep_imported_study(client: redis.Redis, study_id: str, line: str) -> None:
    """Keep the line of a study an import read, unless one of its id is kept already."""
    await client.set(keys.imported_study(study_id), line, nx=True)


async def imported_study(client: redis.Redis, study_id: str) -> str | None:
    """The line of a study an import kept (`keep_imported_study`), if any."""
    line = await client.get(keys.imported_study(study_id))
    return line.decode() if isinstance(line, bytes) else line
