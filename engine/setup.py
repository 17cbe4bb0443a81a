"""Turning stored records into the engine's plain data (the only engine module reading Redis)."""

from aredis_om import NotFoundError
from pydantic import ValidationError

from engine.types import (
    SOTOPIA_DIMENSIONS,
    AgentSpec,
    DimensionSpec,
    EpisodeSetup,
    RelationshipSpec,
    ScenarioSpec,
)
from storage.models import (
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
    """The episode's setup from its scenario, agents, relationships and dimensions."""
    try:
        return await _load(episode)
    except NotFoundError:
        raise SetupError(
            "a scenario, agent or dimension list of this episode was deleted"
        ) from None
    except ValidationError as err:
        raise SetupError(f"the stored records do not make a valid episode: {err}") from None


async def _load(episode: EpisodeLog) -> EpisodeSetup:
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
    return EpisodeSetup(
        scenario=ScenarioSpec(
            pk=str(scenario.pk),
            codename=scenario.codename,
            scenario=scenario.scenario,
            agent_goals=scenario.agent_goals,
            relationship=scenario.relationship,
        ),
        agents=[AgentSpec.model_validate(a.model_dump()) for a in agents],
        relationships=[RelationshipSpec.model_validate(r.model_dump()) for r in relationships],
        judge_model=models[0],
        agent_models=models[1:],
        max_turns=episode.max_turns,
        turn_order=episode.turn_order,
        dimensions=await load_dimensions(episode.evaluation_dimension_list_id),
    )


async def load_dimensions(list_id: str | None) -> list[DimensionSpec]:
    if list_id is None:
        return list(SOTOPIA_DIMENSIONS)
    record = await CustomEvaluationDimensionList.get(list_id)
    dims = [await CustomEvaluationDimension.get(pk) for pk in record.dimension_pks]
    return [
        DimensionSpec(
            name=d.name, description=d.description, range_low=d.range_low, range_high=d.range_high
        )
        for d in dims
    ]
