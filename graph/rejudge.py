"""GraphQL of re-judging: the mutation that queues it, and a re-judging with its progress."""

import strawberry

from parley.graph.connection import one_field
from parley.graph.context import Info
from parley.graph.enums import Aggregate
from parley.graph.episode_types import an_id, optional_id, panel_judges, when
from parley.graph.fields import shows, stored, wrapped
from parley.graph.inputs import AGGREGATE, JUDGES, JudgeInput, provided
from parley.graph.payloads import user_errors
from parley.graph.types import UserError
from parley.lifecycle import rejudge
from parley.storage.models import EvaluationStatus


@strawberry.input(
    description="Which finished episodes to judge again (exactly one of episodeIds, "
    "experimentId and tag), by which judge, on which dimensions."
)
class RejudgeEpisodesInput:
    episode_ids: list[strawberry.ID] | None = strawberry.field(
        default=None, description="These episodes; each must be COMPLETED."
    )
    experiment_id: strawberry.ID | None = strawberry.field(
        default=None, description="Every episode of this experiment (all must be COMPLETED)."
    )
    tag: str | None = strawberry.field(
        default=None,
        description="Every episode with exactly this tag (case counts; all must be COMPLETED).",
    )
    judge_model: str | None = strawberry.field(
        default=None, description="The judge model (default: the embedded model)."
    )
    judges: list[JudgeInput] | None = strawberry.field(default=None, description=JUDGES)
    judge_aggregate: Aggregate = strawberry.field(default=Aggregate.MEAN, description=AGGREGATE)
    evaluation_dimension_list_id: strawberry.ID | None = strawberry.field(
        default=None, description="The dimensions to score; Sotopia's seven when omitted."
    )


@strawberry.type(description="A re-judging's evaluations by status.")
class RejudgingProgress:
    queued: int = strawberry.field(description="Waiting for a worker.")
    running: int = strawberry.field(description="Being judged.")
    completed: int = strawberry.field(description="Scored.")
    failed: int = strawberry.field(description="The judge gave no valid scores (see the error).")


@strawberry.type(
    description="Finished episodes judged again: one evaluation per episode, stored beside "
    "its original rewards; select it in results with `episodeResults(evaluation: id)`."
)
@shows(rejudge.Rejudging)
class Rejudging:
    record: strawberry.Private[rejudge.Rejudging]

    id = stored("The id; also the id of each evaluation it makes.", an_id)

    judge_model = stored("The judge model; for a panel of more than one run, its label.")
    judges = panel_judges()

    judge_aggregate = stored("How the judge runs' scores make each evaluation's rewards.")

    evaluation_dimension_list_id = stored(
        "The dimensions scored; null for Sotopia's seven.", optional_id
    )

    episodes = stored("How many episodes it judges.")
    created_at = stored("When it was queued.", when)

    @strawberry.field(description="Its evaluations by status, now.")
    async def progress(self, info: Info) -> RejudgingProgress:
        counts = await rejudge.progress(info.context.services.client, self.record.id)
        return RejudgingProgress(
            queued=counts[EvaluationStatus.QUEUED],
            running=counts[EvaluationStatus.RUNNING],
            completed=counts[EvaluationStatus.COMPLETED],
            failed=counts[EvaluationStatus.FAILED],
        )


@strawberry.type(description="Result of rejudgeEpisodes.")
class RejudgePayload:
    rejudging: Rejudging | None = strawberry.field(description="The re-judging; null on failure.")
    user_errors: list[UserError] = strawberry.field(description="Why nothing was queued.")


@strawberry.type
class RejudgeMutation:
    @strawberry.mutation(
        description="Judge finished episodes again with another judge or dimension list, as "
        "queued jobs; each evaluation is kept beside the original rewards, which stay as they "
        "are, except for an episode that completed without scores (`judgeError`): the first "
        "evaluation by its own judge on its own dimensions that succeeds becomes its scores. "
        "At most 10,000 episodes per call."
    )
    async def rejudge_episodes(self, info: Info, input: RejudgeEpisodesInput) -> RejudgePayload:
        services = info.context.services
        fields = {k: v for k, v in provided(input).items() if v is not None}
        record, errors = await rejudge.queue(
            services.client, services.jobs, services.models, fields
        )
        return RejudgePayload(
            rejudging=wrapped(Rejudging, record),
            user_errors=user_errors(errors),
        )


@strawberry.type
class RejudgeQuery:
    rejudging = one_field(
        Rejudging,
        lambda info, pk: rejudge.get_rejudging(info.context.services.client, pk),
        "re-judging",
        description="One re-judging by id, with its progress; null if none.",
    )
