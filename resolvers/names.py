"""How agents are told apart in an episode: by the name its transcript addresses them by."""

from collections.abc import Sequence

from parley.storage.models import AgentProfile


def agent_name(agent: AgentProfile) -> str:
    """The name an agent goes by in transcripts: its first and last name."""
    return f"{agent.first_name} {agent.last_name}".strip()


def same_names(names: Sequence[str]) -> list[tuple[int, int]]:
    """(earlier, later) positions of agents that go by the same name: an episode cannot seat
    both, since its transcript and its private messages name agents. "" (unknown) is never a
    clash."""
    first: dict[str, int] = {}
    clashes = []
    for position, name in enumerate(names):
        if not name:
            continue
        if name in first:
            clashes.append((first[name], position))
        else:
            first[name] = position
    return clashes
