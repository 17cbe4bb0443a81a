"""GraphQL types and root fields of grouped results (resolvers/results.py computes them)."""

from collections.abc import Sequence
from typing import Annotated, Any

import strawberry

from parley.core.errors import BadArgument
from parley.graph.context import Info
from parley.graph.evaluation_agreement import EvaluationAgreement
from parley.graph.fields import copied, shows, stored
from parley.lifecycle.evaluation_agreement import stored_evaluation_agreement_of
from parley.lifecycle.evaluations import readable
from parley.resolvers.results import Group, GroupBy, Results, ResultsFilter
from parley.resolvers.statistics import Interval, Paired, Summary

strawberry.enum(
    GroupBy,
    name="ResultsGroupBy",
    description=(
        "What results are grouped by. MODEL and AGENT are those of the seat a score is for, "
        "PARTNER_MODEL the other seat's."
    ),
)

EVALUATION = (
    "Which judgement to use: a re-judging's id, a rating study's id (its raters' mean scores), "
    "or null for the episodes' own rewards."
)


@strawberry.input(description="Which scores enter the results (all given must match).")
class EpisodeResultsFilter:
    experiment_id: strawberry.ID | None = strawberry.field(
        default=None, description="Episodes of this experiment."
    )
    tag: str | None = strawberry.field(
        default=None, description="Episodes with exactly this tag (letter case counts)."
    )
    model: str | None = strawberry.field(
        default=None, description="The model in the seat a score is for."
    )
    partner_model: str | None = strawberry.field(
        default=None, description="The model in the other seat."
    )
    scenario_id: strawberry.ID | None = strawberry.field(
        default=None, description="Episodes of this scenario."
    )
    agent_id: strawberry.ID | None = strawberry.field(
        default=None, description="The agent in the seat a score is for."
    )
    judge_model: str | None = strawberry.field(
        default=None, description="Episodes this model judged (the episode's own judge)."
    )
    seat: int | None = strawberry.field(default=None, description="0 or 1.")
    arm: str | None = strawberry.field(
        default=None,
        description="Episodes of this arm of an experiment with arms: `control` for its slots' "
        "own episodes, else an intervention's name.",
    )

    def plain(self) -> ResultsFilter:
        return ResultsFilter(
            experiment_id=self.experiment_id,
            tag=self.tag,
            model=(self.model,) if self.model else (),
            partner_model=self.partner_model,
            scenario_id=self.scenario_id,
            agent_id=self.agent_id,
            judge_model=self.judge_model,
            seat=self.seat,
            arm=self.arm,
        )


@strawberry.type(description="A 95% interval from Student's t distribution.")
class ConfidenceInterval:
    low: float = strawberry.field(description="The lower bound.")
    high: float = strawberry.field(description="The upper bound.")
    margin: float = strawberry.field(description="Half the width: the interval is mean ± margin.")
    degrees_of_freedom: int = strawberry.field(description="Of the t distribution used.")

    @classmethod
    def of(cls, interval: Interval | None) -> "ConfidenceInterval | None":
        return None if interval is None else copied(cls, interval)


@strawberry.type(description="The scores of one dimension in one group.")
class DimensionResult:
    dimension: str = strawberry.field(
        description="The dimension's name; `overall` is each seat's overall score."
    )
    count: int = strawberry.field(description="Scores: one per episode and seat.")
    mean: float = strawberry.field(description="The mean of the scores.")
    sd: float | None = strawberry.field(
        description="Sample standard deviation (n - 1); null below two scores."
    )
    confidence_interval: ConfidenceInterval | None = strawberry.field(
        description="mean ± t(0.975, n - 1) * sd / √n; null below two scores."
    )
    sotopia_margin: float | None = strawberry.field(
        description=(
            "The margin `sotopia benchmark` prints after ±: t(0.975, n) * √(v / n), v the mean "
            "of the sample variances of each (scenario, seat) cell (0 for a cell of one score); "
            "its t quantile exact here, where Sotopia samples it."
        )
    )
    settings: int = strawberry.field(
        description="(scenario, seat) cells the scores fall in (Sotopia's setting_num)."
    )

    @classmethod
    def of(cls, name: str, summary: Summary) -> "DimensionResult":
        return cls(
            dimension=name,
            count=summary.count,
            mean=summary.mean,
            sd=summary.sd,
            confidence_interval=ConfidenceInterval.of(summary.interval),
            sotopia_margin=summary.sotopia_margin,
            settings=summary.cells or 0,
        )


def _key(key: GroupBy, description: str, returns: Any = str) -> Any:
    """The field of a group's `key` value, as `returns` (text, or an id); null when not grouped
    by it."""

    def read(root: Any) -> Any:
        value = root.group.key.get(key)
        return None if value is None else returns(str(value))

    read.__annotations__ = {"root": Any, "return": returns | None}
    return strawberry.field(resolver=read, description=description)


@strawberry.type(
    description=(
        "The scores of one group. Its key fields are set for the keys grouped by, null for "
        "the others. Counts are of episode seats, like the scores."
    )
)
@shows(Group, held_as="group")
class ResultGroup:
    group: strawberry.Private[Group]

    model = _key(GroupBy.MODEL, "The seat's model.")
    partner_model = _key(GroupBy.PARTNER_MODEL, "The other seat's model.")

    @strawberry.field(description="The seat, 0 or 1.")
    def seat(self) -> int | None:
        value = self.group.key.get(GroupBy.SEAT)
        return value if isinstance(value, int) else None

    scenario_id = _key(GroupBy.SCENARIO, "The scenario.", strawberry.ID)
    agent_id = _key(GroupBy.AGENT, "The seat's agent.", strawberry.ID)
    tag = _key(GroupBy.TAG, "The episodes' tag.")
    experiment_id = _key(GroupBy.EXPERIMENT, "The experiment.", strawberry.ID)
    judge_model = _key(GroupBy.JUDGE_MODEL, "The judge.")

    scored = stored(
        "Seat scores in the means: one per seat in the group, so an episode with both seats in "
        "it (a model against itself) gives two."
    )
    failed = stored(
        "FAILED episodes (or failed re-judgements) with a seat in the group, each counted once: "
        "not in the means."
    )
    cancelled = stored("CANCELLED episodes, each counted once: not in the means.")
    unfinished = stored("Episodes (or re-judgements) not finished yet, each counted once.")
    unscored = stored(
        "Finished episodes whose judge gave no scores for their seats in the group (Sotopia's "
        "0.0 reward), each counted once."
    )

    @strawberry.field(description="Per dimension, `overall` first.")
    def dimensions(self) -> list[DimensionResult]:
        return [DimensionResult.of(name, s) for name, s in self.group.summaries()]


@strawberry.type(description="Grouped statistics of episode scores.")
class EpisodeResults:
    evaluation: strawberry.ID | None = strawberry.field(description=EVALUATION)
    groups: list[ResultGroup] = strawberry.field(description="One per distinct key, sorted.")

    @strawberry.field(
        description="How far this evaluation agrees with a rating study's raters, over the "
        "study's episodes, per dimension: the pair of evaluationAgreement(episodes: the "
        "study's, evaluations: [this evaluation, the study]), and the raters as a panel."
    )
    async def human_agreement(
        self, info: Info, study_id: strawberry.ID
    ) -> list[EvaluationAgreement]:
        studies = info.context.services.studies
        study = await studies.get(str(study_id))
        if study is None:
            raise BadArgument(f"no rating study with id {str(study_id)!r}")
        evaluations = [None if self.evaluation is None else str(self.evaluation), str(study_id)]
        found = await stored_evaluation_agreement_of(studies, study.episode_ids, evaluations)
        return [EvaluationAgreement.of(dimension) for dimension in found]


@strawberry.type(description="Model A's mean minus model B's on one dimension, paired.")
class PairedDifference:
    dimension: str = strawberry.field(description="The dimension's name, or `overall`.")
    pairs: int = strawberry.field(
        description="(scenario, seat, partner model) cells where both models have scores."
    )
    mean_difference: float = strawberry.field(
        description="The mean over those cells of A's mean minus B's mean."
    )
    sd: float | None = strawberry.field(
        description="Sample standard deviation of the differences; null below two pairs."
    )
    confidence_interval: ConfidenceInterval | None = strawberry.field(
        description="mean difference ± t(0.975, pairs - 1) * sd / √pairs; null below two pairs."
    )

    @classmethod
    def of(cls, name: str, result: Paired) -> "PairedDifference":
        return cls(
            dimension=name,
            pairs=result.pairs,
            mean_difference=result.mean_difference,
            sd=result.sd,
            confidence_interval=ConfidenceInterval.of(result.interval),
        )


@strawberry.type(description="Two models compared over the same scenarios, seats and partners.")
class ModelComparison:
    model_a: str = strawberry.field(description="The first model (the minuend).")
    model_b: str = strawberry.field(description="The second model.")
    evaluation: strawberry.ID | None = strawberry.field(description=EVALUATION)
    dimensions: list[PairedDifference] = strawberry.field(description="`overall` first.")


PER_CELL = frozenset({"sotopiaMargin", "settings"})
"""Fields that need the scores per (scenario, seat): asked for, Redis groups by scenario too."""


def asks(selections: Sequence[Any], names: frozenset[str]) -> bool:
    """Whether any of `names` is selected anywhere below (fragments included)."""
    for selection in selections:
        if getattr(selection, "name", None) in names:
            return True
        if asks(getattr(selection, "selections", None) or [], names):
            return True
    return False


@strawberry.type
class ResultsQuery:
    @strawberry.field(
        description=(
            "Count, mean, standard deviation and 95% intervals of the scores, per group and "
            "dimension, computed in Redis. Failed, cancelled, unfinished and unscored episodes "
            "are counted apart, never averaged."
        )
    )
    async def episode_results(
        self,
        info: Info,
        filter: EpisodeResultsFilter | None = None,
        group_by: list[GroupBy] | None = None,
        evaluation: Annotated[
            strawberry.ID | None, strawberry.argument(description=EVALUATION)
        ] = None,
    ) -> EpisodeResults:
        client = info.context.services.client
        await readable(info.context.services.studies, evaluation)
        f = (filter or EpisodeResultsFilter()).plain()
        keys = [GroupBy.MODEL] if group_by is None else group_by
        per_cell = asks(info.selected_fields, PER_CELL)
        groups = await Results(client, evaluation).groups(f, keys, per_cell=per_cell)
        return EpisodeResults(evaluation=evaluation, groups=[ResultGroup(group=g) for g in groups])

    @strawberry.field(
        description=(
            "Model A against model B, paired over (scenario, seat, partner model): the mean "
            "difference per dimension with its 95% interval."
        )
    )
    async def model_comparison(
        self,
        info: Info,
        model_a: str,
        model_b: str,
        filter: EpisodeResultsFilter | None = None,
        evaluation: Annotated[
            strawberry.ID | None, strawberry.argument(description=EVALUATION)
        ] = None,
    ) -> ModelComparison:
        client = info.context.services.client
        await readable(info.context.services.studies, evaluation)
        f = (filter or EpisodeResultsFilter()).plain()
        compared = await Results(client, evaluation).compare(f, model_a, model_b)
        return ModelComparison(
            model_a=model_a,
            model_b=model_b,
            evaluation=evaluation,
            dimensions=[PairedDifference.of(name, p) for name, p in compared],
        )
