"""A TOML design's shape is checked before it is sent, in the file's words."""

import math

import pytest

from parley.client.experiment import design_problems

DESIGN = {
    "scenarios": {"ids": ["s"]},
    "agents": {"sample": "uniform", "seed": 1, "pairs_per_scenario": 1},
    "models": {"compare": ["m"], "partner": "m"},
    "judge_model": "m",
}


def test_a_sound_design_has_no_problems() -> None:
    assert design_problems({**DESIGN, "budget": 2.5}) == []


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_a_budget_or_precision_that_is_no_finite_number_is_refused(value: float) -> None:
    # TOML spells them `nan` and `inf`; `nan` failed as "must be at most 1000000.0"
    assert design_problems({**DESIGN, "budget": value}) == [
        f"design.budget: must be a finite number, not {value!r}"
    ]
    precise = {**DESIGN, "repeats": 2, "precision": {"half_width": value}}
    assert design_problems(precise) == [
        f"design.precision.half_width: must be a finite number, not {value!r}"
    ]
