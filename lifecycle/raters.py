"""A rater's side of a rating study: with the token of their link, a person reads their next
episode, blind (`view`), keeps a draft as they type (`draft`) and saves their rating (`rate`),
each checked against the stored study when it arrives, and nothing else (graph/rater_access.py).
A token is found by its hash (`keys.rater_token`), as a seat token is.
"""

from __future__ import annotations

import hmac
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, Field, ValidationError

from parley.core.errors import (
    ErrorCode,
    UserError,
    from_validation,
)
from parley.core.limits import (
    Reasoning,
    RecordId,
    has_utf8_form,
)
from parley.lifecycle.seats import MAX_TOKEN_LENGTH, token_hash
from parley.lifecycle.studies import CLOSED, Studies
from parley.resolvers import study_plan
from parley.resolvers.blind import BlindEpisode, blind_episode
from parley.resolvers.study_fields import (
    SCORES_MAX,
    DraftScoreFields,
    ScoreFields,
    score_errors,
)
from parley.storage.models import (
    AnnotationForEpisode,
    EpisodeLog,
    RatingStudy,
    StudyItem,
)
from parley.storage.records import get_or_none
from parley.storage.studies import (
    DraftScore,
    RatingDraft,
    RatingTarget,
    slot,
)
from parley.storage.vocabulary import RatingRefusal

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


class Raters:
    """What raters read and write, over the studies of one Redis."""

    def __init__(self, studies: Studies) -> None:
        self.studies = studies

    async def holder(self, token: str) -> RaterHolder | None:
        """The rater `token` is the token of, or None. Found by the token's hash (no lookup
        takes a time that depends on how much of a guess is right), and checked against the
        study as stored (a key left behind counts for nothing; a closed study opens nothing)."""
        if not token or len(token) > MAX_TOKEN_LENGTH or not has_utf8_form(token):
            return None
        digest = token_hash(token)
        found = await self.studies.store.rater_of(digest)
        if found is None:
            return None
        study_id, rater = found
        path = f"$.raters[{rater}].token_hash"
        held: Any = await self.studies.client.json().get(
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
        """A rater's view, with the episode at `position` in their order (else, or when that
        episode was deleted since, the first not rated yet that is still stored); None unless
        `token` is that rater's of an open study."""
        study = await self.studies.get(study_id)
        if study is None or not holds_rater(study, rater, token):
            return None
        assert study is not None
        items = study.raters[rater].items
        state = await self.studies.store.state(study_id)
        rated = [state.revisions.get(slot(rater, item.episode), 0) > 0 for item in items]
        asked = position if position is not None and 0 <= position < len(items) else None
        task = None if asked is None else await self._task(study, rater, asked)
        for other, done in enumerate(rated):  # else the first not rated that is still stored
            if task is not None:
                break
            if not done and other != asked:
                task = await self._task(study, rater, other)
        return RaterView(study, rater, rated, task)

    async def _task(self, study: RatingStudy, rater: int, position: int) -> RatingTask | None:
        item = study.raters[rater].items[position]
        episode = await get_or_none(EpisodeLog, study.episode_ids[item.episode])
        if episode is None:
            return None
        revision, draft = await self.studies.store.rater_state(str(study.pk), rater, item.episode)
        saved = None
        if revision:
            (annotation,) = await self.studies.store.annotations([item.annotation])
            saved = _saved(annotation) if annotation else None
        shown = await blind_episode(self.studies.client, episode, study.shows_secrets)
        stored_draft = _rating(draft.scores, draft.reasoning) if draft else None
        return RatingTask(position, revision, shown, saved, stored_draft)

    async def _writer(
        self, fields: RatingFields | DraftFields, complete: bool
    ) -> tuple[RatingStudy | None, StudyItem | None, int, list[UserError]]:
        """The study, the rater's item at the position, and the episode's number of agents, or
        why they may not write (scores included: all of them when `complete`). The token is
        checked first: a wrong one is refused alike whether the study, the rater and the
        position exist or not."""
        study = await self.studies.get(fields.study_id)
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
        agents: Any = await self.studies.client.json().get(key, "$.agents")
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
        done = await self.studies.store.save_rating(_target(request, item), annotation, check)
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
        done = await self.studies.store.save_draft(_target(request, item), draft)
        if done.refusal is not None:
            return False, [_refusal(done.refusal)]
        return True, []
