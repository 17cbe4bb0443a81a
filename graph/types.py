"""GraphQL object types; each wraps one stored record and reads its fields."""

import strawberry

from graph.context import Info
from graph.enums import ErrorCode, RelationshipType
from resolvers import relationships
from resolvers.dimensions import dimensions_of
from storage import models


@strawberry.type(description="An expected failure: which input field, what is wrong, a code.")
class UserError:
    field: list[str] = strawberry.field(description="Path to the input field at fault.")
    message: str = strawberry.field(description="A readable explanation.")
    code: ErrorCode = strawberry.field(description="A stable machine-readable code.")


@strawberry.type(description="A character that takes part in simulations (Sotopia AgentProfile).")
class Agent:
    record: strawberry.Private[models.AgentProfile]

    @strawberry.field(description="The stored primary key.")
    def id(self) -> strawberry.ID:
        return strawberry.ID(str(self.record.pk))

    @strawberry.field(description="Given name.")
    def first_name(self) -> str:
        return self.record.first_name

    @strawberry.field(description="Family name.")
    def last_name(self) -> str:
        return self.record.last_name

    @strawberry.field(description="Display name, as used in transcripts: first and last name.")
    def name(self) -> str:
        return f"{self.record.first_name} {self.record.last_name}".strip()

    @strawberry.field(description="Age in years.")
    def age(self) -> int:
        return self.record.age

    @strawberry.field(description="Occupation.")
    def occupation(self) -> str:
        return self.record.occupation

    @strawberry.field(description="Gender, e.g. Man, Woman, Nonbinary.")
    def gender(self) -> str:
        return self.record.gender

    @strawberry.field(description="Pronouns, e.g. she/her.")
    def gender_pronoun(self) -> str:
        return self.record.gender_pronoun

    @strawberry.field(description="What anyone may know about the agent.")
    def public_info(self) -> str:
        return self.record.public_info

    @strawberry.field(description="Big Five personality traits.")
    def big_five(self) -> str:
        return self.record.big_five

    @strawberry.field(description="Moral foundations the agent holds.")
    def moral_values(self) -> list[str]:
        return self.record.moral_values

    @strawberry.field(description="Schwartz personal values.")
    def schwartz_personal_values(self) -> list[str]:
        return self.record.schwartz_personal_values

    @strawberry.field(description="Personality and values in prose.")
    def personality_and_values(self) -> str:
        return self.record.personality_and_values

    @strawberry.field(description="How the agent makes decisions.")
    def decision_making_style(self) -> str:
        return self.record.decision_making_style

    @strawberry.field(description="What the agent hides; only the agent itself sees it in play.")
    def secret(self) -> str:
        return self.record.secret

    @strawberry.field(description="Myers-Briggs type.")
    def mbti(self) -> str:
        return self.record.mbti

    @strawberry.field(description="Model that plays this agent by default (Sotopia's model_id).")
    def model_id(self) -> str:
        return self.record.model_id

    @strawberry.field(description="Free-form label for grouping.")
    def tag(self) -> str:
        return self.record.tag

    @strawberry.field(description="This agent's relationships, each with the other agent.")
    async def relationships(self, info: Info) -> list["AgentRelationship"]:
        records = await relationships.relationships_of(str(self.record.pk))
        return [AgentRelationship(agent_id=str(self.record.pk), record=r) for r in records]


@strawberry.type(
    description="A situation with one private goal per seat (Sotopia EnvironmentProfile)."
)
class Scenario:
    record: strawberry.Private[models.EnvironmentProfile]

    @strawberry.field(description="The stored primary key.")
    def id(self) -> strawberry.ID:
        return strawberry.ID(str(self.record.pk))

    @strawberry.field(description="Short name of the scenario.")
    def codename(self) -> str:
        return self.record.codename

    @strawberry.field(description="Where the scenario comes from.")
    def source(self) -> str:
        return self.record.source

    @strawberry.field(description="The situation, as every participant sees it.")
    def scenario(self) -> str:
        return self.record.scenario

    @strawberry.field(description="One private goal per seat, in seat order; may hold hint tags.")
    def agent_goals(self) -> list[str]:
        return self.record.agent_goals

    @strawberry.field(description="The relationship the scenario assumes between participants.")
    def relationship(self) -> RelationshipType:
        return RelationshipType(self.record.relationship)

    @strawberry.field(description="Sotopia's age constraint, e.g. '[(18, 25), (30, 40)]'.")
    def age_constraint(self) -> str | None:
        return self.record.age_constraint

    @strawberry.field(description="Sotopia's occupation constraint.")
    def occupation_constraint(self) -> str | None:
        return self.record.occupation_constraint

    @strawberry.field(description="Free-form label for grouping.")
    def tag(self) -> str:
        return self.record.tag


@strawberry.type(description="How two agents relate (Sotopia RelationshipProfile); one per pair.")
class Relationship:
    record: strawberry.Private[models.RelationshipProfile]

    @strawberry.field(description="The stored primary key.")
    def id(self) -> strawberry.ID:
        return strawberry.ID(str(self.record.pk))

    @strawberry.field(description="Id of the first agent (Sotopia's agent_1_id).")
    def agent_id(self) -> strawberry.ID:
        return strawberry.ID(self.record.agent_1_id)

    @strawberry.field(description="Id of the second agent (Sotopia's agent_2_id).")
    def other_agent_id(self) -> strawberry.ID:
        return strawberry.ID(self.record.agent_2_id)

    @strawberry.field(description="The first agent; null if it no longer exists.")
    async def agent(self, info: Info) -> Agent | None:
        return await load_agent(info, self.record.agent_1_id)

    @strawberry.field(description="The second agent; null if it no longer exists.")
    async def other_agent(self, info: Info) -> Agent | None:
        return await load_agent(info, self.record.agent_2_id)

    @strawberry.field(description="The kind of relationship.")
    def relationship(self) -> RelationshipType:
        return RelationshipType(self.record.relationship)

    @strawberry.field(description="How the relationship came about.")
    def background_story(self) -> str | None:
        return self.record.background_story

    @strawberry.field(description="Free-form label for grouping.")
    def tag(self) -> str:
        return self.record.tag


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
class EvaluationDimension:
    record: strawberry.Private[models.CustomEvaluationDimension]

    @strawberry.field(description="The stored primary key.")
    def id(self) -> strawberry.ID:
        return strawberry.ID(str(self.record.pk))

    @strawberry.field(description="Dimension name, used as the key in rewards.")
    def name(self) -> str:
        return self.record.name

    @strawberry.field(description="What the judge is asked to assess.")
    def description(self) -> str:
        return self.record.description

    @strawberry.field(description="Lowest allowed score.")
    def range_low(self) -> int:
        return self.record.range_low

    @strawberry.field(description="Highest allowed score.")
    def range_high(self) -> int:
        return self.record.range_high


@strawberry.type(description="A named set of dimensions a judge scores episodes on.")
class EvaluationDimensionList:
    record: strawberry.Private[models.CustomEvaluationDimensionList]

    @strawberry.field(description="The stored primary key.")
    def id(self) -> strawberry.ID:
        return strawberry.ID(str(self.record.pk))

    @strawberry.field(description="Unique name of the list.")
    def name(self) -> str:
        return self.record.name

    @strawberry.field(description="The dimensions, in order.")
    async def dimensions(self) -> list[EvaluationDimension]:
        return [EvaluationDimension(record=d) for d in await dimensions_of(self.record)]


async def load_agent(info: Info, pk: str) -> Agent | None:
    record = await info.context.agents.load(pk)
    return Agent(record=record) if record is not None else None
