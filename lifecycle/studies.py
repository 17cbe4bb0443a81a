"""Rating studies: people rate finished episodes on a rubric, blind, through links like seat
links, and the ratings are kept as Sotopia's AnnotationForEpisode records.

A study is made once (`create`): its episodes (by ids, an experiment or a tag; completed ones
only), its rubric (Sotopia's seven dimensions or a stored list, copied into the study), its
raters, each episode given to `raters_per_episode` of them in turn (storage never sees an
unbalanced plan) and each rater's episodes shuffled in an order of their own, and its gold
episodes, which every rater rates and whose expected scores flag (never stop) a rater who is
far off. Each rater gets a token, shown once and stored as its hash; what a rater does with it
is lifecycle/raters.py. Its researcher renews a link, closes the study, and reads its status,
ratings, results and agreement figures.
"""

from __future__ import annotations

import functools
import time
from typing import Any, Unpack

import redis.asyncio as redis
from pydantic import ValidationError
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
)
from parley.engine.types import DimensionSpec
from parley.lifecycle.episode_choice import chosen_episodes
from parley.lifecycle.kept_figures import KeptFigures
from parley.lifecycle.seats import new_token, token_hash
from parley.resolvers import study_agreement, study_plan
from parley.resolvers.blind import needs_secrets
from parley.resolvers.human_scores import human_evaluations
from parley.resolvers.keyset import newest_first
from parley.resolvers.pagination import Page, PageArgs, fetch_page
from parley.resolvers.study_agreement import DimensionAgreement, RatingTable
from parley.resolvers.study_fields import (
    StudyFields,
    count_errors,
    gold_episodes,
    named_at,
    rubric,
)
from parley.resolvers.study_status import StudyRating, StudyStatus, study_status
from parley.storage.models import (
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
from parley.storage.records import storable
from parley.storage.studies import (
    StudyStore,
    slot,
)

STUDIES = newest_first("rating studies")
HUMANS = "humans"
"""What a study's evaluation records name as their judge (results grouped by judge show it)."""


CLOSED = "this study is closed: its ratings are kept, and no more are taken"


class Studies:
    """Rating studies over one Redis: making them, and what their researcher reads and does."""

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
        state = await self.store.state(str(study.pk))
        stored = await self.store.stored_episodes(study.episode_ids)
        gone = frozenset(n for n, pk in enumerate(study.episode_ids) if pk not in stored)
        return study_status(study, state, gone)

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
        never overwriting records of later ones); not again while nothing they are written
        from changed."""
        pk = str(study.pk)
        written, inputs = await self.store.results_inputs(pk)
        if written == inputs:
            return
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
        await self.store.write_human_results(pk, version, entries, inputs)

    async def agreement(self, study: RatingStudy) -> list[DimensionAgreement]:
        """How far the raters agree with each other and with the judge, per dimension of the
        rubric and overall, from the ratings saved so far (read and computed again only when a
        rating or a score changed: lifecycle/kept_figures.py)."""
        version = await self.store.agreement_version([str(study.pk)])

        async def read() -> list[RatingTable]:
            ratings = await self.ratings(study)
            episodes = await self.store.scored_episodes(study.episode_ids)
            return study_agreement.tables(study, ratings, episodes)

        compute = functools.partial(study_agreement.agreement, study)
        return await self.figures.of(f"study:{study.pk}", version, read, compute)


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
