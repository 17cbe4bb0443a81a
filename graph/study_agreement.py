"""A rating study's agreement statistics over GraphQL (computed by resolvers/study_agreement.py):
one `Estimate` shape for every figure, with the units it rests on, its 95% interval and why
either is missing."""

from collections.abc import Callable

import strawberry

from parley.resolvers import agreement as figures
from parley.resolvers import study_agreement as computed

strawberry.enum(
    figures.Reason,
    name="EstimateReason",
    description="Why an estimate or its interval is null.",
)


@strawberry.type(description="A statistic with its 95% interval.")
class Estimate:
    n: int = strawberry.field(description="The units it rests on.")
    estimate: float | None = strawberry.field(description="Null: see reason.")
    low: float | None = strawberry.field(description="The interval's low end; null: see reason.")
    high: float | None = strawberry.field(description="The interval's high end.")
    resamples: int | None = strawberry.field(
        description="The bootstrap resamples the interval rests on; null for a closed form."
    )
    reason: figures.Reason | None = strawberry.field(
        description="Why the estimate or the interval is null; null when neither is."
    )

    @classmethod
    def of(cls, figure: figures.Agreement) -> "Estimate":
        bounds = figure.interval
        return cls(
            n=figure.n,
            estimate=figure.estimate,
            low=None if bounds is None else bounds.low,
            high=None if bounds is None else bounds.high,
            resamples=None if bounds is None else bounds.resamples,
            reason=figure.reason,
        )


@strawberry.type(description="How far the raters agree with each other on one dimension.")
class RaterAgreement:
    raters: int = strawberry.field(description="Raters who have saved a rating.")
    alpha: Estimate = strawberry.field(
        description="Krippendorff's alpha (interval data) over the units with two scores or "
        "more; bootstrap interval over units."
    )
    icc1: Estimate = strawberry.field(
        description="ICC(2,1), two-way random, absolute agreement: how far one rater's score "
        "can be trusted; over the units every rater scored; F-based interval."
    )
    icck: Estimate = strawberry.field(
        description="ICC(2,k): how far the mean of the k raters' scores can be trusted."
    )
    icc_dropped: int = strawberry.field(
        description="Units left out of the ICC because a rater did not score them."
    )

    @classmethod
    def of(cls, alpha: figures.Agreement, icc: figures.Icc) -> "RaterAgreement":
        return cls(
            raters=icc.raters,
            alpha=Estimate.of(alpha),
            icc1=Estimate.of(icc.single),
            icck=Estimate.of(icc.average),
            icc_dropped=icc.dropped,
        )


@strawberry.type(description="A judge's scores against the raters' mean score of each unit.")
class JudgeVsHumans:
    judge: str = strawberry.field(
        description="`judge`: the episodes' own scores; else one run of a judge panel, "
        "`model#repeat`."
    )
    pearson: Estimate = strawberry.field(description="Pearson's r; Fisher z interval.")
    spearman: Estimate = strawberry.field(description="Spearman's rho; Fisher z interval.")


@strawberry.type(description="A model's mean score from the raters and from a judge.")
class ModelMeans:
    model: str = strawberry.field(description="The model that played the agents.")
    human_mean: float = strawberry.field(description="Its mean of the raters' mean scores.")
    judge_mean: float = strawberry.field(description="Its mean of the judge's scores.")


def model_means[M](ranking: figures.Ranking, means: Callable[[str, float, float], M]) -> list[M]:
    """Each model a ranking compares, with its means from the two sources (`means(model, first,
    second)` makes the GraphQL object: ModelMeans, PairModelMeans)."""
    return [
        means(model, first, second)
        for model, first, second in zip(ranking.models, ranking.first, ranking.second, strict=True)
    ]


@strawberry.type(description="How far a judge ranks the models as the raters do.")
class ModelRanking:
    judge: str = strawberry.field(description="As in JudgeVsHumans.")
    tau: Estimate = strawberry.field(
        description="Kendall's tau-b between the two rankings of the models by mean score, "
        "over the units both scored; bootstrap interval over episodes."
    )
    models: list[ModelMeans] = strawberry.field(description="Each model's means.")


@strawberry.type(description="Agreement on one dimension of the rubric, or on the overall score.")
class DimensionAgreement:
    dimension: str = strawberry.field(
        description="A dimension of the rubric, or `overall_score` (each rating's mean)."
    )
    humans: RaterAgreement = strawberry.field(description="Between the raters.")
    judge_vs_humans: list[JudgeVsHumans] = strawberry.field(
        description="Each judge against the raters."
    )
    rankings: list[ModelRanking] = strawberry.field(
        description="Each judge's ranking of the models against the raters'."
    )

    @classmethod
    def of(cls, found: computed.DimensionAgreement) -> "DimensionAgreement":
        return cls(
            dimension=found.dimension,
            humans=RaterAgreement.of(found.alpha, found.icc),
            judge_vs_humans=[
                JudgeVsHumans(
                    judge=j.judge, pearson=Estimate.of(j.pearson), spearman=Estimate.of(j.spearman)
                )
                for j in found.judges
            ],
            rankings=[
                ModelRanking(
                    judge=r.judge,
                    tau=Estimate.of(r.ranking.tau),
                    models=model_means(
                        r.ranking, lambda m, h, j: ModelMeans(model=m, human_mean=h, judge_mean=j)
                    ),
                )
                for r in found.rankings
            ],
        )
