"""Agreement between evaluations of the same episodes over GraphQL (computed by
resolvers/evaluation_agreement.py): each evaluation's panel run by run, and every two
evaluations, per dimension and overall."""

from typing import Annotated

import strawberry

from parley.graph.context import Info
from parley.graph.episode_types import optional_id
from parley.graph.experiments import plain
from parley.graph.studies import StudyEpisodesInput
from parley.graph.study_agreement import Estimate, RaterAgreement, model_means
from parley.lifecycle.evaluation_agreement import evaluation_agreement_of
from parley.resolvers import evaluation_agreement as computed

EVALUATIONS = (
    "The evaluations to compare, 1 to 10: a re-judging's id, a rating study's id (its raters' "
    "mean scores, each rater a run), or null for the episodes' own judgement."
)


@strawberry.type(description="How far the judge runs of one evaluation's panel agree.")
class PanelAgreement:
    evaluation: strawberry.ID | None = strawberry.field(
        description="The re-judging or rating study; null: the episodes' own judgement."
    )
    runs: list[str] = strawberry.field(
        description="Its runs that gave scores, `model#repeat`, compared as raters are."
    )
    agreement: RaterAgreement = strawberry.field(description="Between the runs.")


@strawberry.type(description="A model's mean score from each of two evaluations.")
class PairModelMeans:
    model: str = strawberry.field(description="The model that played the agents.")
    first_mean: float = strawberry.field(description="Its mean score from the first.")
    second_mean: float = strawberry.field(description="Its mean score from the second.")


@strawberry.type(description="How far two evaluations agree, over the units both scored.")
class EvaluationPair:
    first: strawberry.ID | None = strawberry.field(description="As in PanelAgreement.")
    second: strawberry.ID | None = strawberry.field(description="As in PanelAgreement.")
    pearson: Estimate = strawberry.field(description="Pearson's r; Fisher z interval.")
    spearman: Estimate = strawberry.field(description="Spearman's rho; Fisher z interval.")
    tau: Estimate = strawberry.field(
        description="Kendall's tau-b between the two rankings of the models by mean score; "
        "bootstrap interval over episodes."
    )
    models: list[PairModelMeans] = strawberry.field(description="Each model's means.")


@strawberry.type(description="Agreement between evaluations on one dimension, or overall.")
class EvaluationAgreement:
    dimension: str = strawberry.field(
        description="A dimension any of the evaluations scored, or `overall_score`."
    )
    units: int = strawberry.field(description="Agents of the chosen episodes.")
    panels: list[PanelAgreement] = strawberry.field(
        description="Each evaluation judged by a panel of more than one run."
    )
    pairs: list[EvaluationPair] = strawberry.field(
        description="Every two of the evaluations, in the order asked."
    )

    @classmethod
    def of(cls, found: computed.EvaluationDimension) -> "EvaluationAgreement":
        return cls(
            dimension=found.dimension,
            units=found.units,
            panels=[
                PanelAgreement(
                    evaluation=optional_id(p.evaluation),
                    runs=p.runs,
                    agreement=RaterAgreement.of(p.alpha, p.icc),
                )
                for p in found.panels
            ],
            pairs=[
                EvaluationPair(
                    first=optional_id(p.first),
                    second=optional_id(p.second),
                    pearson=Estimate.of(p.pearson),
                    spearman=Estimate.of(p.spearman),
                    tau=Estimate.of(p.ranking.tau),
                    models=model_means(
                        p.ranking,
                        lambda m, a, b: PairModelMeans(model=m, first_mean=a, second_mean=b),
                    ),
                )
                for p in found.pairs
            ],
        )


@strawberry.type
class EvaluationAgreementQuery:
    @strawberry.field(
        description="How far evaluations of the same episodes agree, per dimension and "
        "overall: each one's judge panel run by run, and every two of them. At most 5,000 "
        "episodes, named as a rating study names them."
    )
    async def evaluation_agreement(
        self,
        info: Info,
        episodes: StudyEpisodesInput,
        evaluations: Annotated[list[strawberry.ID | None], strawberry.argument(EVALUATIONS)],
    ) -> list[EvaluationAgreement]:
        found = await evaluation_agreement_of(
            info.context.services.studies,
            plain(episodes),
            [None if e is None else str(e) for e in evaluations],
        )
        return [EvaluationAgreement.of(dimension) for dimension in found]
