"""How far a study's raters agree with each other and with the judge, per dimension of its
rubric and overall.

A dimension's table has a row per unit, one agent of one study episode, and a column per
rater who has saved a rating (None where they gave that unit no score). The same units are
scored by the episode's judge (its `rewards`) and, once some episode's judge was a panel of
more than one run, by each judge run that gave scores, named `model#repeat` (the same name in
every episode judged by that model). The judges are compared
with the raters' mean score of each unit; the models (the agents' models, `models[1:]` of
an episode as Sotopia stores them) are ranked by both.

Bootstrap intervals are drawn from a generator seeded by the study id, the dimension and the
figure, so the same ratings give the same intervals every time.
"""

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from parley.engine.types import OVERALL_SCORE, JudgeRun
from parley.resolvers.agreement import (
    Agreement,
    Icc,
    Ranking,
    alpha,
    icc,
    pearson,
    ranking,
    spearman,
)
from parley.resolvers.study_status import StudyRating
from parley.storage.models import RatingStudy
from parley.storage.studies import ScoredEpisode

JUDGE = "judge"
"""The name of the episodes' own judge (their `rewards`) among the sources compared."""

PLACES = 12
"""The decimals a mean of scores is rounded to."""

Rewards = Sequence[tuple[float, dict[str, float]] | float]


@dataclass(frozen=True)
class UnitTable:
    """One dimension's units: an agent of an episode each, with the model that played it."""

    dimension: str
    units: list[tuple[str, int]]
    """(episode id, agent) of each row."""
    models: list[str]
    """The model that played each unit's agent ("" when the episode does not say)."""


@dataclass(frozen=True)
class RatingTable(UnitTable):
    """One dimension's scores of a study's units, by every source."""

    raters: list[int]
    """The study's raters, one per column of `humans`."""
    humans: list[list[float | None]]
    judges: dict[str, list[float | None]]
    """By judge: its score of each unit."""

    def human_mean(self) -> list[float | None]:
        """The raters' mean score of each unit (None where none scored it), to `PLACES`
        decimals: a rating's overall score is itself a rounded mean, and units whose means are
        equal must tie in a ranking, not be ordered by rounding error."""
        return [mean_of([s for s in row if s is not None]) for row in self.humans]


@dataclass(frozen=True)
class JudgeVsHumans:
    judge: str
    pearson: Agreement
    spearman: Agreement


@dataclass(frozen=True)
class JudgeRanking:
    judge: str
    ranking: Ranking
    """`first` is the raters' mean of each model, `second` the judge's."""


@dataclass(frozen=True)
class DimensionAgreement:
    dimension: str
    alpha: Agreement
    icc: Icc
    judges: list[JudgeVsHumans]
    rankings: list[JudgeRanking]


def tables(
    study: RatingStudy, ratings: Sequence[StudyRating], episodes: Mapping[str, ScoredEpisode]
) -> list[RatingTable]:
    """A table per dimension of the rubric, then one of the overall score."""
    units = [
        (pk, agent)
        for pk in dict.fromkeys(study.episode_ids)
        if pk in episodes
        for agent in range(len(episodes[pk].agents))
    ]
    raters = sorted({r.rater for r in ratings})
    column = {rater: n for n, rater in enumerate(raters)}
    rows: dict[str, list[int]] = {}
    for row, (pk, _) in enumerate(units):
        rows.setdefault(pk, []).append(row)
    runs = panel_runs(e.judge_runs for e in episodes.values())
    found = []
    for dimension in [*(d.name for d in study.rubric), OVERALL_SCORE]:
        humans: list[list[float | None]] = [[None] * len(raters) for _ in units]
        for rating in ratings:
            for row in rows.get(rating.episode_id, []):
                score = score_of(rating.annotation.rewards, units[row][1], dimension)
                humans[row][column[rating.rater]] = score
        judges = {JUDGE: [score_of(episodes[pk].rewards, a, dimension) for pk, a in units]}
        for name in runs:
            judges[name] = [
                score_of(run_rewards(episodes[pk].judge_runs, name), a, dimension)
                for pk, a in units
            ]
        models = [model_of(episodes[pk], agent) for pk, agent in units]
        found.append(RatingTable(dimension, units, models, raters, humans, judges))
    return found


def agreement(study: RatingStudy, table: RatingTable) -> DimensionAgreement:
    """Every figure of one table."""
    study_id = str(study.pk)
    mean = table.human_mean()
    episodes = [pk for pk, _ in table.units]
    return DimensionAgreement(
        dimension=table.dimension,
        alpha=alpha(table.humans, rng=seeded(study_id, table.dimension, "alpha")),
        icc=icc(table.humans),
        judges=[
            JudgeVsHumans(judge, pearson(mean, scores), spearman(mean, scores))
            for judge, scores in table.judges.items()
        ],
        rankings=[
            JudgeRanking(
                judge,
                ranking(
                    mean,
                    scores,
                    table.models,
                    episodes,
                    rng=seeded(study_id, table.dimension, "ranking", judge),
                ),
            )
            for judge, scores in table.judges.items()
        ],
    )


def seeded(*parts: str) -> np.random.Generator:
    """A generator whose seed is a hash of `parts`."""
    digest = hashlib.sha256("\x00".join(parts).encode("utf-8")).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "big"))


def score_of(rewards: Rewards, agent: int, dimension: str) -> float | None:
    """An agent's score on a dimension; None where there is none (a bare number is Sotopia's
    reward of a judge that gave no scores)."""
    reward = rewards[agent] if agent < len(rewards) else None
    if reward is None or isinstance(reward, float | int):
        return None
    score = reward[1].get(dimension)
    if score is None and dimension == OVERALL_SCORE:
        return float(reward[0])
    return None if score is None else float(score)


def panel_runs(judgements: Iterable[Sequence[JudgeRun]]) -> list[str]:
    """The runs of the panels (of more than one run that gave scores) among `judgements`."""
    names: dict[str, None] = {}
    for runs in judgements:
        counted = [run for run in runs if run.counted]
        if len(counted) > 1:
            names.update((run_name(run.model, run.repeat), None) for run in counted)
    return list(names)


def run_name(model: str, repeat: int) -> str:
    return f"{model}#{repeat}"


def run_rewards(runs: Sequence[JudgeRun], name: str) -> Rewards:
    """The scores of the run `name` among `runs` (none if it gave none)."""
    for run in runs:
        if run.counted and run_name(run.model, run.repeat) == name:
            return run.rewards
    return []


def model_of(episode: ScoredEpisode, agent: int) -> str:
    """The model that played an agent (\"\" when the episode does not say)."""
    models = episode.models or []
    return models[agent + 1] if agent + 1 < len(models) else ""


def mean_of(scores: Sequence[float]) -> float | None:
    """The mean, to `PLACES` decimals (None of no scores)."""
    return round(math.fsum(scores) / len(scores), PLACES) if scores else None
