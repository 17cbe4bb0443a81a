"""Scores as an episode, a re-judging or a rating keeps them."""

from parley.engine.types import OVERALL_SCORE


def reward(goal: float, **more: float) -> tuple[float, dict[str, float]]:
    """One agent's scores: `goal`, any `more` dimensions, and `goal` as the overall score."""
    return (goal, {"goal": goal, **more, OVERALL_SCORE: goal})
