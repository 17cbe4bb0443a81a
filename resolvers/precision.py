"""When an experiment's results are precise enough: the stopping rule of a design's `precision`.

An experiment with a precision is queued one round of repeats at a time (round r holds every
control slot of repeat r). Once a round has ended, each compared group's overall score is read as
its results show it (the standard 95% t interval over the group's scores, `statistics.interval`);
the experiment queues no further round once every group's half-width is within the target and
rests on at least `min_scores` scores. Stopping on the width of an interval (not on its place)
keeps the intervals' coverage close to nominal; `bench/bench_precision_coverage.py` measures it by
simulation under this very rule (`bench/RESULTS.md`).
"""

from collections.abc import Mapping
from typing import Annotated

from pydantic import BaseModel, Field

from parley.resolvers.statistics import Moments, interval


class Precision(BaseModel, extra="forbid"):
    """Stop once each compared group's overall score is known to ± `half_width` at 95%."""

    half_width: Annotated[float, Field(gt=0, le=20)]
    min_scores: Annotated[int, Field(ge=2, le=10_000)] = 10
    """Fewest scores a group's interval may rest on: a few scores can look alike by chance,
    and an interval that narrow by chance would stop the experiment too early."""


def half_width(moments: Moments) -> float | None:
    """The group's 95% interval half-width; None for fewer than two scores."""
    found = interval(moments)
    return None if found is None else found.margin


def precise(groups: Mapping[str, Moments], target: Precision) -> bool:
    """Whether every group (at least one) is known as precisely as `target` asks."""
    if not groups:
        return False
    for moments in groups.values():
        width = half_width(moments)
        if moments.n < target.min_scores or width is None or width > target.half_width:
            return False
    return True
