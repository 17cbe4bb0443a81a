"""Per-request context: the process's services, and batched record loaders."""

from dataclasses import dataclass, field
from typing import Any

from strawberry.dataloader import DataLoader
from strawberry.types import Info as StrawberryInfo

from engine.llm import ModelRegistry
from resolvers.agents import get_agents
from resolvers.simulations import Services
from storage.hub import EventHub
from storage.models import AgentProfile


def agent_loader() -> DataLoader[str, AgentProfile | None]:
    return DataLoader(load_fn=get_agents, cache=False)


@dataclass
class Runtime:
    """What the app's lifespan starts once per process and every request shares."""

    services: Services
    hub: EventHub
    registry: ModelRegistry


@dataclass
class Context:
    """Made for each HTTP request and each websocket connection."""

    runtime: Runtime
    connection_params: dict[str, Any] | None = None
    agents: DataLoader[str, AgentProfile | None] = field(default_factory=agent_loader)


Info = StrawberryInfo[Context, Any]
