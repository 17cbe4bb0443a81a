"""Root query fields."""

from typing import Any

import strawberry

from parley.graph.connection import list_field, one_field
from parley.graph.context import Info
from parley.graph.drafts import DraftQuery
from parley.graph.episode_types import EPISODE_READS, Episode, ListedEpisode, Model
from parley.graph.errors import UserInputError
from parley.graph.evaluation_agreement import EvaluationAgreementQuery
from parley.graph.experiments import ExperimentQuery
from parley.graph.fields import wrapped
from parley.graph.inputs import AgentFilter, EpisodeFilter, RelationshipFilter, ScenarioFilter
from parley.graph.provider_limit_types import ProviderLimit
from parley.graph.rejudge import RejudgeQuery
from parley.graph.results import ResultsQuery
from parley.graph.seats import SeatQuery
from parley.graph.studies import StudyQuery
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
from parley.resolvers.agents import list_agents
from parley.resolvers.episodes import find_episodes
from parley.resolvers.relationships import list_relationships
from parley.resolvers.scenarios import list_scenarios


def relationship_terms(f: RelationshipFilter) -> dict[str, Any]:
    """`list_relationships`'s keywords: `agentIds` must name a pair."""
    if f.agent_ids is not None and len(f.agent_ids) != 2:
        raise UserInputError(f"agentIds takes exactly two ids, got {len(f.agent_ids)}")
    pair = [str(a) for a in f.agent_ids] if f.agent_ids else None
    return {"agent_id": f.agent_id, "pair": pair, "relationship": f.relationship, "tag": f.tag}


@strawberry.type(description="Read the stored world.")
class Query(
    ExperimentQuery,
    ResultsQuery,
    RejudgeQuery,
    SeatQuery,
    DraftQuery,
    StudyQuery,
    EvaluationAgreementQuery,
):
    agent = one_field(Agent, lambda _, pk: agents.get_agent(pk), "agent")

    agents = list_field(Agent, ListedAgent, AgentFilter, list_agents, reads=AGENT_READS)

    scenario = one_field(Scenario, lambda _, pk: scenarios.get_scenario(pk), "scenario")

    scenarios = list_field(
        Scenario, ListedScenario, ScenarioFilter, list_scenarios, reads=SCENARIO_READS
    )

    relationship = one_field(
        Relationship, lambda _, pk: relationships.get_relationship(pk), "relationship"
    )

    relationships = list_field(
        Relationship,
        ListedRelationship,
        RelationshipFilter,
        list_relationships,
        reads=RELATIONSHIP_READS,
        terms=relationship_terms,
    )

    @strawberry.field(description="The relationship between two agents, in either order.")
    async def relationship_between(
        self, agent_id: strawberry.ID, other_agent_id: strawberry.ID
    ) -> Relationship | None:
        record = await relationships.relationship_between(agent_id, other_agent_id)
        return wrapped(Relationship, record)

    episode = one_field(Episode, lambda _, pk: episodes.get_episode(pk), "episode")

    episodes = list_field(
        Episode, ListedEpisode, EpisodeFilter, find_episodes, reads=EPISODE_READS, newest_first=True
    )

    @strawberry.field(
        description="Tokens and cost summed over the episodes of a tag or an experiment."
    )
    async def usage_totals(self, filter: UsageFilter | None = None) -> UsageTotals:
        f = filter or UsageFilter()
        totals = await usage.usage_totals(tag=f.tag, experiment_id=f.experiment_id, status=f.status)
        return UsageTotals(totals=totals)

    @strawberry.field(description="Models simulations can use, and whether each is usable now.")
    def models(self, info: Info) -> list[Model]:
        return [Model(record=m) for m in info.context.services.models.list_models()]

    @strawberry.field(
        description="Each provider key the models file states limits for, shared by every "
        "Parley process, with the allowance in use now."
    )
    async def provider_limits(self, info: Info) -> list[ProviderLimit]:
        found = await info.context.services.models.limit_usage()
        return [ProviderLimit(usage=usage) for usage in found]

    @strawberry.field(description="Every evaluation dimension list.")
    async def evaluation_dimension_lists(self) -> list[EvaluationDimensionList]:
        return [EvaluationDimensionList(record=r) for r in await dimensions.list_dimension_lists()]
