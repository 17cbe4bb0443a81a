"""Agreement between evaluations of chosen episodes (resolvers/evaluation_agreement.py), with
the arguments checked: the episodes named as a rating study names them (by ids, an experiment
or a tag), every one of them stored, and up to ten distinct evaluations that exist: the
episodes' own judgement, re-judgings and rating studies."""

import hashlib
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any

from pydantic import Field, ValidationError

from parley.core.errors import BadArgument, field_path, plain_problems
from parley.core.limits import AGREEMENT_EPISODES_MAX, AGREEMENT_EVALUATIONS_MAX, RecordId
from parley.lifecycle.episode_choice import chosen_episodes
from parley.lifecycle.evaluations import evaluation_study
from parley.lifecycle.studies import Studies
from parley.resolvers import evaluation_agreement
from parley.resolvers.evaluation_agreement import (
    EvaluationDimension,
    EvaluationId,
    EvaluationTable,
)
from parley.resolvers.human_scores import human_evaluations
from parley.resolvers.study_fields import EpisodeChoice
from parley.storage.studies import ScoredEpisode, StudyStore


class AgreementChoice(EpisodeChoice):
    """As a study's choice of episodes, with more of them."""

    ids: Annotated[list[RecordId], Field(max_length=AGREEMENT_EPISODES_MAX)] | None = None


async def evaluation_agreement_of(
    studies: Studies, episodes: dict[str, Any], evaluations: Sequence[EvaluationId]
) -> list[EvaluationDimension]:
    """The figures, per dimension and overall; BadArgument says what is wrong with the
    arguments (an episode chosen that is not stored among them). A rating study's evaluation is
    its raters' means, each rater a run."""
    return await _agreement_of(studies, episodes, evaluations, _all_stored)


async def stored_evaluation_agreement_of(
    studies: Studies, episode_ids: list[str], evaluations: Sequence[EvaluationId]
) -> list[EvaluationDimension]:
    """As `evaluation_agreement_of` over those of `episode_ids` still stored (a study's
    episodes, some deleted since it was made)."""
    return await _agreement_of(studies, {"ids": episode_ids}, evaluations, _stored)


def _all_stored(ids: list[str], scored: Mapping[str, ScoredEpisode]) -> list[str]:
    missing = [pk for pk in ids if pk not in scored]
    if missing:
        raise BadArgument(f"no episode with id {missing[0]!r}")
    return ids


def _stored(ids: list[str], scored: Mapping[str, ScoredEpisode]) -> list[str]:
    return [pk for pk in ids if pk in scored]


async def _agreement_of(
    studies: Studies,
    episodes: dict[str, Any],
    evaluations: Sequence[EvaluationId],
    kept: Callable[[list[str], Mapping[str, ScoredEpisode]], list[str]],
) -> list[EvaluationDimension]:
    """The figures over the episodes of `episodes` that `kept` keeps of those stored; read and
    computed again only when a score, a rating or the episodes chosen may have changed
    (lifecycle/kept_figures.py)."""
    client = studies.client
    if not 1 <= len(evaluations) <= AGREEMENT_EVALUATIONS_MAX:
        raise BadArgument(f"name 1 to {AGREEMENT_EVALUATIONS_MAX} evaluations")
    if len(set(evaluations)) != len(evaluations):
        raise BadArgument("an evaluation is named twice")
    found = [await evaluation_study(studies, evaluation) for evaluation in evaluations]
    rated = [study for study in found if study is not None]
    try:
        choice = AgreementChoice(**episodes)
    except ValidationError as err:
        where, message = plain_problems(err)[0]
        raise BadArgument(f"{'.'.join(field_path(['episodes'], where))}: {message}") from None
    store = StudyStore(client)
    version = await store.agreement_version([str(study.pk) for study in rated])
    seed = ""

    async def read() -> list[EvaluationTable]:
        nonlocal seed
        ids, errors = await chosen_episodes(client, choice, AGREEMENT_EPISODES_MAX)
        if errors:
            raise BadArgument(errors[0].message)
        scored = await store.scored_episodes(ids)
        ids = kept(ids, scored)
        for study in rated:
            by_episode = human_evaluations(str(study.pk), await studies.ratings(study))
            for pk, episode in scored.items():
                if pk in by_episode:
                    episode.evaluations = [*episode.evaluations, by_episode[pk]]
        seed = "evaluations:" + hashlib.sha256(repr((ids, list(evaluations))).encode()).hexdigest()
        return evaluation_agreement.tables(evaluations, scored)

    def compute(table: EvaluationTable) -> EvaluationDimension:
        return evaluation_agreement.agreement(seed, evaluations, table)

    asked = repr((kept.__name__, choice.model_dump(), list(evaluations)))
    key = "evaluations:" + hashlib.sha256(asked.encode()).hexdigest()
    return await studies.figures.of(key, version, read, compute)
