"""Agents in an episode go by their names: the same name twice is a clash, an unknown one never."""

from parley.resolvers.names import agent_name, same_names
from parley.storage.models import AgentProfile


def test_an_agent_goes_by_first_and_last_name() -> None:
    assert agent_name(AgentProfile(first_name="Ann", last_name="Lee")) == "Ann Lee"
    assert agent_name(AgentProfile(first_name="Plato", last_name="")) == "Plato"


def test_each_later_agent_of_an_earlier_name_is_a_clash() -> None:
    names = ["Ann Lee", "Bo", "Ann Lee", "", "Bo", "", "Ann Lee"]
    assert same_names(names) == [(0, 2), (1, 4), (0, 6)]


def test_distinct_names_do_not_clash() -> None:
    assert same_names(["Ann Lee", "Ann", "Lee"]) == []
