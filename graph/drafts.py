"""GraphQL of drafts: a world, agents or scenarios drafted by a model (returned, not stored),
the saving of an edited draft, and draft jobs for large drafts."""

from typing import Any

import strawberry

from parley.core.errors import UserError as Problem
from parley.engine.drafting import WorldDraft
from parley.engine.models import LOCAL_MODEL
from parley.graph.context import Info
from parley.graph.enums import RelationshipType
from parley.graph.episode_types import an_id, when
from parley.graph.fields import copies, creates, reads, shows, stored
from parley.graph.inputs import CreateAgentInput, CreateScenarioInput, fields_of
from parley.graph.payloads import user_errors
from parley.graph.types import UserError
from parley.lifecycle import drafts as jobs
from parley.resolvers import drafts
from parley.resolvers.agents import AGENT
from parley.resolvers.relationships import RELATIONSHIP
from parley.resolvers.scenarios import SCENARIO
from parley.storage import models


@strawberry.type(description="A drafted agent (not stored): Sotopia AgentProfile's fields.")
@reads(AGENT)
class AgentDraft:
    record: strawberry.Private[models.AgentProfile]


@strawberry.type(description="A drafted scenario (not stored), with one goal per seat.")
@reads(SCENARIO)
class ScenarioDraft:
    record: strawberry.Private[models.EnvironmentProfile]


@strawberry.type(description="A drafted relationship between two of the draft's agents.")
class RelationshipDraft:
    agent_index: int = strawberry.field(description="Position of the first agent in `agents`.")
    other_agent_index: int = strawberry.field(description="Position of the second agent.")
    relationship: RelationshipType = strawberry.field(description="The kind of relationship.")
    background_story: str = strawberry.field(description="How the relationship came about.")


@strawberry.type(description="A drafted world, not stored: edit it, then pass it to saveDraft.")
@shows(WorldDraft, held_as="draft")
class Draft:
    draft: strawberry.Private[WorldDraft]

    @strawberry.field(description="The drafted agents, in order.")
    def agents(self) -> list[AgentDraft]:
        return [AgentDraft(record=models.AgentProfile(**a.model_dump())) for a in self.draft.agents]

    @strawberry.field(description="The drafted scenarios, in order.")
    def scenarios(self) -> list[ScenarioDraft]:
        return [
            ScenarioDraft(record=models.EnvironmentProfile(**s.model_dump()))
            for s in self.draft.scenarios
        ]

    relationships = stored("Relationships between the drafted agents.", copies(RelationshipDraft))


@strawberry.type(
    description="Result of a draft: the draft, and what in it breaks the limits of the create "
    "mutations (fields under `draft`), or why there is none (fields under `input`)."
)
class DraftPayload:
    draft: Draft | None = strawberry.field(
        description="The draft, even when some of its fields break the limits; null when the "
        "model gave none."
    )
    user_errors: list[UserError] = strawberry.field(
        description="Problems: fields under `draft` to fix before saving, or why there is no draft."
    )


def _payload(result: drafts.Drafted | None, errors: list[Problem]) -> DraftPayload:
    if result is None:
        return DraftPayload(draft=None, user_errors=user_errors(errors))
    return DraftPayload(draft=Draft(draft=result.draft), user_errors=user_errors(result.errors))


@strawberry.input(description="What to draft: a world of agents, scenarios and relationships.")
class DraftWorldInput:
    prompt: str = strawberry.field(description="The situation, in a sentence or more.")
    model: str = strawberry.field(default=LOCAL_MODEL, description="The model that drafts.")
    agents: int = strawberry.field(default=2, description="Agents to draft, 2..6.")
    scenarios: int = strawberry.field(
        default=1, description="Scenarios to draft (a goal per agent each), 1..10."
    )
    relationship: RelationshipType | None = strawberry.field(
        default=None, description="The relationship every pair and scenario must have."
    )


@strawberry.input(description="A relationship of a draft being saved.")
@creates(RELATIONSHIP)
class DraftRelationshipInput:
    agent_index: int = strawberry.field(description="Position of the first agent in `agents`.")
    other_agent_index: int = strawberry.field(description="Position of the second agent.")


@strawberry.input(description="An edited draft to store, all of it or nothing.")
class SaveDraftInput:
    agents: list[CreateAgentInput] = strawberry.field(
        default_factory=list, description="Agents, as for createAgent."
    )
    scenarios: list[CreateScenarioInput] = strawberry.field(
        default_factory=list, description="Scenarios, as for createScenario."
    )
    relationships: list[DraftRelationshipInput] = strawberry.field(
        default_factory=list, description="Relationships between these agents, by position."
    )


@strawberry.type(description="Result of saveDraft: the new ids, in the draft's order.")
class SaveDraftPayload:
    agent_ids: list[strawberry.ID] = strawberry.field(description="The stored agents.")
    scenario_ids: list[strawberry.ID] = strawberry.field(description="The stored scenarios.")
    relationship_ids: list[strawberry.ID] = strawberry.field(
        description="The stored relationships."
    )
    user_errors: list[UserError] = strawberry.field(description="Why nothing was written.")


@strawberry.input(description="A large draft, run as queued jobs in parts.")
class StartDraftJobInput:
    prompt: str = strawberry.field(description="The situation, in a sentence or more.")
    model: str = strawberry.field(default=LOCAL_MODEL, description="The model that drafts.")
    agents: int = strawberry.field(default=0, description="Agents to draft, 0..50.")
    scenarios: int = strawberry.field(default=0, description="Scenarios to draft, 0..500.")
    agent_ids: list[strawberry.ID] | None = strawberry.field(
        default=None,
        description="Stored agents the scenarios are for (a goal each, in this order); two "
        "seats when omitted.",
    )
    relationship: RelationshipType | None = strawberry.field(
        default=None, description="The relationship every scenario must have."
    )


strawberry.enum(jobs.DraftJobStatus, description="Where a draft job is.")


@strawberry.type(description="How many of a draft job's agents and scenarios are drafted.")
class DraftJobProgress:
    done: int = strawberry.field(description="Drafted (or given up) so far.")
    total: int = strawberry.field(description="Asked for.")


@strawberry.type(description="A large draft run in parts by the workers; kept for a week.")
@shows(jobs.DraftJob, held_as="job")
class DraftJob:
    job: strawberry.Private[jobs.DraftJob]

    id = stored("The id.", an_id)
    status = stored("QUEUED, RUNNING, then COMPLETED or FAILED (some part gave no draft).")
    model = stored("The model that drafts.")
    created_at = stored("When it was queued.", when)

    @strawberry.field(description="Agents and scenarios drafted so far, of how many.")
    def progress(self) -> DraftJobProgress:
        return DraftJobProgress(done=self.job.done, total=self.job.total)

    @strawberry.field(description="What the finished parts drafted, in order (not stored).")
    def result(self) -> Draft:
        return Draft(draft=self.job.result()[0])

    @strawberry.field(
        description="Fields of the result that break the limits, and parts that gave no draft."
    )
    def user_errors(self) -> list[UserError]:
        return user_errors(self.job.result()[1])


@strawberry.type(description="Result of startDraftJob.")
class DraftJobPayload:
    draft_job: DraftJob | None = strawberry.field(description="The job; null on failure.")
    user_errors: list[UserError] = strawberry.field(description="Why nothing was queued.")


def _set(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


@strawberry.type
class DraftMutation:
    @strawberry.mutation(
        description="Ask a model for agents, scenarios with a goal per agent, and the "
        "relationships between the agents; one re-ask when its answer breaks the limits or "
        "does not read as a world (two agents of one name, an MBTI that is not one of the "
        "sixteen types, a situation, goal or story that is not in words). Nothing is stored."
    )
    async def draft_world(self, info: Info, input: DraftWorldInput) -> DraftPayload:
        result, errors = await drafts.draft_world_from(info.context.services.models, vars(input))
        return _payload(result, errors)

    @strawberry.mutation(description="Ask a model for agent profiles (1..10); nothing is stored.")
    async def draft_agents(
        self, info: Info, prompt: str, count: int, model: str | None = None
    ) -> DraftPayload:
        fields = _set({"prompt": prompt, "count": count, "model": model})
        result, errors = await drafts.draft_agents(info.context.services.models, fields)
        return _payload(result, errors)

    @strawberry.mutation(
        description="Ask a model for scenarios (1..10) for these stored agents, a goal each in "
        "their order (two seats without agentIds); nothing is stored."
    )
    async def draft_scenarios(
        self,
        info: Info,
        prompt: str,
        count: int,
        agent_ids: list[strawberry.ID] | None = None,
        model: str | None = None,
    ) -> DraftPayload:
        services = info.context.services
        fields = _set({"prompt": prompt, "count": count, "agent_ids": agent_ids, "model": model})
        result, errors = await drafts.draft_scenarios(services.client, services.models, fields)
        return _payload(result, errors)

    @strawberry.mutation(
        description="Store an edited draft in one step: every agent, scenario and relationship, "
        "or nothing when any part is invalid (as a draft is checked)."
    )
    async def save_draft(self, info: Info, input: SaveDraftInput) -> SaveDraftPayload:
        fields = {
            "agents": [fields_of(a) for a in input.agents],
            "scenarios": [fields_of(s) for s in input.scenarios],
            "relationships": [fields_of(r) for r in input.relationships],
        }
        saved, errors = await drafts.save_draft(info.context.services.client, fields)
        return SaveDraftPayload(
            agent_ids=[strawberry.ID(pk) for pk in saved.agent_ids] if saved else [],
            scenario_ids=[strawberry.ID(pk) for pk in saved.scenario_ids] if saved else [],
            relationship_ids=[strawberry.ID(pk) for pk in saved.relationship_ids] if saved else [],
            user_errors=user_errors(errors),
        )

    @strawberry.mutation(
        description="Draft many agents or scenarios as queued jobs (in parts of 5, on any "
        "worker); follow it with draftJob(id)."
    )
    async def start_draft_job(self, info: Info, input: StartDraftJobInput) -> DraftJobPayload:
        services = info.context.services
        job, errors = await jobs.queue(
            services.client, services.jobs, services.models, _set(vars(input))
        )
        return DraftJobPayload(
            draft_job=DraftJob(job=job) if job else None, user_errors=user_errors(errors)
        )


@strawberry.type
class DraftQuery:
    @strawberry.field(description="A draft job with its progress and result; null if none.")
    async def draft_job(self, info: Info, id: strawberry.ID) -> DraftJob | None:
        job = await jobs.get_draft_job(info.context.services.client, id)
        return DraftJob(job=job) if job else None
