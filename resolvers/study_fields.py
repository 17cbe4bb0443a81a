"""What a rating study must be made of, and what a rating must hold: the inputs, checked
against the stored world (the episodes, the rubric's dimension list) and against the rubric."""

from collections.abc import Sequence
from typing import Annotated

from pydantic import BaseModel, Field

from parley.core.errors import ErrorCode, UserError, not_found
from parley.core.limits import (
    LIST_MAX,
    NAME_MAX,
    STUDY_EPISODES_MAX,
    STUDY_GOLD_MAX,
    STUDY_RATERS_MAX,
    Name,
    RecordId,
    ShortText,
)
from parley.engine.types import SOTOPIA_DIMENSIONS, DimensionSpec
from parley.resolvers.dimensions import dimensions_of, get_dimension_list
from parley.storage.models import ExpectedScore, GoldEpisode

SCORES_MAX = 1_000
"""Scores one rating may send (every agent of an episode on every dimension)."""


class EpisodeChoice(BaseModel, extra="forbid"):
    """Which episodes a study rates: exactly one of the three."""

    ids: Annotated[list[RecordId], Field(max_length=STUDY_EPISODES_MAX)] | None = None
    experiment_id: RecordId | None = None
    tag: ShortText | None = None


class ExpectedFields(BaseModel, extra="forbid"):
    agent: Annotated[int, Field(ge=0)]
    dimension: Name
    score: Annotated[float, Field(allow_inf_nan=False)]


class GoldFields(BaseModel, extra="forbid"):
    episode_id: RecordId
    expected: Annotated[list[ExpectedFields], Field(min_length=1, max_length=LIST_MAX)]
    tolerance: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 1.0


class StudyFields(BaseModel, extra="forbid"):
    name: Name
    episodes: EpisodeChoice
    evaluation_dimension_list_id: RecordId | None = None
    raters: Annotated[int, Field(ge=1, le=STUDY_RATERS_MAX)]
    rater_names: Annotated[list[Name], Field(max_length=STUDY_RATERS_MAX)] = []
    raters_per_episode: Annotated[int, Field(ge=1, le=STUDY_RATERS_MAX)] = 1
    gold: Annotated[list[GoldFields], Field(max_length=STUDY_GOLD_MAX)] = []


Dimension = Annotated[str, Field(max_length=NAME_MAX)]


class ScoreFields(BaseModel, extra="forbid"):
    agent: Annotated[int, Field(ge=0)]
    dimension: Dimension
    score: int


class DraftScoreFields(BaseModel, extra="forbid"):
    agent: Annotated[int, Field(ge=0)]
    dimension: Dimension
    score: int | None = None


def score_errors(
    scores: Sequence[ScoreFields | DraftScoreFields],
    agents: int,
    rubric: Sequence[DimensionSpec],
    complete: bool,
) -> list[UserError]:
    """What is wrong with a rating's scores for an episode of `agents` agents: an agent or a
    dimension it does not have, a score off its dimension's range, a score given twice, and
    (when `complete`) a score missing."""
    ranges = {d.name: d for d in rubric}
    errors: list[UserError] = []
    seen: set[tuple[int, str]] = set()
    for i, given in enumerate(scores):
        at = ["input", "scores", str(i)]
        dimension = ranges.get(given.dimension)
        if given.agent >= agents:
            message = f"the episode has {agents} agents: there is no agent {given.agent + 1}"
            errors.append(UserError([*at, "agent"], message, ErrorCode.INVALID))
        elif dimension is None:
            message = f"the rubric has no dimension {given.dimension!r}"
            errors.append(UserError([*at, "dimension"], message, ErrorCode.INVALID))
        elif (given.agent, given.dimension) in seen:
            message = f"agent {given.agent + 1} is scored on {given.dimension} twice"
            errors.append(UserError(at, message, ErrorCode.INVALID))
        elif given.score is not None and not (
            dimension.range_low <= given.score <= dimension.range_high
        ):
            message = (
                f"{given.dimension} is scored from {dimension.range_low} to "
                f"{dimension.range_high}, not {given.score}"
            )
            errors.append(UserError([*at, "score"], message, ErrorCode.INVALID))
        seen.add((given.agent, given.dimension))
    if complete and not errors:
        missing = [(a, d.name) for a in range(agents) for d in rubric if (a, d.name) not in seen]
        errors += [
            UserError(["input", "scores"], f"agent {a + 1} has no score on {d}", ErrorCode.INVALID)
            for a, d in missing[:10]
        ]
    return errors


def named_at(pk: str, chosen: list[str], gold_ids: list[str]) -> list[str]:
    """The input field that named episode `pk`."""
    if pk in chosen:
        return ["input", "episodes"]
    return ["input", "gold", str(gold_ids.index(pk)), "episodeId"]


def count_errors(valid: StudyFields) -> list[UserError]:
    errors: list[UserError] = []
    if valid.raters_per_episode > valid.raters:
        message = (
            f"each episode cannot have {valid.raters_per_episode} raters when the study has "
            f"{valid.raters}"
        )
        errors.append(UserError(["input", "ratersPerEpisode"], message, ErrorCode.INVALID))
    if len(valid.rater_names) > valid.raters:
        message = f"{len(valid.rater_names)} names for {valid.raters} raters"
        errors.append(UserError(["input", "raterNames"], message, ErrorCode.INVALID))
    return errors


async def rubric(list_id: str | None) -> tuple[list[DimensionSpec], list[UserError]]:
    """The dimensions of the list (Sotopia's seven without one), as they are now."""
    if list_id is None:
        return list(SOTOPIA_DIMENSIONS), []
    record = await get_dimension_list(list_id)
    if record is None:
        return [], [not_found("evaluation dimension list", list_id, "evaluationDimensionListId")]
    dimensions = [DimensionSpec.model_validate(d.model_dump()) for d in await dimensions_of(record)]
    if not dimensions:
        message = f"evaluation dimension list {list_id!r} has no dimensions"
        return [], [UserError(["input", "evaluationDimensionListId"], message, ErrorCode.INVALID)]
    return dimensions, []


def gold_episodes(
    given: list[GoldFields],
    numbers: dict[str, int],
    agents: dict[str, int],
    rubric: list[DimensionSpec],
) -> tuple[list[GoldEpisode], list[UserError]]:
    """The gold episodes, each expected score naming an agent of its episode and a dimension of
    the rubric, within its range, once."""
    ranges = {d.name: d for d in rubric}
    errors: list[UserError] = []
    twice = sorted(
        {g.episode_id for g in given if [h.episode_id for h in given].count(g.episode_id) > 1}
    )
    if twice:
        message = f"episode {twice[0]!r} is a gold episode twice"
        return [], [UserError(["input", "gold"], message, ErrorCode.INVALID)]
    for i, one in enumerate(given):
        seen: set[tuple[int, str]] = set()
        for j, expected in enumerate(one.expected):
            at = ["input", "gold", str(i), "expected", str(j)]
            dimension = ranges.get(expected.dimension)
            where = (expected.agent, expected.dimension)
            if where in seen:
                message = f"agent {expected.agent + 1} is expected on {expected.dimension} twice"
                errors.append(UserError(at, message, ErrorCode.INVALID))
            seen.add(where)
            if expected.agent >= agents[one.episode_id]:
                message = f"episode {one.episode_id!r} has no agent {expected.agent + 1}"
                errors.append(UserError([*at, "agent"], message, ErrorCode.INVALID))
            elif dimension is None:
                message = f"the rubric has no dimension {expected.dimension!r}"
                errors.append(UserError([*at, "dimension"], message, ErrorCode.INVALID))
            elif not dimension.range_low <= expected.score <= dimension.range_high:
                message = (
                    f"{expected.dimension} is scored from {dimension.range_low} to "
                    f"{dimension.range_high}, not {expected.score:g}"
                )
                errors.append(UserError([*at, "score"], message, ErrorCode.INVALID))
    gold = [
        GoldEpisode(
            episode=numbers[g.episode_id],
            expected=[ExpectedScore(**e.model_dump()) for e in g.expected],
            tolerance=g.tolerance,
        )
        for g in given
    ]
    return gold, errors
