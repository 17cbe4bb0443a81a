"""Every message built from a pydantic ValidationError is in plain words: each validation model
of the service and lifecycle layers is walked with bad values, and no message carries
pydantic's phrasing or a link to its documentation; the start form's empty agent list reads as
a person would say it."""

import importlib
import pkgutil
import re
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

import parley.lifecycle as lifecycle
import parley.resolvers as resolvers
from bench.support.simulation import make_world
from parley.core.errors import from_validation
from parley.engine.errors import UnknownModelError
from parley.engine.games import game_problems
from parley.engine.models import load_models_file
from parley.resolvers.drafts import check_parts
from parley.resolvers.episode_setup import SetupError, load_setup
from parley.resolvers.importer import parse_line
from parley.resolvers.sotopia_format import LineError
from parley.storage.models import AgentProfile, EpisodeLog, EpisodeStatus
from tests.support.server import GraphQLClient

PYDANTIC = re.compile(
    r"should (be|have|match)|after validation|Field required|Extra inputs|Value error|"
    r"Assertion failed|Input should|String should|List should|valid (integer|number|string|"
    r"dictionary|list|boolean)|pydantic|https?://|\[type=",
    re.I,
)
BAD_VALUES: list[Any] = [
    None,
    "",
    "   ",
    "x" * 30_000,
    "bad id!",
    -1,
    10**12,
    1.5,
    True,
    [],
    ["x"] * 2_000,
    [None],
    {"unknown": 1},
    {"nested": {"deeper": [1, 2]}},
]


def validation_models() -> list[type[BaseModel]]:
    """The pydantic models the service and lifecycle layers validate input with: every model
    their modules define or build (create_model), not the stored records or the engine's."""
    found: dict[str, type[BaseModel]] = {}
    for package in (resolvers, lifecycle):
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            for value in vars(module).values():
                if not (isinstance(value, type) and issubclass(value, BaseModel)):
                    continue
                if value.__module__.split(".")[:2] in (
                    ["parley", "resolvers"],
                    ["parley", "lifecycle"],
                ):
                    found[f"{value.__module__}.{value.__qualname__}"] = value
    return [found[name] for name in sorted(found)]


MODELS = validation_models()


def messages(model: type[BaseModel], values: dict[str, Any]) -> list[str]:
    try:
        model(**values)
    except ValidationError as err:
        return [e.message for e in from_validation(err)]
    return []


def test_the_walk_finds_the_validation_models() -> None:
    names = {model.__name__ for model in MODELS}
    assert {
        "SimulationFields",
        "Design",
        "ExperimentFields",
        "NewAgent",
        "AgentFields",
        "NewScenario",
        "NewRelationship",
        "DraftWorldFields",
        "SaveFields",
        "DraftJobFields",
        "RejudgeFields",
        "SlotPartLine",
    } <= names


@pytest.mark.parametrize("model", MODELS, ids=lambda m: f"{m.__module__}.{m.__name__}")
def test_no_pydantic_phrasing_reaches_a_user(model: type[BaseModel]) -> None:
    said: list[str] = [*messages(model, {}), *messages(model, {"no_such_field": 1})]
    for name in model.model_fields:
        for value in BAD_VALUES:
            said += messages(model, {name: value})
    assert said, f"{model.__name__} refused none of the bad values"
    for message in said:
        assert message.strip(), model
        assert not PYDANTIC.search(message), (model.__name__, message)


def test_import_lines_and_draft_parts_say_it_plainly() -> None:
    reasons = []
    for line in (
        '{"agent_id": "a1", "first_name": "", "last_name": 5, "age": "old", "extra": 1}',
        '{"env_id": "bad id!", "scenario": "", "agent_goals": ["only one"]}',
        '{"experiment_slots": "x", "first": -1, "slot_count": 0, "slots": []}',
        '{"experiment_id": "e1", "name": "", "design": {"agents": {}}, "slot_count": -1}',
    ):
        with pytest.raises(LineError) as refused:
            parse_line(line)
        reasons.append(str(refused.value))
    _, problems = check_parts(
        [{"first_name": "", "age": 400, "mbti": ".1,1"}, {"first_name": 7}],
        [{"scenario": "", "agent_goals": []}],
        [{"agent_index": "x"}],
    )
    reasons += [message for _, message in problems]
    game = {"format": "parley.game/1", "phases": [{"name": 3}], "colour": "red"}
    reasons += [message for _, message in game_problems(game, 2)]
    assert len(reasons) > 10
    for reason in reasons:
        assert not PYDANTIC.search(reason), reason


def test_a_models_file_with_bad_values_is_refused_in_plain_words(tmp_path: Any) -> None:
    path = tmp_path / "models.json"
    path.write_text('{"models": [{"name": "", "base_url": 3, "prompt_price": "lots"}]}')
    with pytest.raises(UnknownModelError) as refused:
        load_models_file(path)
    assert "models[0]" in str(refused.value)
    assert not PYDANTIC.search(str(refused.value)), refused.value


START = """
mutation($input: StartSimulationInput!) {
  startSimulation(input: $input) { episode { id } userErrors { field message code } }
}"""


async def test_picking_no_agents_says_so_in_words(gql: GraphQLClient, unchanged: Any) -> None:
    async with unchanged():
        data = await gql.data(START, {"input": {"scenarioId": "s", "agentIds": []}})
    [error] = data["startSimulation"]["userErrors"]
    assert error == {
        "field": ["input", "agentIds"],
        "message": "pick at least 2 agents (0 given)",
        "code": "INVALID",
    }


async def test_an_episode_whose_agents_became_namesakes_fails_naming_them(
    redis_client: Any,
) -> None:
    """Renamed after the start (no relationship joins them), two agents of one name reach the
    engine: the episode's failure names them, in words, with no link."""
    scenario, agents = await make_world("renamed")
    second = await AgentProfile.get(agents[1])
    second.first_name = "Ava0"  # agents[0]'s name
    await second.save()
    episode = EpisodeLog(
        environment=scenario, agents=agents, models=["m", "m", "m"], status=EpisodeStatus.QUEUED
    )
    with pytest.raises(SetupError) as failed:
        await load_setup(episode)
    assert str(failed.value) == (
        "the stored records do not make a valid episode: two agents are named 'Ava0 renamed': "
        "each agent of an episode needs a name of its own (transcripts address agents by name)"
    )
