"""Agreement between evaluations of chosen episodes (resolvers/evaluation_agreement.py), with
the arguments checked: the episodes named as a rating study names them (by ids, an experiment
or a tag), every one of them stored, and up to ten distinct evaluations that exist."""

import functools
import hashlib
from collections.abc import Sequence
from typing import Annotated, Any

import redis.asyncio as redis
from pydantic import Field, ValidationError

from parley.core.errors import BadArgument, field_path, plain_problems
from parley.core.limits import AGREEMENT_EPISODES_MAX, AGREEMENT_EVALUATIONS_MAX, RecordId
from parley.lifecycle.episode_choice import chosen_episodes
from parley.lifecycle.kept_figures import KeptFigures
from parley.resolvers import evaluation_agreement, rejudging
from parley.resolvers.evaluation_agreement import EvaluationDimension, EvaluationId
from parley.resolvers.study_fields import EpisodeChoice
from parley.storage.studies import StudyStore


class AgreementChoice(EpisodeChoice):
    """As a study's choice of episodes, with more of them."""

    ids: Annotated[list[RecordId], Field(max_length=AGREEMENT_EPISODES_MAX)] | None = None


async def evaluation_agreement_of(
    client: redis.Redis,
    figures: KeptFigures,
    episodes: dict[str, Any],
    evaluations: Sequence[EvaluationId],
) -> list[EvaluationDimension]:
    """The figures, per dimension and overall; BadArgument says what is wrong with the
    arguments."""
    if not 1 <= len(evaluations) <= AGREEMENT_EVALUATIONS_MAX:
        raise BadArgument(f"name 1 to {AGREEMENT_EVALUATIONS_MAX} evaluations")
    if len(set(evaluations)) != len(evaluations):
        raise BadArgument("an evaluation is named twice")
    for evaluation in evaluations:
        await rejudging.check_exists(client, evaluation)
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
    if missing:
        raise BadArgument(f"no episode with id {missing[0]!r}")
    tables = evaluation_agreement.tables(evaluations, scored)
    key = "evaluations:" + hashlib.sha256(repr((ids, list(evaluations))).encode()).hexdigest()
    compute = functools.partial(evaluation_agreement.agreement, key, evaluations)
    return await figures.of(key, tables, compute)
