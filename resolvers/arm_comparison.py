"""An intervention arm against its control: the paired difference arm - control per dimension,
over the (slot, seat) pairs where both episodes have a score."""

from collections.abc import Sequence
from typing import Any

from parley.engine.types import OVERALL_SCORE
from parley.resolvers.statistics import Paired, paired
from parley.storage.results_index import OVERALL, STANDARD


def seat_scores(rewards: Sequence[Any] | None) -> list[dict[str, float]]:
    """Each seat's scores by dimension (`overall` its overall score, which Sotopia's
    `overall_score` repeats); a seat Sotopia's bare `0.0` stands for (its judge gave no scores)
    has none."""
    out: list[dict[str, float]] = []
    for reward in rewards or []:
        if isinstance(reward, list | tuple) and len(reward) == 2 and isinstance(reward[1], dict):
            scores = {
                str(d): float(v)
                for d, v in reward[1].items()
                if isinstance(v, int | float) and d != OVERALL_SCORE
            }
            out.append({OVERALL: float(reward[0]), **scores})
        else:
            out.append({})
    return out


def scored(rewards: Sequence[Any] | None) -> bool:
    return any(seat_scores(rewards))


def differences(
    pairs: Sequence[tuple[Sequence[Any] | None, Sequence[Any] | None]],
) -> list[tuple[str, Paired]]:
    """Per dimension, `overall` first: the paired difference over (control, arm) rewards of
    each slot, one difference per seat where both have the dimension's score."""
    by_dimension: dict[str, list[float]] = {}
    for control, arm in pairs:
        for mine, theirs in zip(seat_scores(arm), seat_scores(control), strict=False):
            for dimension in mine.keys() & theirs.keys():
                by_dimension.setdefault(dimension, []).append(mine[dimension] - theirs[dimension])
    order = [OVERALL, *STANDARD]
    names = sorted(by_dimension, key=lambda d: (order.index(d) if d in order else len(order), d))
    return [(name, paired(by_dimension[name])) for name in names]
