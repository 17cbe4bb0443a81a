"""Mutation and filter inputs. Limits are checked in resolvers/, which report them as userErrors."""

import dataclasses
from typing import Any

import strawberry

from parley.graph.enums import (
    Aggregate,
    EpisodeStatus,
    Redelivery,
    RelationshipType,
    SeatTimeout,
    TurnOrder,
)
from parley.graph.fields import creates, updates
from parley.resolvers.agents import AGENT
from parley.resolvers.relationships import RELATIONSHIP
from parley.resolvers.scenarios import SCENARIO


def provided(data: object, rename: dict[str, str] | None = None) -> dict[str, Any]:
    """The fields a client actually sent (UNSET dropped), nested inputs as dicts."""
    names = rename or {}
    out: dict[str, Any] = {}
    for item in dataclasses.fields(data):  # type: ignore[arg-type]
        value = getattr(data, item.name)
        if value is strawberry.UNSET:
            continue
        if isinstance(value, list):
            value = [provided(v) if dataclasses.is_dataclass(v) else v for v in value]
        out[names.get(item.name, item.name)] = value
    return out


def fields_of(data: object) -> dict[str, Any]:
    """`provided` with the GraphQL `id` mapped to the stored `pk`."""
    return provided(data, {"id": "pk"})


@strawberry.input
class NewRecordInput:
    """The key of a record a create mutation stores; each create input adds the record's fields."""

    id: strawberry.ID | None = strawberry.field(
        default=None, description="Primary key to use; a new ULID when omitted."
    )


@strawberry.input(description="Narrows an agent list; every given condition must hold.")
class AgentFilter:
    tag: str | None = strawberry.field(default=None, description="Tag (letter case ignored).")
    gender: str | None = strawberry.field(default=None, description="Exact gender, any case.")
    occupation: str | None = strawberry.field(
        default=None, description="Exact occupation, any case."
    )
    name: str | None = strawberry.field(
        default=None, description="First name, last name, or 'First Last'; any case."
    )
    name_contains: str | None = strawberry.field(
        default=None,
        description="Finds agents as a name is typed: each word (split at spaces and '|') is "
        "part of the first or the last name, in any letter case (`ann smi` finds Ann Smith and "
        "Joanna Smits). Words of one letter, digit or sign are left out. At most 100 "
        "characters. A part of more than 200 different names finds 200 of them: more of the "
        "name finds the rest.",
    )


@strawberry.input(description="Narrows a scenario list.")
class ScenarioFilter:
    tag: str | None = strawberry.field(default=None, description="Tag (letter case ignored).")
    codename: str | None = strawberry.field(
        default=None, description="Codename (letter case ignored)."
    )
    codename_contains: str | None = strawberry.field(
        default=None,
        description="Finds scenarios as a codename is typed: each word (split at spaces and "
        "'|') is part of the codename, in any letter case (`van sal` finds used_van_sale). "
        "Words of one letter, digit or sign are left out. At most 100 characters. A part of "
        "more than 200 different codenames finds 200 of them: more of it finds the rest.",
    )


@strawberry.input(description="Narrows a relationship list.")
class RelationshipFilter:
    agent_id: strawberry.ID | None = strawberry.field(
        default=None, description="Relationships this agent is part of, on either side."
    )
    agent_ids: list[strawberry.ID] | None = strawberry.field(
        default=None, description="Exactly two agent ids: their relationship, in either order."
    )
    relationship: RelationshipType | None = strawberry.field(
        default=None, description="Kind of relationship."
    )
    tag: str | None = strawberry.field(default=None, description="Tag (letter case ignored).")


@strawberry.input(description="A new agent. Names are required; the rest defaults to empty.")
@creates(AGENT)
class CreateAgentInput(NewRecordInput):
    pass


@strawberry.input(description="Changes to an agent; omitted fields stay as they are.")
@updates(AGENT)
class UpdateAgentInput:
    id: strawberry.ID = strawberry.field(description="The agent to change.")


@strawberry.input(description="Which agent to delete.")
class DeleteAgentInput:
    id: strawberry.ID = strawberry.field(description="The agent to delete.")
    cascade: bool = strawberry.field(
        default=False, description="Also delete the relationships that reference the agent."
    )


@strawberry.input(description="A new scenario: the situation and one goal per seat.")
@creates(SCENARIO)
class CreateScenarioInput(NewRecordInput):
    pass


@strawberry.input(description="Changes to a scenario; omitted fields stay as they are.")
@updates(SCENARIO)
class UpdateScenarioInput:
    id: strawberry.ID = strawberry.field(description="The scenario to change.")


@strawberry.input(description="Which record to delete.")
class DeleteInput:
    id: strawberry.ID = strawberry.field(description="The record to delete.")


@strawberry.input(description="Which finished episode to replay.")
class ReplayInput:
    id: strawberry.ID = strawberry.field(description="The episode replayed.")


@strawberry.input(description="A relationship between two existing, different agents.")
@creates(RELATIONSHIP)
class CreateRelationshipInput(NewRecordInput):
    agent_id: strawberry.ID = strawberry.field(description="First agent.")
    other_agent_id: strawberry.ID = strawberry.field(description="Second agent.")


@strawberry.input(description="Changes to a relationship; the two agents cannot change.")
@updates(RELATIONSHIP)
class UpdateRelationshipInput:
    id: strawberry.ID = strawberry.field(description="The relationship to change.")


@strawberry.input(description="One dimension of a new list; its score range needs low < high.")
class EvaluationDimensionInput:
    name: str = strawberry.field(description="Name, used as the key in rewards.")
    description: str = strawberry.field(default="", description="What the judge assesses.")
    range_low: int = strawberry.field(description="Lowest score.")
    range_high: int = strawberry.field(description="Highest score.")


@strawberry.input(description="A named list of evaluation dimensions.")
class CreateEvaluationDimensionListInput(NewRecordInput):
    name: str = strawberry.field(description="Unique name.")
    dimensions: list[EvaluationDimensionInput] = strawberry.field(
        description="The dimensions, at least one, names unique."
    )


@strawberry.input(description="Narrows an episode list; every given condition must hold.")
class EpisodeFilter:
    tag: str | None = strawberry.field(default=None, description="Tag (letter case ignored).")
    status: EpisodeStatus | None = strawberry.field(default=None, description="Current status.")
    agent_id: strawberry.ID | None = strawberry.field(
        default=None, description="Episodes this agent took part in."
    )
    scenario_id: strawberry.ID | None = strawberry.field(
        default=None, description="Episodes of this scenario."
    )
    parent_id: strawberry.ID | None = strawberry.field(
        default=None, description="Forks of this episode (made by forkEpisode from it)."
    )


@strawberry.input(description="One judge of a panel: a model, asked `repeats` times.")
class JudgeInput:
    model: str = strawberry.field(description="The judge model.")
    repeats: int = strawberry.field(
        default=1,
        description="How many times it judges, each a judge run of its own; a panel makes at "
        "most 10 runs.",
    )


JUDGES = (
    "A panel of judges instead of judgeModel (give one or the other): each judge's runs are "
    "made at once, and their scores aggregated per agent and dimension."
)
AGGREGATE = "How a panel's scores make one per agent and dimension."


@strawberry.input(description="A simulation to run: who meets where, which models, how long.")
class StartSimulationInput:
    scenario_id: strawberry.ID = strawberry.field(description="The scenario.")
    agent_ids: list[strawberry.ID] = strawberry.field(
        description="Two or more distinct agents, in seat order (seat i gets goal i)."
    )
    agent_models: list[str] | None = strawberry.field(
        default=None,
        description="One model for all agents or one per agent (default: the embedded model).",
    )
    judge_model: str | None = strawberry.field(
        default=None, description="Model of the judge (default: the embedded model)."
    )
    judges: list[JudgeInput] | None = strawberry.field(default=None, description=JUDGES)
    judge_aggregate: Aggregate = strawberry.field(default=Aggregate.MEAN, description=AGGREGATE)
    max_turns: int = strawberry.field(default=20, description="Turn limit, 1..100.")
    turn_order: TurnOrder = strawberry.field(
        default=TurnOrder.ROUND_ROBIN, description="Who acts when."
    )
    evaluation_dimension_list_id: strawberry.ID | None = strawberry.field(
        default=None, description="Custom dimensions (default: Sotopia's seven)."
    )
    tag: str = strawberry.field(default="", description="Label for the batch.")
    idempotency_key: str | None = strawberry.field(
        default=None,
        description="Retrying with the same key within a day returns the same episode.",
    )
    redelivery: Redelivery = strawberry.field(
        default=Redelivery.RESUME,
        description="If its worker is lost: go on from the stored turns (RESUME) or start over.",
    )
    human_seats: list[int] = strawberry.field(
        default_factory=list,
        description="Seats a person plays instead of a model (their agentModels entry is "
        "ignored); the payload's seatTokens holds each seat's secret, shown once.",
    )
    claimable_seats: bool = strawberry.field(
        default=False,
        description="Give the human seats no token now: the first claimSeat of each gets it.",
    )
    seat_deadline_seconds: float = strawberry.field(
        default=300.0, description="Seconds a human seat has for each turn, 1..604800."
    )
    on_seat_timeout: SeatTimeout = strawberry.field(
        default=SeatTimeout.LEAVE, description="What happens to a seat that does not act in time."
    )
    stand_in_model: str | None = strawberry.field(
        default=None,
        description="The model that acts for a timed-out seat under STAND_IN (default: the "
        "judge's, or the first judge's of a panel).",
    )


def simulation_fields(data: StartSimulationInput) -> dict[str, Any]:
    """The request as resolvers/ validates it (defaults left to it, enums as values)."""
    values = provided(data)
    for name in ("agent_models", "judge_model", "judges", "stand_in_model"):
        if values.get(name) is None:
            values.pop(name, None)
    return values
