"""A small world for experiments and a design over it, shared by the experiment tests."""

from typing import Any

from parley.storage.models import AgentProfile, EnvironmentProfile


async def experiment_world(tag: str, agents: int = 3) -> tuple[list[str], list[str]]:
    """Two scenarios (the first assumes FRIEND, the second STRANGER) and `agents` agents."""
    people = [AgentProfile(first_name=f"Exp{i}", last_name=tag, tag=tag) for i in range(agents)]
    for person in people:
        await person.save()
    scenarios = [
        EnvironmentProfile(
            codename=f"{tag}_{kind}",
            scenario="Two people plan a trip.",
            agent_goals=["Go to the sea", "Go to the hills"],
            relationship=kind,
            tag=tag,
        )
        for kind in (3, 0)
    ]
    for scenario in scenarios:
        await scenario.save()
    return [str(s.pk) for s in scenarios], [str(p.pk) for p in people]


def sampled_design(
    scenarios: list[str], model: str, tag: str | None = None, **extra: Any
) -> dict[str, Any]:
    """Two uniformly sampled pairs per scenario (among the agents with `tag`, when given), `model`
    against itself in both seats: 2 x 2 x 2 = 8 episodes per repeat (GraphQL field names)."""
    agents: dict[str, Any] = {"sample": "UNIFORM", "seed": 7, "pairsPerScenario": 2}
    if tag is not None:
        agents["tag"] = tag
    return {
        "scenarios": {"ids": scenarios},
        "agents": agents,
        "models": {"compare": [model], "partner": model},
        "maxTurns": 2,
        "judgeModel": model,
        **extra,
    }


class Worlds:
    """Makes experiment worlds and deletes them again, so tests leave no agents behind (the web
    app's agent filter lists the first page of them)."""

    def __init__(self) -> None:
        self.made: list[tuple[list[str], list[str]]] = []

    async def __call__(self, tag: str, agents: int = 3) -> tuple[list[str], list[str]]:
        scenarios, people = await experiment_world(tag, agents)
        self.made.append((scenarios, people))
        return scenarios, people

    async def drop(self) -> None:
        for scenarios, people in self.made:
            for pk in scenarios:
                await EnvironmentProfile.delete(pk)
            for pk in people:
                await AgentProfile.delete(pk)
