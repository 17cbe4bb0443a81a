"""Root query fields."""

from typing import Annotated

import strawberry

from parley.graph.connection import AFTER, BY_ID, FIRST, NEWEST_FIRST, Connection, to_connection
from parley.graph.context import Info
from parley.graph.drafts import DraftQuery
from parley.graph.enums import SortOrder
from parley.graph.episode_types import EPISODE_READS, Episode, ListedEpisode, Model
from parley.graph.errors import UserInputError
from parley.graph.experiments import ExperimentQuery
from parley.graph.inputs import AgentFilter, EpisodeFilter, RelationshipFilter, ScenarioFilter
from parley.graph.projection import fields_for
from parley.graph.rejudge import RejudgeQuery
from parley.graph.results import ResultsQuery
from parley.graph.seats import SeatQuery
from parley.graph.types import (
    AGENT_READS,
    RELATIONSHIP_READS,
    SCENARIO_READS,
    Agent,
    EvaluationDimensionList,
    ListedAgent,
    ListedRelationship,
    ListedScenario,
    Relationship,
    Scenario,
)
from parley.graph.usage_types import UsageFilter, UsageTotals
from parley.resolvers import agents, dimensions, episodes, relationships, scenarios, usage


@strawberry.type(description="Read the stored world.")
class Query(ExperimentQuery, ResultsQuery, RejudgeQuery, SeatQuery, DraftQuery):
    @strawberry.field(description="One agent by id; null if there is none.")
    async def agent(self, id: strawberry.ID) -> Agent | None:
        record = await agents.get_agent(id)
        return Agent(record=record) if record else None

    @strawberry.field(description="Agents, by id (generated ids sort oldest first).")
    async def agents(
        self,
        info: Info,
        filter: AgentFilter | None = None,
        first: Annotated[int | None, strawberry.argument(description=FIRST)] = None,
        after: Annotated[str | None, strawberry.argument(description=AFTER)] = None,
        order: Annotated[SortOrder, strawberry.argument(description=BY_ID)] = SortOrder.ASCENDING,
    ) -> Connection[Agent]:
        f = filter or AgentFilter()
        page = await agents.list_agents(
            tag=f.tag,
            gender=f.gender,
            occupation=f.occupation,
            name=f.name,
            first=first,
            after=after,
            order=order,
            fields=fields_for(info, AGENT_READS),
            documents=info.context.services.documents,
        )
        return to_connection(page, ListedAgent)

    @strawberry.field(description="One scenario by id; null if there is none.")
    async def scenario(self, id: strawberry.ID) -> Scenario | None:
        record = await scenarios.get_scenario(id)
        return Scenario(record=record) if record else None

    @strawberry.field(description="Scenarios, by id (generated ids sort oldest first).")
    async def scenarios(
        self,
        info: Info,
        filter: ScenarioFilter | None = None,
        first: Annotated[int | None, strawberry.argument(description=FIRST)] = None,
        after: Annotated[str | None, strawberry.argument(description=AFTER)] = None,
        order: Annotated[SortOrder, strawberry.argument(description=BY_ID)] = SortOrder.ASCENDING,
    ) -> Connection[Scenario]:
        f = filter or ScenarioFilter()
        page = await scenarios.list_scenarios(
            tag=f.tag,
            codename=f.codename,
            first=first,
            after=after,
            order=order,
            fields=fields_for(info, SCENARIO_READS),
            documents=info.context.services.documents,
        )
        return to_connection(page, ListedScenario)

    @strawberry.field(description="One relationship by id; null if there is none.")
    async def relationship(self, id: strawberry.ID) -> Relationship | None:
        record = await relationships.get_relationship(id)
        return Relationship(record=record) if record else None

    @strawberry.field(description="Relationships, by id (generated ids sort oldest first).")
    async def relationships(
        self,
        info: Info,
        filter: RelationshipFilter | None = None,
        first: Annotated[int | None, strawberry.argument(description=FIRST)] = None,
        after: Annotated[str | None, strawberry.argument(description=AFTER)] = None,
        order: Annotated[SortOrder, strawberry.argument(description=BY_ID)] = SortOrder.ASCENDING,
    ) -> Connection[Relationship]:
        f = filter or RelationshipFilter()
        if f.agent_ids is not None and len(f.agent_ids) != 2:
            raise UserInputError(f"agentIds takes exactly two ids, got {len(f.agent_ids)}")
        page = await relationships.list_relationships(
            agent_id=f.agent_id,
            pair=[str(a) for a in f.agent_ids] if f.agent_ids else None,
            relationship=f.relationship,
            tag=f.tag,
            first=first,
            after=after,
            order=order,
            fields=fields_for(info, RELATIONSHIP_READS),
            documents=info.context.services.documents,
        )
        return to_connection(page, ListedRelationship)

    @strawberry.field(description="The relationship between two agents, in either order.")
    async def relationship_between(
        self, agent_id: strawberry.ID, other_agent_id: strawberry.ID
    ) -> Relationship | None:
        record = await relationships.relationship_between(agent_id, other_agent_id)
        return Relationship(record=record) if record else None

    @strawberry.field(description="One episode by id; null if there is none.")
    async def episode(self, id: strawberry.ID) -> Episode | None:
        record = await episodes.get_episode(id)
        return Episode(record=record) if record else None

    @strawberry.field(description="Episodes, newest first unless asked otherwise.")
    async def episodes(
        self,
        info: Info,
        filter: EpisodeFilter | None = None,
        first: Annotated[int | None, strawberry.argument(description=FIRST)] = None,
        after: Annotated[str | None, strawberry.argument(description=AFTER)] = None,
        order: Annotated[
            SortOrder, strawberry.argument(description=NEWEST_FIRST)
        ] = SortOrder.DESCENDING,
    ) -> Connection[Episode]:
        f = filter or EpisodeFilter()
        page = await episodes.find_episodes(
            tag=f.tag,
            status=f.status,
            agent_id=f.agent_id,
            scenario_id=f.scenario_id,
            first=first,
            after=after,
            order=order,
            fields=fields_for(info, EPISODE_READS),
            documents=info.context.services.documents,
        )
        return to_connection(page, ListedEpisode)

    @strawberry.field(
        description="Tokens and cost summed over the episodes of a tag or an experiment."
    )
    async def usage_totals(self, filter: UsageFilter | None = None) -> UsageTotals:
        f = filter or UsageFilter()
        totals = await usage.usage_totals(tag=f.tag, experiment_id=f.experiment_id, status=f.status)
        return UsageTotals(totals=totals)

    @strawberry.field(description="Models simulations can use, and whether each is usable now.")
    def models(self, info: Info) -> list[Model]:
        return [Model(info=m) for m in info.context.services.models.list_models()]

    @strawberry.field(description="Every evaluation dimension list.")
    async def evaluation_dimension_lists(self) -> list[EvaluationDimensionList]:
        return [EvaluationDimensionList(record=r) for r in await dimensions.list_dimension_lists()]
