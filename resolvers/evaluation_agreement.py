"""How far evaluations of the same episodes agree, per dimension and overall: the judge runs of
each evaluation's panel with each other, and every two evaluations with each other.

An evaluation is the episodes' own judgement (`None`) or a re-judging (its id). A unit is one
agent of one episode; an evaluation's score of a unit is its aggregate (an episode's `rewards`,
a re-judging's entry), None where it gave none. A panel of more than one judge run that gave
scores is compared run by run (`model#repeat`, as a study names them), like raters. Two
evaluations are compared over the units both scored (Pearson, Spearman, and Kendall's tau
between the rankings of the models they give).
"""

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

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
from parley.resolvers.study_agreement import (
    Rewards,
    UnitTable,
    model_of,
    panel_runs,
    run_rewards,
    score_of,
    seeded,
)
from parley.storage.studies import ScoredEpisode

EvaluationId = str | None
"""A re-judging's id, or None for the episodes' own judgement."""


@dataclass(frozen=True)
class EvaluationTable(UnitTable):
    """One dimension's scores of the chosen episodes' units, by evaluation and panel run."""

    scores: list[list[float | None]]
    """By evaluation, in the order asked: its score of each unit."""
    runs: list[dict[str, list[float | None]]]
    """By evaluation: each run of its panel (of more than one run), its score of each unit."""


@dataclass(frozen=True)
class PanelAgreement:
    evaluation: EvaluationId
    runs: list[str]
    alpha: Agreement
    icc: Icc


@dataclass(frozen=True)
class PairAgreement:
    first: EvaluationId
    second: EvaluationId
    pearson: Agreement
    spearman: Agreement
    ranking: Ranking
    """`first` is the first evaluation's mean of each model, `second` the second's."""


@dataclass(frozen=True)
class EvaluationDimension:
    dimension: str
    units: int
    panels: list[PanelAgreement]
    pairs: list[PairAgreement]


def tables(
    evaluations: Sequence[EvaluationId], episodes: Mapping[str, ScoredEpisode]
) -> list[EvaluationTable]:
    """A table per dimension any of the evaluations scored (in the order first met), then one
    of the overall score."""
    units = [(pk, agent) for pk, e in episodes.items() for agent in range(len(e.agents))]
    judged = {
        pk: [_judgement(episode, evaluation) for evaluation in evaluations]
        for pk, episode in episodes.items()
    }
    names: dict[str, None] = {}
    for found in judged.values():
        for rewards, panel in found:
            for reward in (*rewards, *(r for run in panel for r in run.rewards)):
                if not isinstance(reward, float | int):
                    names.update((name, None) for name in reward[1] if name != OVERALL_SCORE)
    models = [model_of(episodes[pk], agent) for pk, agent in units]
    made = []
    for dimension in [*names, OVERALL_SCORE]:
        scores = [
            [score_of(judged[pk][n][0], agent, dimension) for pk, agent in units]
            for n in range(len(evaluations))
        ]
        runs = [
            {
                name: [
                    score_of(run_rewards(judged[pk][n][1], name), a, dimension) for pk, a in units
                ]
                for name in panel_runs(found[n][1] for found in judged.values())
            }
            for n in range(len(evaluations))
        ]
        made.append(EvaluationTable(dimension, units, models, scores, runs))
    return made


def agreement(
    key: str, evaluations: Sequence[EvaluationId], table: EvaluationTable
) -> EvaluationDimension:
    """Every figure of one table; `key` seeds the bootstraps (the same tables and key give the
    same intervals)."""
    episodes = [pk for pk, _ in table.units]
    panels = []
    for evaluation, runs in zip(evaluations, table.runs, strict=True):
        if runs:
            rows = [list(row) for row in zip(*runs.values(), strict=True)]
            rng = seeded(key, table.dimension, "alpha", str(evaluation))
            panels.append(PanelAgreement(evaluation, list(runs), alpha(rows, rng=rng), icc(rows)))
    pairs = []
    for (i, first), (j, second) in itertools.combinations(enumerate(evaluations), 2):
        x, y = table.scores[i], table.scores[j]
        rng = seeded(key, table.dimension, "ranking", str(first), str(second))
        pairs.append(
            PairAgreement(
                first,
                second,
                pearson(x, y),
                spearman(x, y),
                ranking(x, y, table.models, episodes, rng=rng),
            )
        )
    return EvaluationDimension(table.dimension, len(table.units), panels, pairs)


def _judgement(episode: ScoredEpisode, evaluation: EvaluationId) -> tuple[Rewards, list[JudgeRun]]:
    """An evaluation's scores of an episode and its panel's runs (none where it has not judged
    the episode)."""
    if evaluation is None:
        return episode.rewards, episode.judge_runs
    for entry in episode.evaluations:
        if entry.id == evaluation:
            return entry.rewards, entry.judge_runs
    return [], []
