"""Root mutation fields: each takes one `input` and returns a payload with userErrors."""

from collections.abc import Sequence

import strawberry

from parley.graph import inputs
from parley.graph.context import Info
from parley.graph.drafts import DraftMutation
from parley.graph.episode_types import Episode
from parley.graph.experiments import ExperimentMutation
from parley.graph.fields import wrapped
from parley.graph.forks import ForkMutation
from parley.graph.inputs import fields_of, simulation_fields
from parley.graph.payloads import (
    AgentPayload,
    DeleteAgentPayload,
    DeletePayload,
    EvaluationDimensionListPayload,
    RelationshipPayload,
    ScenarioPayload,
    SimulationPayload,
    SimulationsPayload,
    user_errors,
)
from parley.graph.rejudge import RejudgeMutation
from parley.graph.seat_types import SeatToken
from parley.graph.seats import SeatMutation
from parley.graph.studies import StudyMutation
from parley.graph.types import Agent, EvaluationDimensionList, Relationship, Scenario
from parley.lifecycle import replay
from parley.lifecycle import start as simulations
from parley.resolvers import agents, dimensions, relationships, scenarios
from parley.storage.models import EpisodeLog


def changes(data: object) -> dict[str, object]:
    values = fields_of(data)
    values.pop("pk")
    return values


def seat_tokens(started: simulations.Started, record: EpisodeLog | None) -> list[SeatToken]:
    issued = started.seat_tokens.get(str(record.pk), {}) if record else {}
    return [SeatToken(seat=seat, token=token) for seat, token in sorted(issued.items())]


def deleted(pk: str, errors: Sequence[object]) -> strawberry.ID | None:
    return None if errors else strawberry.ID(pk)


@strawberry.type(description="Change the stored world.")
class Mutation(
    ExperimentMutation,
    RejudgeMutation,
    SeatMutation,
    DraftMutation,
    StudyMutation,
    ForkMutation,
):
    @strawberry.mutation(description="Create an agent.")
    async def create_agent(self, input: inputs.CreateAgentInput) -> AgentPayload:
        record, errors = await agents.create_agent(fields_of(input))
        return AgentPayload(agent=wrapped(Agent, record), user_errors=user_errors(errors))

    @strawberry.mutation(description="Change some fields of an agent.")
    async def update_agent(self, info: Info, input: inputs.UpdateAgentInput) -> AgentPayload:
        record, errors = await agents.update_agent(
            info.context.services.client, input.id, changes(input)
        )
        return AgentPayload(agent=wrapped(Agent, record), user_errors=user_errors(errors))

    @strawberry.mutation(
        description="Delete an agent. Refused while relationships reference it, unless cascade."
    )
    async def delete_agent(self, info: Info, input: inputs.DeleteAgentInput) -> DeleteAgentPayload:
        client = info.context.services.client
        removed, errors = await agents.delete_agent(client, input.id, input.cascade)
        return DeleteAgentPayload(
            deleted_id=deleted(input.id, errors),
            deleted_relationship_ids=[strawberry.ID(pk) for pk in removed],
            user_errors=user_errors(errors),
        )

    @strawberry.mutation(description="Create a scenario.")
    async def create_scenario(self, input: inputs.CreateScenarioInput) -> ScenarioPayload:
        record, errors = await scenarios.create_scenario(fields_of(input))
        return ScenarioPayload(scenario=wrapped(Scenario, record), user_errors=user_errors(errors))

    @strawberry.mutation(description="Change some fields of a scenario.")
    async def update_scenario(
        self, info: Info, input: inputs.UpdateScenarioInput
    ) -> ScenarioPayload:
        record, errors = await scenarios.update_scenario(
            info.context.services.client, input.id, changes(input)
        )
        return ScenarioPayload(scenario=wrapped(Scenario, record), user_errors=user_errors(errors))

    @strawberry.mutation(description="Delete a scenario.")
    async def delete_scenario(self, input: inputs.DeleteInput) -> DeletePayload:
        errors = await scenarios.delete_scenario(input.id)
        return DeletePayload(deleted_id=deleted(input.id, errors), user_errors=user_errors(errors))

    @strawberry.mutation(description="Create the relationship between two agents (one per pair).")
    async def create_relationship(
        self, info: Info, input: inputs.CreateRelationshipInput
    ) -> RelationshipPayload:
        client = info.context.services.client
        record, errors = await relationships.create_relationship(client, fields_of(input))
        return RelationshipPayload(
            relationship=wrapped(Relationship, record),
            user_errors=user_errors(errors),
        )

    @strawberry.mutation(description="Change the kind, story or tag of a relationship.")
    async def update_relationship(
        self, info: Info, input: inputs.UpdateRelationshipInput
    ) -> RelationshipPayload:
        record, errors = await relationships.update_relationship(
            info.context.services.client, input.id, changes(input)
        )
        return RelationshipPayload(
            relationship=wrapped(Relationship, record),
            user_errors=user_errors(errors),
        )

    @strawberry.mutation(description="Delete a relationship.")
    async def delete_relationship(self, info: Info, input: inputs.DeleteInput) -> DeletePayload:
        errors = await relationships.delete_relationship(info.context.services.client, input.id)
        return DeletePayload(deleted_id=deleted(input.id, errors), user_errors=user_errors(errors))

    @strawberry.mutation(description="Create a named list of evaluation dimensions.")
    async def create_evaluation_dimension_list(
        self, info: Info, input: inputs.CreateEvaluationDimensionListInput
    ) -> EvaluationDimensionListPayload:
        client = info.context.services.client
        record, errors = await dimensions.create_dimension_list(client, fields_of(input))
        return EvaluationDimensionListPayload(
            evaluation_dimension_list=wrapped(EvaluationDimensionList, record),
            user_errors=user_errors(errors),
        )

    @strawberry.mutation(
        description="Delete an evaluation dimension list and the dimensions only it uses."
    )
    async def delete_evaluation_dimension_list(self, input: inputs.DeleteInput) -> DeletePayload:
        errors = await dimensions.delete_dimension_list(input.id)
        return DeletePayload(deleted_id=deleted(input.id, errors), user_errors=user_errors(errors))

    @strawberry.mutation(
        description="Queue a simulation and return its episode at once (status QUEUED); follow "
        "it with the episodeEvents subscription or by querying episode(id)."
    )
    async def start_simulation(
        self, info: Info, input: inputs.StartSimulationInput
    ) -> SimulationPayload:
        services = info.context.services
        started = await simulations.start_many(
            services, [simulation_fields(input)], prefix=("input",)
        )
        record = started.episodes[0] if started.episodes else None
        return SimulationPayload(
            episode=wrapped(Episode, record),
            user_errors=user_errors(started.errors),
            seat_tokens=seat_tokens(started, record),
        )

    @strawberry.mutation(
        description="Queue up to 1,000 simulations at once: all of them, or none if any is invalid."
    )
    async def start_simulations(
        self, info: Info, inputs: list[inputs.StartSimulationInput]
    ) -> SimulationsPayload:
        services = info.context.services
        batch = [simulation_fields(item) for item in inputs]
        started = await simulations.start_many(services, batch)
        return SimulationsPayload(
            episodes=[Episode(record=r) for r in started.episodes],
            user_errors=user_errors(started.errors),
            seat_tokens=[seat_tokens(started, r) for r in started.episodes],
        )

    @strawberry.mutation(
        description="Cancel an episode: a queued one at once, a running one within seconds "
        "(its partial transcript is kept)."
    )
    async def cancel_simulation(self, info: Info, input: inputs.DeleteInput) -> SimulationPayload:
        services = info.context.services
        record, errors = await simulations.cancel(services, input.id)
        return SimulationPayload(episode=wrapped(Episode, record), user_errors=user_errors(errors))

    @strawberry.mutation(
        description="Replay a finished episode from its ledger of model calls: a new episode "
        "(its `replayOf` the source) with the source's setup, every request answered from the "
        "ledger and no model asked; `replay` on it says whether it matched, turn by turn."
    )
    async def replay_episode(self, info: Info, input: inputs.ReplayInput) -> SimulationPayload:
        record, errors = await replay.replay_episode(info.context.services, input.id)
        return SimulationPayload(episode=wrapped(Episode, record), user_errors=user_errors(errors))

    @strawberry.mutation(description="Delete a finished episode.")
    async def delete_episode(self, info: Info, input: inputs.DeleteInput) -> DeletePayload:
        errors = await simulations.delete(info.context.services, input.id)
        return DeletePayload(deleted_id=deleted(input.id, errors), user_errors=user_errors(errors))
