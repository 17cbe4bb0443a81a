"""GraphQL object types; each wraps one stored record and reads its fields."""

from typing import Any

import strawberry

from parley.graph.context import Info
from parley.graph.enums import ErrorCode, RelationshipType
from parley.graph.fields import reads, shows, stored
from parley.graph.game_types import ScenarioGame, scenario_game_type
from parley.graph.listed import Listed
from parley.graph.projection import Reads, reading
from parley.resolvers import games, relationships
from parley.resolvers.agents import AGENT
from parley.resolvers.dimensions import dimensions_of
from parley.resolvers.names import agent_name
from parley.resolvers.relationships import RELATIONSHIP
from parley.resolvers.scenarios import SCENARIO
from parley.storage import models


def _primary_key(root: Any) -> strawberry.ID:
    return strawberry.ID(str(root.record.pk))


def primary_key(description: str = "The stored primary key.") -> Any:
    """The `id` field of a type that holds its stored record in `record`."""
    return strawberry.field(resolver=_primary_key, description=description, metadata=reading("pk"))


@strawberry.type(description="An expected failure: which input field, what is wrong, a code.")
class UserError:
    field: list[str] = strawberry.field(description="Path to the input field at fault.")
    message: str = strawberry.field(description="A readable explanation.")
    code: ErrorCode = strawberry.field(description="A stable machine-readable code.")


@strawberry.type(description="A character that takes part in simulations (Sotopia AgentProfile).")
@reads(AGENT)
class Agent:
    record: strawberry.Private[models.AgentProfile]

    id = primary_key()

    @strawberry.field(
        description="Display name, as used in transcripts: first and last name.",
        metadata=reading("first_name", "last_name"),
    )
    def name(self) -> str:
        return agent_name(self.record)

    @strawberry.field(
        description="This agent's relationships, each with the other agent.",
        metadata=reading("pk"),
    )
    async def relationships(self, info: Info) -> list["AgentRelationship"]:
        records = await relationships.relationships_of(str(self.record.pk))
        return [AgentRelationship(agent_id=str(self.record.pk), record=r) for r in records]


AGENT_READS = Reads.of_type(Agent)


@strawberry.type(
    description="A situation with one private goal per seat (Sotopia EnvironmentProfile)."
)
@reads(SCENARIO)
class Scenario:
    record: strawberry.Private[models.EnvironmentProfile]

    id = primary_key()

    @strawberry.field(
        description="Sotopia's instruction on how to act, given with every turn; null when none.",
        metadata=reading("action_instruction"),
    )
    def action_instruction(self) -> str | None:
        return self.record.action_instruction

    @strawberry.field(
        description="The social game its gameMetadata holds; null when none.",
        metadata=reading("game_metadata"),
    )
    def game(self) -> ScenarioGame | None:
        rules = games.scenario_game(self.record)
        return scenario_game_type(rules) if rules else None


SCENARIO_READS = Reads.of_type(Scenario)


@strawberry.type(description="How two agents relate (Sotopia RelationshipProfile); one per pair.")
@reads(RELATIONSHIP)
class Relationship:
    record: strawberry.Private[models.RelationshipProfile]

    id = primary_key()

    @strawberry.field(
        description="Id of the first agent (Sotopia's agent_1_id).", metadata=reading("agent_1_id")
    )
    def agent_id(self) -> strawberry.ID:
        return strawberry.ID(self.record.agent_1_id)

    @strawberry.field(
        description="Id of the second agent (Sotopia's agent_2_id).", metadata=reading("agent_2_id")
    )
    def other_agent_id(self) -> strawberry.ID:
        return strawberry.ID(self.record.agent_2_id)

    @strawberry.field(
        description="The first agent; null if it no longer exists.", metadata=reading("agent_1_id")
    )
    async def agent(self, info: Info) -> Agent | None:
        return await load_agent(info, self.record.agent_1_id)

    @strawberry.field(
        description="The second agent; null if it no longer exists.", metadata=reading("agent_2_id")
    )
    async def other_agent(self, info: Info) -> Agent | None:
        return await load_agent(info, self.record.agent_2_id)


RELATIONSHIP_READS = Reads.of_type(Relationship)


@strawberry.type(description="One of an agent's relationships, seen from that agent.")
class AgentRelationship:
    agent_id: strawberry.Private[str]
    record: strawberry.Private[models.RelationshipProfile]

    @strawberry.field(description="The relationship record.")
    def relationship(self) -> Relationship:
        return Relationship(record=self.record)

    @strawberry.field(description="The kind of relationship.")
    def type(self) -> RelationshipType:
        return RelationshipType(self.record.relationship)

    @strawberry.field(description="Id of the other agent.")
    def other_agent_id(self) -> strawberry.ID:
        return strawberry.ID(self._other_id())

    @strawberry.field(description="The other agent; null if it no longer exists.")
    async def other_agent(self, info: Info) -> Agent | None:
        return await load_agent(info, self._other_id())

    def _other_id(self) -> str:
        r = self.record
        return r.agent_2_id if r.agent_1_id == self.agent_id else r.agent_1_id


@strawberry.type(description="A scored dimension of the judge's evaluation.")
@shows(models.CustomEvaluationDimension)
class EvaluationDimension:
    record: strawberry.Private[models.CustomEvaluationDimension]

    id = primary_key()

    name = stored("Dimension name, used as the key in rewards.")
    description = stored("What the judge is asked to assess.")
    range_low = stored("Lowest allowed score.")
    range_high = stored("Highest allowed score.")


@strawberry.type(description="A named set of dimensions a judge scores episodes on.")
@shows(models.CustomEvaluationDimensionList)
class EvaluationDimensionList:
    record: strawberry.Private[models.CustomEvaluationDimensionList]

    id = primary_key()

    name = stored("Unique name of the list.")

    @strawberry.field(description="The dimensions, in order.")
    async def dimensions(self) -> list[EvaluationDimension]:
        return [EvaluationDimension(record=d) for d in await dimensions_of(self.record)]


async def load_agent(info: Info, pk: str) -> Agent | None:
    record = await info.context.agents.load(pk)
    return Agent(record=record) if record is not None else None


class ListedAgent(Listed[models.AgentProfile], Agent):  # type: ignore[override]
    pass


class ListedScenario(Listed[models.EnvironmentProfile], Scenario):  # type: ignore[override]
    pass


class ListedRelationship(Listed[models.RelationshipProfile], Relationship):  # type: ignore[override]
    pass
