"""The arithmetic of a rating study: who rates which episode, in what order, a rating as
Sotopia's rewards, and a gold episode's check. Pure functions of their arguments."""

import random
from collections.abc import Mapping, Sequence

from parley.engine.types import OVERALL_SCORE, DimensionSpec
from parley.storage.models import GoldEpisode
from parley.storage.studies import GoldCheck, GoldMiss

Scores = Mapping[tuple[int, str], int]
"""A rating: (agent, dimension) -> score."""


def assign(episodes: int, raters: int, per_episode: int) -> list[list[int]]:
    """Each rater's episodes (by number), every episode given to `per_episode` distinct raters
    taking turns in a circle, so that each rater has as many as any other, give or take one."""
    given: list[list[int]] = [[] for _ in range(raters)]
    for episode in range(episodes):
        for j in range(per_episode):
            given[(episode * per_episode + j) % raters].append(episode)
    return given


def with_gold(assigned: Sequence[int], gold: Sequence[int]) -> list[int]:
    """A rater's episodes and every gold episode (each once)."""
    return [*assigned, *(g for g in gold if g not in assigned)]


def shuffled(episodes: Sequence[int], study_id: str, rater: int) -> list[int]:
    """The rater's episodes in their own order: shuffled, the same for the same study and rater
    (seeded by both), another for each rater."""
    order = list(episodes)
    random.Random(f"{study_id}:{rater}").shuffle(order)
    return order


def rewards(
    scores: Scores, agents: int, rubric: Sequence[DimensionSpec]
) -> list[tuple[float, dict[str, float]]]:
    """A complete rating as an episode's `rewards` (Sotopia's shape): per agent, the mean of its
    dimensions' scores and each score, the mean again as `overall_score`."""
    found: list[tuple[float, dict[str, float]]] = []
    for agent in range(agents):
        given = {d.name: float(scores[agent, d.name]) for d in rubric}
        overall = sum(given.values()) / len(given)
        found.append((overall, {**given, OVERALL_SCORE: overall}))
    return found


def scores_of(
    rewards: Sequence[tuple[float, dict[str, float]] | float],
) -> dict[tuple[int, str], float]:
    """The scores a rating's rewards hold, by (agent, dimension)."""
    return {
        (agent, name): score
        for agent, reward in enumerate(rewards)
        if not isinstance(reward, float | int)
        for name, score in reward[1].items()
        if name != OVERALL_SCORE
    }


def gold_check(gold: GoldEpisode, scores: Scores) -> GoldCheck:
    """Which expected scores of a gold episode the rating misses by more than the tolerance."""
    misses = [
        GoldMiss(agent=e.agent, dimension=e.dimension, expected=e.score, given=given)
        for e in gold.expected
        if abs((given := float(scores[e.agent, e.dimension])) - e.score) > gold.tolerance
    ]
    return GoldCheck(misses=misses)
