"""An episode's setup for the engine, read from the records it names."""

from typing import Any

from aredis_om import NotFoundError
from pydantic import ValidationError

from parley.core.wording import summary
from parley.engine.types import (
    SOTOPIA_DIMENSIONS,
    AgentSpec,
    DimensionSpec,
    EpisodeSetup,
    RelationshipSpec,
    ScenarioSpec,
)
from parley.resolvers.dimensions import names_problem
from parley.storage.models import (
    AgentProfile,
    CustomEvaluationDimension,
    CustomEvaluationDimensionList,
    EnvironmentProfile,
    EpisodeLog,
    RelationshipProfile,
)


class SetupError(Exception):
    """A stored episode refers to records that no longer exist or do not fit."""


async def load_setup(episode: EpisodeLog) -> EpisodeSetup:
    """The engine's plain data for an episode: its scenario, agents, relationships, dimensions."""
    try:
        scenario = await EnvironmentProfile.get(episode.environment)
        agents = [await AgentProfile.get(pk) for pk in episode.agents]
        pairs = RelationshipProfile.find(
            RelationshipProfile.agent_1_id << episode.agents,  # type: ignore[operator]
        )
        relationships = [
            r
            for r in await pairs.all()
            if r.agent_2_id in episode.agents and r.agent_1_id != r.agent_2_id
        ]
        models = list(episode.models or [])
        models += [""] * (1 + len(agents) - len(models))  # a record that names no models
        humans = [seat.seat for seat in episode.human_seats]
        panel = episode.panel()  # models[0] names it: a judge, or a panel's label
        stand_in = episode.stand_in_model or panel.judges[0].model
        return EpisodeSetup(
            scenario=ScenarioSpec.model_validate(scenario_of(episode, scenario)),
            agents=[AgentSpec.model_validate(f) for f in agents_of(episode, agents)],
            relationships=[RelationshipSpec.model_validate(r.model_dump()) for r in relationships],
            judge_model=panel.judges[0].model,
            panel=panel,
            agent_models=[stand_in if i in humans else m for i, m in enumerate(models[1:])],
            # Sotopia stores no turn limit: its episodes are read with as many as they played
            max_turns=episode.max_turns or max(len(episode.messages), 1),
            turn_order=episode.turn_order,
            dimensions=await load_dimensions(episode.evaluation_dimension_list_id),
            human_seats=humans,
            stand_ins=episode.stand_ins,
        )
    except NotFoundError:
        raise SetupError(
            "a scenario, agent or dimension list of this episode was deleted"
        ) from None
    except ValidationError as err:
        raise SetupError(
            f"the stored records do not make a valid episode: {summary(err)}"
        ) from None


def scenario_of(episode: EpisodeLog, scenario: EnvironmentProfile) -> dict[str, Any]:
    """The scenario's fields as this episode plays it: a fork's goal edits applied."""
    fields = scenario.model_dump()
    edits = episode.fork_change.goals if episode.fork_change else []
    if edits:
        goals = list(fields["agent_goals"])
        goals += [""] * (len(episode.agents) - len(goals))
        for edit in edits:
            goals[edit.seat] = edit.goal
        fields["agent_goals"] = goals
    return fields


def agents_of(episode: EpisodeLog, agents: list[AgentProfile]) -> list[dict[str, Any]]:
    """The agents' fields as this episode plays them: a fork's profile edits applied."""
    fields = [agent.model_dump() for agent in agents]
    for edit in episode.fork_change.profiles if episode.fork_change else []:
        fields[edit.seat].update(edit.changes())
    return fields


async def load_dimensions(list_id: str | None) -> list[DimensionSpec]:
    if list_id is None:
        return list(SOTOPIA_DIMENSIONS)
    record = await CustomEvaluationDimensionList.get(list_id)
    dims = [await CustomEvaluationDimension.get(pk) for pk in record.dimension_pks]
    problem = names_problem([d.name for d in dims])
    if problem is not None:  # a list changed by another writer since the episode was started
        raise SetupError(f"evaluation dimension list {list_id!r}: {problem}")
    return [DimensionSpec.model_validate(d.model_dump()) for d in dims]
