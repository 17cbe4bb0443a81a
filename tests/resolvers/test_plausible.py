"""A drafted world that keeps to every limit and still does not read as one is caught."""

from parley.resolvers.plausible import (
    agent_problems,
    is_name,
    is_prose,
    relationship_problems,
    scenario_problems,
)


def test_prose_is_words_not_dates_numbers_or_identifiers() -> None:
    assert is_prose("Two friends split a dinner bill", 3)
    for not_prose in ("2024-05-01 18:00", "1 2 3 4 5", "agent_role_goals", "Go now"):
        assert not is_prose(not_prose, 3), not_prose


def test_a_name_is_letters_without_digits_or_underscores() -> None:
    assert is_name("Zoë O'Neil")
    assert not any(is_name(s) for s in ("agent1", "first_name", "42", ""))


def test_agents_with_a_bad_mbti_a_placeholder_name_or_a_name_taken_are_reported() -> None:
    agents = [
        {"first_name": "Ann", "last_name": "Lee", "mbti": "intj"},
        {"first_name": "agent2", "last_name": "Lee", "mbti": ".1,1"},
        {"first_name": "Ann", "last_name": "Lee", "mbti": "ESFP"},
    ]
    assert [where for where, _ in agent_problems(agents)] == [
        ["agents", "1", "mbti"],
        ["agents", "1", "first_name"],
        ["agents", "2", "first_name"],
    ]
    assert "named 'Ann Lee' too" in agent_problems(agents)[-1][1]


def test_situations_goals_and_stories_are_said_in_words() -> None:
    scenarios = [
        {"scenario": "2024-05-01", "agent_goals": ["Get a refund for the broken lamp", "123"]},
        {"scenario": "A landlord and a tenant discuss the rent", "agent_goals": []},
    ]
    assert [where for where, _ in scenario_problems(scenarios)] == [
        ["scenarios", "0", "scenario"],
        ["scenarios", "0", "agent_goals", "1"],
    ]
    stories = [{"background_story": "Met at school"}, {"background_story": "1999"}, {}]
    assert [where for where, _ in relationship_problems(stories)] == [
        ["relationships", "1", "background_story"]
    ]
