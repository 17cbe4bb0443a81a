"""How `parley experiment run --estimate` prints an estimate, and the exit status of a run that
a budget or a precision stopped."""

from typing import Any

from parley.client.estimate import report, span
from parley.client.experiment import BUDGET_REACHED, COMPLETED, UNFINISHED, exit_status


def progress(**fields: Any) -> dict[str, Any]:
    base = {"total": 8, "held": 0, "notReached": 0, "completed": 8, "unjudged": 0, "stopped": None}
    return {**base, **fields}


def test_a_figure_is_shown_with_its_range_or_says_the_range_is_unknown() -> None:
    assert span({"expected": 1234.4, "low": 1000.0, "high": 1500.6}) == (
        "1,234 (95% range 1,000 to 1,501)"
    )
    assert span({"expected": 0.5, "low": 0.25, "high": 0.75}, money=True) == (
        "$0.5000 (95% range $0.2500 to $0.7500)"
    )
    assert span({"expected": 3.0, "low": None, "high": None}).endswith("no kind recorded twice)")
    assert span(None) == "unknown"


def test_the_report_names_what_is_not_covered_and_an_unpriced_cost() -> None:
    estimate = {
        "episodes": 8,
        "covered": 4,
        "comparable": 3,
        "uncovered": [["j", "a", "b"]],
        "calls": {"expected": 24.0, "low": 20.0, "high": 28.0},
        "tokens": {"expected": 4000.0, "low": 3000.0, "high": 5000.0},
        "cost": None,
    }
    said = report({"estimate": estimate, "budget": 2.0})
    assert "estimate for 4 of 8 episodes, from 3 recorded comparable episodes" in said
    assert "no cost: a model of the design has no prices" in said
    assert "budget       $2.0000" in said and "not covered: j / a / b" in said


def test_exit_status_of_a_stopped_run() -> None:
    assert exit_status(progress()) == COMPLETED
    assert exit_status(progress(completed=7)) == UNFINISHED
    assert exit_status(progress(completed=3, held=5, stopped="PRECISION")) == COMPLETED
    assert exit_status(progress(completed=3, held=5, stopped="BUDGET")) == BUDGET_REACHED
    assert exit_status(progress(unjudged=1)) == UNFINISHED
    assert exit_status(progress(completed=3, held=5, stopped="CANCELLED")) == UNFINISHED
