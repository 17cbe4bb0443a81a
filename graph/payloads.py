"""Mutation results: the object that changed (or null) and the user errors that stopped it."""

import strawberry

from parley.core import errors
from parley.graph.episode_types import Episode
from parley.graph.seat_types import SeatToken
from parley.graph.types import Agent, EvaluationDimensionList, Relationship, Scenario, UserError


def user_errors(items: list[errors.UserError]) -> list[UserError]:
    return [UserError(field=e.field, message=e.message, code=e.code) for e in items]


@strawberry.type(description="Result of createAgent or updateAgent.")
class AgentPayload:
    agent: Agent | None = strawberry.field(description="The agent as stored; null on failure.")
    user_errors: list[UserError] = strawberry.field(description="Why nothing was written.")


@strawberry.type(description="Result of deleteAgent.")
class DeleteAgentPayload:
    deleted_id: strawberry.ID | None = strawberry.field(description="Id of the deleted agent.")
    deleted_relationship_ids: list[strawberry.ID] = strawberry.field(
        description="Relationships deleted with it (cascade)."
    )
    user_errors: list[UserError] = strawberry.field(description="Why nothing was deleted.")


@strawberry.type(description="Result of createScenario or updateScenario.")
class ScenarioPayload:
    scenario: Scenario | None = strawberry.field(description="The scenario; null on failure.")
    user_errors: list[UserError] = strawberry.field(description="Why nothing was written.")


@strawberry.type(description="Result of createRelationship or updateRelationship.")
class RelationshipPayload:
    relationship: Relationship | None = strawberry.field(
        description="The relationship; null on failure."
    )
    user_errors: list[UserError] = strawberry.field(description="Why nothing was written.")


@strawberry.type(description="Result of createEvaluationDimensionList.")
class EvaluationDimensionListPayload:
    evaluation_dimension_list: EvaluationDimensionList | None = strawberry.field(
        description="The list; null on failure."
    )
    user_errors: list[UserError] = strawberry.field(description="Why nothing was written.")


@strawberry.type(description="Result of a delete.")
class DeletePayload:
    deleted_id: strawberry.ID | None = strawberry.field(description="Id of the deleted record.")
    user_errors: list[UserError] = strawberry.field(description="Why nothing was deleted.")


@strawberry.type(description="Result of startSimulation or cancelSimulation.")
class SimulationPayload:
    episode: Episode | None = strawberry.field(description="The episode; null on failure.")
    user_errors: list[UserError] = strawberry.field(description="Why nothing was done.")
    seat_tokens: list[SeatToken] = strawberry.field(
        default_factory=list,
        description="startSimulation only: the token of each human seat, shown this once.",
    )


@strawberry.type(description="Result of startSimulations: all episodes, or none and the errors.")
class SimulationsPayload:
    episodes: list[Episode] = strawberry.field(description="The queued episodes, in input order.")
    user_errors: list[UserError] = strawberry.field(description="Why nothing was started.")
    seat_tokens: list[list[SeatToken]] = strawberry.field(
        default_factory=list,
        description="Per episode, in order: the tokens of its human seats, shown this once.",
    )
