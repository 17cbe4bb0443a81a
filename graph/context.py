"""Per-request context: batched record loaders, so a list of N items costs one round of reads."""

from dataclasses import dataclass, field
from typing import Any

from strawberry.dataloader import DataLoader
from strawberry.types import Info as StrawberryInfo

from resolvers.agents import get_agents
from storage.models import AgentProfile


def agent_loader() -> DataLoader[str, AgentProfile | None]:
    return DataLoader(load_fn=get_agents)


@dataclass
class Context:
    """What every resolver can reach; made fresh for each HTTP request."""

    agents: DataLoader[str, AgentProfile | None] = field(default_factory=agent_loader)


Info = StrawberryInfo[Context, Any]
