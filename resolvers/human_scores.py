"""A rating study's saved ratings as an evaluation: each episode's scores are the raters' mean
of each agent on each dimension (and overall, of their overall scores), so that results and
agreement read them as they read a judge's; each rater is a run of that "panel", `rater#n`."""

from collections.abc import Sequence

from parley.engine.types import OVERALL_SCORE, JudgeRun
from parley.resolvers.study_agreement import mean_of, score_of
from parley.resolvers.study_status import StudyRating
from parley.storage.studies import ScoredEvaluation

RATER = "rater"
"""The model name a rater's run has (`rater#<number>`)."""


def human_rewards(ratings: Sequence[StudyRating]) -> list[tuple[float, dict[str, float]]]:
    """One episode's ratings' mean of each agent: (overall, {dimension: mean}); an agent no
    rating scored is left out from the end (there are none in a saved rating: all agents are
    scored)."""
    agents = max((len(r.annotation.rewards) for r in ratings), default=0)
    found = []
    for agent in range(agents):
        dimensions: dict[str, None] = {}
        for rating in ratings:
            reward = (
                rating.annotation.rewards[agent] if agent < len(rating.annotation.rewards) else None
            )
            if reward is not None and not isinstance(reward, float | int):
                dimensions.update((name, None) for name in reward[1] if name != OVERALL_SCORE)
        means: dict[str, float] = {}
        for dimension in [*dimensions, OVERALL_SCORE]:
            scores = [score_of(r.annotation.rewards, agent, dimension) for r in ratings]
            mean = mean_of([s for s in scores if s is not None])
            if mean is not None:
                means[dimension] = mean
        if OVERALL_SCORE in means:
            found.append((means[OVERALL_SCORE], means))
    return found


def human_evaluations(study_id: str, ratings: Sequence[StudyRating]) -> dict[str, ScoredEvaluation]:
    """By episode rated: the raters' means, with each rater's rating as a run."""
    by_episode: dict[str, list[StudyRating]] = {}
    for rating in ratings:
        by_episode.setdefault(rating.episode_id, []).append(rating)
    return {
        episode: ScoredEvaluation(
            id=study_id,
            rewards=list(human_rewards(rated)),
            judge_runs=[
                JudgeRun(
                    model=RATER,
                    repeat=r.rater,
                    rewards=[w for w in r.annotation.rewards if not isinstance(w, float | int)],
                )
                for r in rated
            ],
        )
        for episode, rated in by_episode.items()
    }
