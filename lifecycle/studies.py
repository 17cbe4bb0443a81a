"""Rating studies: people rate finished episodes on a rubric, blind, through links like seat
links, and the ratings are kept as Sotopia's AnnotationForEpisode records.

A study is made once (`create`): its episodes (by ids, an experiment or a tag; completed ones
only), its rubric (Sotopia's seven dimensions or a stored list, copied into the study), its
raters, each episode given to `raters_per_episode` of them in turn (storage never sees an
unbalanced plan) and each rater's episodes shuffled in an order of their own, and its gold
episodes, which every rater rates and whose expected scores flag (never stop) a rater who is
far off. Each rater gets a token, shown once and stored as its hash, which also keys the rater
it opens (`keys.rater_token`): with it, a person reads their next episode (`view`), keeps a draft
as they type (`draft`) and saves their rating (`rate`), each checked against the stored study
when it arrives, and nothing else (graph/rater_access.py).
"""

from __future__ import annotations

import functools
import hmac
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Unpack

import redis.asyncio as redis
from pydantic import BaseModel, Field, ValidationError
from ulid import ULID

from parley.core.errors import (
    ErrorCode,
    UserError,
    from_validation,
    not_found,
    searchable_tag,
)
from parley.core.limits import (
    STUDY_EPISODES_MAX,
    Reasoning,
    RecordId,
    has_utf8_form,
)
from parley.engine.types import DimensionSpec
from parley.lifecycle.episode_choice import chosen_episodes
from parley.lifecycle.kept_figures import KeptFigures
from parley.lifecycle.seats import MAX_TOKEN_LENGTH, new_token, token_hash
from parley.resolvers import study_agreement, study_plan
from parley.resolvers.blind import BlindEpisode, blind_episode, needs_secrets
from parley.resolvers.human_scores import human_evaluations
from parley.resolvers.keyset import newest_first
from parley.resolvers.pagination import Page, PageArgs, fetch_page
from parley.resolvers.study_agreement import DimensionAgreement
from parley.resolvers.study_fields import (
    SCORES_MAX,
    DraftScoreFields,
    ScoreFields,
    StudyFields,
    count_errors,
    gold_episodes,
    named_at,
    rubric,
    score_errors,
)
from parley.resolvers.study_status import StudyRating, StudyStatus, study_status
from parley.storage.models import (
    AnnotationForEpisode,
    Annotator,
    EpisodeLog,
    EpisodeStatus,
    Evaluation,
    EvaluationStatus,
    GoldEpisode,
    RatingStudy,
    StudyItem,
    StudyRater,
)
from parley.storage.records import get_or_none, storable
from parley.storage.studies import (
    DraftScore,
    RatingDraft,
    RatingTarget,
    StudyStore,
    slot,
)
from parley.storage.vocabulary import RatingRefusal

STUDIES = newest_first("rating studies")
HUMANS = "humans"
"""What a study's evaluation records name as their judge (results grouped by judge show it)."""


RaterToken = Annotated[str, Field(max_length=MAX_TOKEN_LENGTH)]


class RaterFields(BaseModel, extra="forbid"):
    """Who writes: a rater of a study, by their token, about one of their episodes."""

    study_id: RecordId
    rater: Annotated[int, Field(ge=0)]
    rater_token: RaterToken = ""
    position: Annotated[int, Field(ge=0)]
    """Which of the rater's episodes, in their order."""
    revision: Annotated[int, Field(ge=0)] = 0
    """The saves of that episode's rating the writer has seen."""
    reasoning: Reasoning = ""


class RatingFields(RaterFields):
    scores: Annotated[list[ScoreFields], Field(max_length=SCORES_MAX)]


class DraftFields(RaterFields):
    scores: Annotated[list[DraftScoreFields], Field(max_length=SCORES_MAX)] = []


@dataclass(frozen=True)
class RaterHolder:
    """What a rater token is the token of: one rater of one study."""

    study_id: str
    rater: int


def token_matches(study: RatingStudy, rater: int, token: str) -> bool:
    """Whether `token` is the token of rater `rater` of `study` (never a token without a UTF-8
    form: none given out lacks one)."""
    return (
        has_utf8_form(token)
        and len(token) <= MAX_TOKEN_LENGTH
        and 0 <= rater < len(study.raters)
        and hmac.compare_digest(study.raters[rater].token_hash, token_hash(token))
    )


def holds_rater(study: RatingStudy | None, rater: int, token: str) -> bool:
    """Whether `token` is the token of rater `rater` of `study`, and the study is open."""
    return study is not None and study.closed_at is None and token_matches(study, rater, token)


@dataclass(frozen=True)
class Rating:
    """A rating as a rater gave it: (agent, dimension) -> score, and the reasoning."""

    scores: dict[tuple[int, str], int | None]
    reasoning: str


@dataclass(frozen=True)
class RatingTask:
    """One of a rater's episodes, and where its rating is."""

    position: int
    revision: int
    """How many times its rating was saved: a draft or a new save is based on it."""
    episode: BlindEpisode
    saved: Rating | None
    draft: Rating | None


@dataclass(frozen=True)
class RaterView:
    """What a rater reads: their study's rubric, their episodes in order (rated or not) and one
    of them."""

    study: RatingStudy
    rater: int
    rated: list[bool]
    """By position in the rater's order."""
    task: RatingTask | None
    """The episode asked for, or else the first not rated yet; None once all are rated."""

    @property
    def name(self) -> str:
        return self.study.raters[self.rater].name


@dataclass(frozen=True)
class Saved:
    """A rating stored: the revision it is at now, and how many episodes the rater has rated."""

    position: int
    revision: int
    rated: int
    total: int


TOKEN_REFUSED = "wrong or missing rater token for this rater"
CLOSED = "this study is closed: its ratings are kept, and no more are taken"
STALE = (
    "this episode's rating was saved meanwhile (from another tab or device): load it again to "
    "see the saved one"
)


def _target(fields: RaterFields, item: StudyItem) -> RatingTarget:
    """Where a writer's rating or draft of their item goes."""
    return RatingTarget(
        fields.study_id, fields.rater, item.episode, token_hash(fields.rater_token), fields.revision
    )


def _refusal(refusal: RatingRefusal) -> UserError:
    match refusal:
        case RatingRefusal.CLOSED:
            return UserError(["input", "studyId"], CLOSED, ErrorCode.CONFLICT)
        case RatingRefusal.STALE:
            return UserError(["input", "revision"], STALE, ErrorCode.CONFLICT)
        case _:  # a study that is gone is refused as a wrong token: nothing is said of it
            return UserError(["input", "raterToken"], TOKEN_REFUSED, ErrorCode.FORBIDDEN)


def _rating(
    scores: Sequence[ScoreFields | DraftScoreFields | DraftScore], reasoning: str
) -> Rating:
    return Rating({(s.agent, s.dimension): s.score for s in scores}, reasoning)


def _saved(annotation: AnnotationForEpisode) -> Rating:
    found = study_plan.scores_of(annotation.rewards)
    return Rating({where: round(score) for where, score in found.items()}, annotation.reasoning)


class Studies:
    """Rating studies over one Redis: making them, and a rater's reads and writes."""

    def __init__(self, client: redis.Redis, figures: KeptFigures) -> None:
        self.client = client
        self.store = StudyStore(client)
        self.figures = figures

    async def get(self, pk: str) -> RatingStudy | None:
        return await self.store.get(pk) if storable(pk) else None

    async def of_experiment(self, experiment_id: str) -> list[RatingStudy]:
        """The studies made of an experiment's episodes, oldest first."""
        return await self.store.of_experiment(experiment_id)

    # Making a study

    async def create(
        self, fields: dict[str, Any]
    ) -> tuple[RatingStudy | None, list[str], list[UserError]]:
        """A new study and its raters' tokens (in rater order, shown only now), or why not."""
        try:
            valid = StudyFields(**fields)
        except ValidationError as err:
            return None, [], from_validation(err)
        errors = count_errors(valid)
        if errors:
            return None, [], errors
        chosen, errors = await chosen_episodes(self.client, valid.episodes, STUDY_EPISODES_MAX)
        gold_ids = [g.episode_id for g in valid.gold]
        if errors:
            return None, [], errors
        episode_ids = chosen + [g for g in dict.fromkeys(gold_ids) if g not in chosen]
        if len(episode_ids) > STUDY_EPISODES_MAX:
            message = f"a study rates at most {STUDY_EPISODES_MAX} episodes, gold ones included"
            return None, [], [UserError(["input", "episodes"], message, ErrorCode.INVALID)]
        agents, errors = await self._rateable(episode_ids, chosen, gold_ids)
        if errors:
            return None, [], errors
        dimensions, errors = await rubric(valid.evaluation_dimension_list_id)
        if errors:
            return None, [], errors
        numbers = {pk: n for n, pk in enumerate(episode_ids)}
        gold, errors = gold_episodes(valid.gold, numbers, agents, dimensions)
        if errors:
            return None, [], errors
        study, tokens, annotators = _made(valid, episode_ids, len(chosen), gold, dimensions)
        if not await self.store.create(study, annotators):
            message = "the study could not be stored: send it again"
            return None, [], [UserError(["input"], message, ErrorCode.CONFLICT)]
        return study, tokens, []

    async def _rateable(
        self, episode_ids: list[str], chosen: list[str], gold_ids: list[str]
    ) -> tuple[dict[str, int], list[UserError]]:
        """Each episode's number of agents, or why one cannot be rated: it is not stored, or
        has not completed (a conversation that ended otherwise is not a whole one)."""
        keys = [EpisodeLog.make_primary_key(pk) for pk in episode_ids]
        agents: list[Any] = await self.client.json().mget(keys, "$.agents")
        statuses: list[Any] = await self.client.json().mget(keys, "$.status")
        found: dict[str, int] = {}
        errors: list[UserError] = []
        for pk, held, status in zip(episode_ids, agents, statuses, strict=True):
            at = named_at(pk, chosen, gold_ids)
            if not held:
                errors.append(UserError(at, f"no episode with id {pk!r}", ErrorCode.NOT_FOUND))
                continue
            now = EpisodeStatus(status[0]) if status else EpisodeStatus.COMPLETED
            if now != EpisodeStatus.COMPLETED:
                message = (
                    f"episode {pk!r} is {now.value}: only completed episodes can be rated"
                    if now.terminal
                    else f"episode {pk!r} is {now.value}: it can be rated once it has completed"
                )
                code = ErrorCode.INVALID if now.terminal else ErrorCode.CONFLICT
                errors.append(UserError(at, message, code))
                continue
            found[pk] = len(held[0])
        return found, errors[:20]

    # A rater's side

    async def holder(self, token: str) -> RaterHolder | None:
        """The rater `token` is the token of, or None. Found by the token's hash (no lookup
        takes a time that depends on how much of a guess is right), and checked against the
        study as stored (a key left behind counts for nothing; a closed study opens nothing)."""
        if not token or len(token) > MAX_TOKEN_LENGTH or not has_utf8_form(token):
            return None
        digest = token_hash(token)
        found = await self.store.rater_of(digest)
        if found is None:
            return None
        study_id, rater = found
        path = f"$.raters[{rater}].token_hash"
        held: Any = await self.client.json().get(
            RatingStudy.make_primary_key(study_id), path, "$.closed_at"
        )
        if not isinstance(held, dict) or not held.get(path) or held["$.closed_at"] != [None]:
            return None
        stored = held[path][0]
        if not isinstance(stored, str) or not hmac.compare_digest(stored, digest):
            return None
        return RaterHolder(study_id, rater)

    async def view(
        self, study_id: str, rater: int, token: str, position: int | None = None
    ) -> RaterView | None:
        """A rater's view, with the episode at `position` in their order (else the first not
        rated yet); None unless `token` is that rater's of an open study."""
        study = await self.get(study_id)
        if study is None or not holds_rater(study, rater, token):
            return None
        assert study is not None
        items = study.raters[rater].items
        state = await self.store.state(study_id)
        rated = [state.revisions.get(slot(rater, item.episode), 0) > 0 for item in items]
        if position is None or not 0 <= position < len(items):
            position = next((p for p, done in enumerate(rated) if not done), None)
        task = None if position is None else await self._task(study, rater, position)
        return RaterView(study, rater, rated, task)

    async def _task(self, study: RatingStudy, rater: int, position: int) -> RatingTask | None:
        item = study.raters[rater].items[position]
        episode = await get_or_none(EpisodeLog, study.episode_ids[item.episode])
        if episode is None:
            return None
        revision, draft = await self.store.rater_state(str(study.pk), rater, item.episode)
        saved = None
        if revision:
            (annotation,) = await self.store.annotations([item.annotation])
            saved = _saved(annotation) if annotation else None
        shown = await blind_episode(self.client, episode, study.shows_secrets)
        stored_draft = _rating(draft.scores, draft.reasoning) if draft else None
        return RatingTask(position, revision, shown, saved, stored_draft)

    async def _writer(
        self, fields: RatingFields | DraftFields, complete: bool
    ) -> tuple[RatingStudy | None, StudyItem | None, int, list[UserError]]:
        """The study, the rater's item at the position, and the episode's number of agents, or
        why they may not write (scores included: all of them when `complete`). The token is
        checked first: a wrong one is refused alike whether the study, the rater and the
        position exist or not."""
        study = await self.get(fields.study_id)
        if study is None or not token_matches(study, fields.rater, fields.rater_token):
            return None, None, 0, [_refusal(RatingRefusal.TOKEN)]
        if study.closed_at is not None:
            return None, None, 0, [_refusal(RatingRefusal.CLOSED)]
        items = study.raters[fields.rater].items
        if fields.position >= len(items):
            message = (
                f"you have {len(items)} episodes to rate: there is no number {fields.position + 1}"
            )
            return None, None, 0, [UserError(["input", "position"], message, ErrorCode.INVALID)]
        item = items[fields.position]
        key = EpisodeLog.make_primary_key(study.episode_ids[item.episode])
        agents: Any = await self.client.json().get(key, "$.agents")
        if not agents:
            message = "this episode was deleted since the study was made"
            return None, None, 0, [UserError(["input", "position"], message, ErrorCode.NOT_FOUND)]
        errors = score_errors(fields.scores, len(agents[0]), study.rubric, complete=complete)
        if errors:
            return None, None, 0, errors
        return study, item, len(agents[0]), []

    async def rate(self, fields: dict[str, Any]) -> tuple[Saved | None, list[UserError]]:
        """Save a rater's whole rating of one of their episodes, as Sotopia's
        AnnotationForEpisode; refused, changing nothing, with a wrong token, a score missing or
        off its range, or when it was saved meanwhile from elsewhere."""
        try:
            request = RatingFields(**fields)
        except ValidationError as err:
            return None, from_validation(err)
        study, item, agents, errors = await self._writer(request, complete=True)
        if errors:
            return None, errors
        assert study is not None and item is not None
        scores = {(s.agent, s.dimension): s.score for s in request.scores}
        annotation = AnnotationForEpisode(
            pk=item.annotation,
            episode=study.episode_ids[item.episode],
            annotator_id=study.raters[request.rater].annotator_id,
            rewards=list(study_plan.rewards(scores, agents, study.rubric)),
            reasoning=request.reasoning,
        )
        gold = next((g for g in study.gold if g.episode == item.episode), None)
        check = study_plan.gold_check(gold, scores) if gold is not None else None
        done = await self.store.save_rating(_target(request, item), annotation, check)
        if done.refusal is not None:
            return None, [_refusal(done.refusal)]
        total = len(study.raters[request.rater].items)
        return Saved(request.position, done.revision, done.rated, total), []

    async def draft(self, fields: dict[str, Any]) -> tuple[bool, list[UserError]]:
        """Keep what a rater has typed so far (any scores, each within its range); False, and
        nothing kept, when a save came since the revision it is based on."""
        try:
            request = DraftFields(**fields)
        except ValidationError as err:
            return False, from_validation(err)
        _, item, _, errors = await self._writer(request, complete=False)
        if errors:
            return False, errors
        assert item is not None
        draft = RatingDraft(
            scores=[DraftScore(**s.model_dump()) for s in request.scores],
            reasoning=request.reasoning,
        )
        done = await self.store.save_draft(_target(request, item), draft)
        if done.refusal is not None:
            return False, [_refusal(done.refusal)]
        return True, []

    # The researcher's side

    async def renew(self, study_id: str, rater: int) -> tuple[str | None, list[UserError]]:
        """A new token for a rater; their old link opens nothing from now on."""
        for _ in range(5):
            study = await self.get(study_id)
            if study is None:
                return None, [not_found("rating study", study_id, "studyId")]
            if not 0 <= rater < len(study.raters):
                message = f"the study has {len(study.raters)} raters: there is no rater {rater}"
                return None, [UserError(["input", "rater"], message, ErrorCode.INVALID)]
            if study.closed_at is not None:
                return None, [UserError(["input", "studyId"], CLOSED, ErrorCode.CONFLICT)]
            token = new_token()
            old = study.raters[rater].token_hash
            done = await self.store.renew(study_id, rater, old, token_hash(token))
            if done == 1:
                return token, []
            if done == -1:
                return None, [not_found("rating study", study_id, "studyId")]
        message = "the rater's link kept changing: send it again"
        return None, [UserError(["input", "rater"], message, ErrorCode.CONFLICT)]

    async def close(self, study_id: str) -> tuple[RatingStudy | None, list[UserError]]:
        """Close a study: its links open nothing from now on; its ratings stay."""
        if not storable(study_id) or await self.store.close(study_id, time.time()) == -1:
            return None, [not_found("rating study", study_id)]
        return await self.get(study_id), []

    async def status(self, study: RatingStudy) -> StudyStatus:
        """Where each rater and each episode of a study is, and every gold check."""
        return study_status(study, await self.store.state(str(study.pk)))

    async def ratings(self, study: RatingStudy) -> list[StudyRating]:
        """Every rating saved so far, by rater and in each rater's order: the table agreement
        statistics are computed from (each AnnotationForEpisode's rewards, by episode, agent
        and dimension)."""
        return (await self.saved(study))[1]

    async def saved(self, study: RatingStudy) -> tuple[int, list[StudyRating]]:
        """The version of a study's ratings (the sum of their revisions: every save raises it)
        and every rating saved, as late as that version or later."""
        state = await self.store.state(str(study.pk))
        saved = [
            (number, item)
            for number, rater in enumerate(study.raters)
            for item in rater.items
            if state.revisions.get(slot(number, item.episode), 0) > 0
        ]
        found = await self.store.annotations([item.annotation for _, item in saved])
        ratings = [
            StudyRating(number, study.episode_ids[item.episode], annotation)
            for (number, item), annotation in zip(saved, found, strict=True)
            if annotation is not None
        ]
        return sum(state.revisions.values()), ratings

    async def write_results(self, study: RatingStudy) -> None:
        """Write the raters' mean scores of each rated episode as the study's evaluation
        records, which results of `evaluation: <study id>` read (from the ratings saved by now,
        never overwriting records of later ones)."""
        pk = str(study.pk)
        version, ratings = await self.saved(study)
        entries = {
            episode: Evaluation(
                id=pk,
                judge_model=HUMANS,
                evaluation_dimension_list_id=study.evaluation_dimension_list_id,
                status=EvaluationStatus.COMPLETED,
                rewards=scored.rewards,
            )
            for episode, scored in human_evaluations(pk, ratings).items()
        }
        await self.store.write_human_results(pk, version, entries)

    async def agreement(self, study: RatingStudy) -> list[DimensionAgreement]:
        """How far the raters agree with each other and with the judge, per dimension of the
        rubric and overall, from the ratings saved so far (computed again only when a rating
        or a score changed: lifecycle/kept_figures.py)."""
        ratings = await self.ratings(study)
        episodes = await self.store.scored_episodes(study.episode_ids)
        tables = study_agreement.tables(study, ratings, episodes)
        return await self.figures.of(
            f"study:{study.pk}", tables, functools.partial(study_agreement.agreement, study)
        )


def _made(
    valid: StudyFields,
    episode_ids: list[str],
    chosen: int,
    gold: list[GoldEpisode],
    rubric: list[DimensionSpec],
) -> tuple[RatingStudy, list[str], list[Annotator]]:
    """The study record, its raters' tokens and their Annotator records."""
    pk = str(ULID())
    assigned = study_plan.assign(chosen, valid.raters, valid.raters_per_episode)
    gold_numbers = [g.episode for g in gold]
    tokens = [new_token() for _ in range(valid.raters)]
    names = [
        *valid.rater_names,
        *(f"Rater {n + 1}" for n in range(len(valid.rater_names), valid.raters)),
    ]
    annotators = [Annotator(pk=str(ULID()), name=name) for name in names]
    raters = [
        StudyRater(
            name=names[n],
            annotator_id=annotators[n].pk,
            token_hash=token_hash(tokens[n]),
            items=[
                StudyItem(episode=e, annotation=str(ULID()))
                for e in study_plan.shuffled(study_plan.with_gold(assigned[n], gold_numbers), pk, n)
            ],
        )
        for n in range(valid.raters)
    ]
    study = RatingStudy(
        pk=pk,
        name=valid.name,
        episode_ids=episode_ids,
        gold=gold,
        raters_per_episode=valid.raters_per_episode,
        evaluation_dimension_list_id=valid.evaluation_dimension_list_id,
        rubric=rubric,
        shows_secrets=needs_secrets(rubric),
        raters=raters,
        created_at=time.time(),
        experiment_id=valid.episodes.experiment_id,
    )
    return study, tokens, annotators


async def list_studies(*, name: str | None = None, **page: Unpack[PageArgs]) -> Page[RatingStudy]:
    """Newest first unless asked otherwise."""
    terms = [RatingStudy.name == searchable_tag(name)] if name else []
    return await fetch_page(RatingStudy.find(*terms), STUDIES, **page)
