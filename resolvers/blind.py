"""An episode as a rater sees it: blind to who played it and how it was judged.

A rater reads the scenario, each agent's public profile and goal, and the whole conversation
(private messages marked as such, the environment's messages in their place), as Sotopia's
human raters read an episode. The agents' secrets are shown only when the rubric asks about
them (a dimension named `secret`, as Sotopia's seven have): that one cannot be rated without
them. Never shown: the models, the judge's scores and reasoning, the episode's tag, id and
status.
"""

from dataclasses import dataclass, field

import redis.asyncio as redis

from parley.engine.types import ActionType, DimensionSpec
from parley.resolvers.agents import get_agents
from parley.resolvers.names import agent_name
from parley.resolvers.scenarios import get_scenarios
from parley.resolvers.transcript import episode_turns
from parley.storage.models import EpisodeLog

SECRET_DIMENSION = "secret"
ENVIRONMENT = "Environment"


def needs_secrets(rubric: list[DimensionSpec]) -> bool:
    """Whether raters must see the agents' secrets to rate on this rubric."""
    return any(d.name == SECRET_DIMENSION for d in rubric)


@dataclass(frozen=True)
class BlindAgent:
    name: str
    age: int
    occupation: str
    gender_pronoun: str
    public_info: str
    personality: str
    goal: str
    secret: str
    """"" unless the study shows secrets."""


@dataclass(frozen=True)
class BlindTurn:
    turn: int
    speaker: str
    """An agent's name, or the Environment's for an environment message."""
    action_type: ActionType | None
    """None for an environment message."""
    text: str
    to: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class BlindEpisode:
    scenario: str
    agents: list[BlindAgent]
    turns: list[BlindTurn]


def _turns(episode: EpisodeLog) -> list[BlindTurn]:
    """The turns and the delivered environment messages, in the order the agents met them."""
    ordered: list[tuple[int, int, BlindTurn]] = [
        (t.turn, 1, BlindTurn(t.turn, t.agent_name, t.action_type, t.argument, list(t.to)))
        for t in episode_turns(episode)
    ]
    ordered += [
        (i.turn, 0, BlindTurn(i.turn, ENVIRONMENT, None, i.text, list(i.to)))
        for i in episode.injections
        if i.turn is not None
    ]
    return [item for _, _, item in sorted(ordered, key=lambda entry: entry[:2])]


async def blind_episode(client: redis.Redis, episode: EpisodeLog, secrets: bool) -> BlindEpisode:
    """What a rater sees of `episode` (an agent or scenario deleted since shows as empty)."""
    (scenario,) = await get_scenarios(client, [episode.environment])
    goals = scenario.agent_goals if scenario else []
    agents = await get_agents(client, list(episode.agents))
    shown = [
        BlindAgent(
            name=agent_name(a) if a else f"Agent {i + 1}",
            age=a.age if a else 0,
            occupation=a.occupation if a else "",
            gender_pronoun=a.gender_pronoun if a else "",
            public_info=a.public_info if a else "",
            personality=a.personality_and_values if a else "",
            goal=goals[i] if i < len(goals) else "",
            secret=a.secret if a and secrets else "",
        )
        for i, a in enumerate(agents)
    ]
    return BlindEpisode(scenario.scenario if scenario else "", shown, _turns(episode))
