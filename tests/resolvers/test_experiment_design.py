"""The expansion of a design into slots, without Redis: deterministic, in both model modes,
and drawing agent pairs as Sotopia's samplers do."""

import random
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from parley.core.errors import ErrorCode
from parley.resolvers.experiment_design import Arm, Design, World, arm_errors, expand
from parley.storage.models import EnvironmentProfile, RelationshipProfile


def scenario(pk: str, relationship: int = 0) -> EnvironmentProfile:
    return EnvironmentProfile(
        pk=pk, scenario="s", agent_goals=["a", "b"], relationship=relationship
    )


SCENARIOS = [scenario(f"s{i}", relationship=i % 2) for i in range(4)]
AGENTS = [f"a{i}" for i in range(6)]
RELATIONSHIPS = [
    RelationshipProfile(pk=f"r{i}", agent_1_id=f"a{i}", agent_2_id=f"a{i + 1}", relationship=i % 2)
    for i in range(5)
]


def design(**agents: object) -> Design:
    return Design(
        scenarios={"tag": "t"},
        agents={"sample": "uniform", "seed": 5, "pairs_per_scenario": 3, **agents},
        models={"compare": ["m1", "m2"], "partner": "p"},
        repeats=2,
    )


def drawn(world: World, plan: Design) -> list[tuple[str, tuple[str, ...], tuple[str, ...], int]]:
    slots, errors = expand(plan, world)
    assert errors == []
    return [(s.scenario_id, tuple(s.agent_ids), tuple(s.agent_models), s.repeat) for s in slots]


@settings(max_examples=25, deadline=None)
@given(st.randoms(use_true_random=False), st.sampled_from(["uniform", "relationship"]))
def test_slots_do_not_depend_on_the_order_records_are_read_in(
    rng: random.Random, sample: str
) -> None:
    plan = design(sample=sample)
    reference = drawn(World.of(SCENARIOS, AGENTS, RELATIONSHIPS), plan)
    scenarios, agents, relationships = SCENARIOS[:], AGENTS[:], RELATIONSHIPS[:]
    rng.shuffle(scenarios)
    rng.shuffle(agents)
    rng.shuffle(relationships)
    assert drawn(World.of(scenarios, agents, relationships), plan) == reference


def test_another_seed_draws_other_pairs_and_one_scenario_draws_alone() -> None:
    world = World.of(SCENARIOS, AGENTS, RELATIONSHIPS)
    assert drawn(world, design()) != drawn(world, design(seed=6))
    fewer = World.of(SCENARIOS[:1], AGENTS, RELATIONSHIPS)
    first = [s for s in drawn(world, design()) if s[0] == "s0"]
    assert drawn(fewer, design()) == first  # each scenario's draw is its own


def test_compare_mode_puts_each_model_in_both_seats_against_the_partner() -> None:
    slots, _ = expand(design(), World.of(SCENARIOS, AGENTS, RELATIONSHIPS))
    assert len(slots) == 4 * 3 * 4 * 2  # scenarios x pairs x (2 models x 2 seats) x repeats
    seatings = Counter((tuple(s.agent_models), s.model, s.seat) for s in slots)
    assert seatings == {
        (("m1", "p"), "m1", 0): 24,
        (("p", "m1"), "m1", 1): 24,
        (("m2", "p"), "m2", 0): 24,
        (("p", "m2"), "m2", 1): 24,
    }
    # every seating of one draw meets the same pair
    by_draw: dict[tuple[str, int], set[tuple[str, ...]]] = {}
    for i, s in enumerate(slots):
        by_draw.setdefault((s.scenario_id, i // 8), set()).add(tuple(s.agent_ids))
    assert all(len(pairs) == 1 for pairs in by_draw.values())


def test_seats_mode_uses_the_given_models_per_seat() -> None:
    plan = Design(
        scenarios={"ids": ["s1", "s0"]},
        agents={"pairs": [["a0", "a1"]]},
        models={"seats": [["x", "y"], ["y", "y"]]},
    )
    slots, _ = expand(plan, World.of(SCENARIOS[:2][::-1], [], [], keep_order=True))
    assert [(s.scenario_id, s.agent_models, s.seat) for s in slots] == [
        ("s1", ["x", "y"], None),
        ("s1", ["y", "y"], None),
        ("s0", ["x", "y"], None),
        ("s0", ["y", "y"], None),
    ]


def test_relationship_sampling_draws_only_pairs_of_the_scenarios_kind() -> None:
    plan = design(sample="relationship", pairs_per_scenario=2)
    slots, _ = expand(plan, World.of(SCENARIOS, AGENTS, RELATIONSHIPS))
    kinds = {str(r.agent_1_id) + str(r.agent_2_id): r.relationship for r in RELATIONSHIPS}
    for s in slots:
        wanted = next(x.relationship for x in SCENARIOS if x.pk == s.scenario_id)
        assert kinds["".join(s.agent_ids)] == wanted
    # without replacement while there are enough: two different pairs per scenario
    for pk in ("s0", "s1"):
        assert len({tuple(s.agent_ids) for s in slots if s.scenario_id == pk}) == 2


def test_no_matching_relationship_is_an_error_naming_the_scenario() -> None:
    only_strangers = [r for r in RELATIONSHIPS if r.relationship == 0]
    slots, errors = expand(
        design(sample="relationship"), World.of(SCENARIOS, AGENTS, only_strangers)
    )
    assert slots == [] and len(errors) == 2
    assert "KNOW_BY_NAME" in errors[0].message and "'s1'" in errors[0].message


# Agents of one name cannot meet: an episode's transcript tells its agents apart by name.
NAMES = {"a0": "Sam Lee", "a1": "Sam Lee", "a2": "Sam Lee", "a3": "Ida Berg", "a4": "Per Dahl"}


def test_uniform_sampling_never_draws_two_agents_of_one_name_and_stays_deterministic() -> None:
    world = World.of(SCENARIOS, list(NAMES), [], names=NAMES)
    plan = design(pairs_per_scenario=100)
    slots, errors = expand(plan, world)
    assert errors == [] and len(slots) == 4 * 100 * 4 * 2
    assert all(NAMES[a] != NAMES[b] for a, b in (s.agent_ids for s in slots))
    assert {a for s in slots for a in s.agent_ids} == set(NAMES)  # every agent still drawn
    assert drawn(World.of(SCENARIOS, list(NAMES)[::-1], [], names=NAMES), plan) == drawn(
        world, plan
    )


def test_uniform_sampling_among_agents_of_one_name_is_refused() -> None:
    same = {"a0": "Sam Lee", "a1": "Sam Lee"}
    slots, errors = expand(design(), World.of(SCENARIOS[:1], list(same), [], names=same))
    assert slots == []
    [error] = errors
    assert error.field == ["input", "design", "agents"]
    assert (
        error.message == "uniform sampling needs two agents with different names: all are 'Sam Lee'"
    )


def test_relationship_sampling_leaves_out_relationships_of_two_agents_of_one_name() -> None:
    # r0 (a0-a1) and r2 (a2-a3)... r0 joins two Sam Lees: a STRANGER scenario draws r2 or r4
    plan = design(sample="relationship", pairs_per_scenario=50)
    slots, errors = expand(plan, World.of(SCENARIOS, list(NAMES), RELATIONSHIPS, names=NAMES))
    assert errors == []
    assert all(NAMES.get(a) != NAMES.get(b) for a, b in (s.agent_ids for s in slots))
    assert ["a0", "a1"] not in [s.agent_ids for s in slots]
    only_twins = [r for r in RELATIONSHIPS if r.pk in ("r0", "r1")]  # a0-a1 STRANGER, a1-a2 KNOW
    slots, errors = expand(plan, World.of(SCENARIOS, list(NAMES), only_twins, names=NAMES))
    assert slots == [] and len(errors) == 4
    assert errors[0].message == (
        "every stored relationship that is STRANGER, as scenario 's0' needs, joins two agents "
        "of the same name"
    )


def test_arm_names_are_told_apart_regardless_of_letter_case() -> None:
    """The results index matches an arm's name as a tag, without regard to case."""
    arms = [
        {"name": "Alarm", "at_turn": 1, "inject": {"text": "Fire!"}},
        {"name": "alarm", "at_turn": 2, "inject": {"text": "Smoke."}},
        {"name": "calm", "at_turn": 2, "goals": [{"seat": 0, "goal": "Stay calm."}]},
    ]
    plan = design().model_copy(update={"arms": [Arm.model_validate(a) for a in arms]})
    errors = arm_errors(plan)
    assert [(e.field, e.code) for e in errors] == [
        (["input", "design", "arms", "1", "name"], ErrorCode.INVALID)
    ]
    assert "name each arm once" in errors[0].message
