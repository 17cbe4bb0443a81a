"""Agreement between evaluations of chosen episodes (resolvers/evaluation_agreement.py), with
the arguments checked: the episodes named as a rating study names them (by ids, an experiment
or a tag), every one of them stored, and up to ten distinct evaluations that exist: the
episodes' own judgement, re-judgings and rating studies."""

import functools
import hashlib
from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import Field, ValidationError

from parley.core.errors import BadArgument, field_path, plain_problems
from parley.core.limits import AGREEMENT_EPISODES_MAX, AGREEMENT_EVALUATIONS_MAX, RecordId
from parley.lifecycle.episode_choice import chosen_episodes
from parley.lifecycle.evaluations import evaluation_study
from parley.lifecycle.studies import Studies
from parley.resolvers import evaluation_agreement
from parley.resolvers.evaluation_agreement import EvaluationDimension, EvaluationId
from parley.resolvers.human_scores import human_evaluations
from parley.resolvers.study_fields import EpisodeChoice
from parley.storage.studies import StudyStore


class AgreementChoice(EpisodeChoice):
    """As a study's choice of episodes, with more of them."""

    ids: Annotated[list[RecordId], Field(max_length=AGREEMENT_EPISODES_MAX)] | None = None


async def evaluation_agreement_of(
    studies: Studies,
    episodes: dict[str, Any],
    evaluations: Sequence[EvaluationId],
    stored_only: bool = False,
) -> list[EvaluationDimension]:
    """The figures, per dimension and overall; BadArgument says what is wrong with the
    arguments. A rating study's evaluation is its raters' means, each rater a run. With
    `stored_only`, episodes no longer stored are left out instead of refused (a study's
    episodes deleted since it was made)."""
    client = studies.client
    if not 1 <= len(evaluations) <= AGREEMENT_EVALUATIONS_MAX:
        raise BadArgument(f"name 1 to {AGREEMENT_EVALUATIONS_MAX} evaluations")
    if len(set(evaluations)) != len(evaluations):
        raise BadArgument("an evaluation is named twice")
    rated = {}
    for evaluation in evaluations:
        study = await evaluation_study(studies, evaluation)
        if study is not None:
            rated[str(study.pk)] = human_evaluations(str(study.pk), await studies.ratings(study))
    try:
        choice = AgreementChoice(**episodes)
    except ValidationError as err:
        where, message = plain_problems(err)[0]
        raise BadArgument(f"{'.'.join(field_path(['episodes'], where))}: {message}") from None
    ids, errors = await chosen_episodes(client, choice, AGREEMENT_EPISODES_MAX)
    if errors:
        raise BadArgument(errors[0].message)
    scored = await StudyStore(client).scored_episodes(ids)
    missing = [pk for pk in ids if pk not in scored]
    if stored_only:
        ids = [pk for pk in ids if pk in scored]
    elif missing:
        raise BadArgument(f"no episode with id {missing[0]!r}")
    for by_episode in rated.values():
        for pk, episode in scored.items():
            if pk in by_episode:
                episode.evaluations = [*episode.evaluations, by_episode[pk]]
    tables = evaluation_agreement.tables(evaluations, scored)
    key = "evaluations:" + hashlib.sha256(repr((ids, list(evaluations))).encode()).hexdigest()
    compute = functools.partial(evaluation_agreement.agreement, key, evaluations)
    return await studies.figures.of(key, tables, compute)
