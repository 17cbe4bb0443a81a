"""Per-request context: the process's services, and batched record loaders."""

from dataclasses import dataclass, field
from typing import Any

from strawberry.dataloader import DataLoader
from strawberry.types import Info as StrawberryInfo

from parley.lifecycle.raters import RaterHolder
from parley.lifecycle.seats import SeatHolder
from parley.lifecycle.services import Services
from parley.resolvers.agents import get_agents
from parley.resolvers.scenarios import get_scenarios
from parley.storage.models import AgentProfile, EnvironmentProfile


@dataclass
class Context:
    """Made for each HTTP request and each websocket connection."""

    services: Services
    connection_params: dict[str, Any] | None = None
    seat: SeatHolder | None = None
    """Authorized by a seat credential alone: only that seat's fields (graph/seat_access.py)."""
    rater: RaterHolder | None = None
    """Authorized by a rater credential alone: only that rater's fields (graph/rater_access.py)."""
    agents: DataLoader[str, AgentProfile | None] = field(init=False)
    scenarios: DataLoader[str, EnvironmentProfile | None] = field(init=False)

    @property
    def seat_only(self) -> bool:
        return self.seat is not None

    @property
    def scoped(self) -> bool:
        """Authorized by a seat's or a rater's credential alone."""
        return self.seat is not None or self.rater is not None

    def __post_init__(self) -> None:
        async def load(pks: list[str]) -> list[AgentProfile | None]:
            return await get_agents(self.services.client, pks)

        async def load_scenarios(pks: list[str]) -> list[EnvironmentProfile | None]:
            return await get_scenarios(self.services.client, pks)

        self.agents = DataLoader(load_fn=load, cache=False)
        self.scenarios = DataLoader(load_fn=load_scenarios, cache=False)


Info = StrawberryInfo[Context, Any]
