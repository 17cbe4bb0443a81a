"""When an experiment's results are precise enough: the stopping rule of a design's `precision`.

An experiment with a precision is queued one round of repeats at a time (round r holds every
control slot of repeat r). Once a round has ended, each compared group's overall score is read as
its results show it (the standard 95% t interval over the group's scores, `statistics.interval`);
the experiment queues no further round once every group's half-width is within the target and
rests on at least `min_scores` scores.

Stopping on the width of an interval still selects: an experiment stops sooner when its scores
happen to lie close together, and the interval it then reports misses more often than 5% of the
time. `bench/bench_precision_coverage.py` measures it by simulation under this very rule
(`bench/RESULTS.md`, issue 27). With the default `min_scores` of 30, each group's reported
interval held its true mean in at least 94% of simulated experiments (nominal 95%) for normal
scores, scores with scenario effects, and scores clipped to 0..10 and rounded. Not for scores with
a failure mode (a tenth of episodes scoring far below the rest): 92-95%, no better in a fixed
design of the same size when the target is met early (the t interval's own shortfall on skewed
scores), and about a point below the fixed design when it is met late; no `min_scores` up to 100
mends that. Only a method valid at any stopping time (a confidence sequence for bounded scores)
keeps 95% there, at 2.5-4 times the rounds in the same simulation.
"""

from collections.abc import Mapping
from typing import Annotated

from pydantic import BaseModel, Field

from parley.resolvers.statistics import Moments, interval


class Precision(BaseModel, extra="forbid"):
    """Stop once each compared group's overall score is known to ± `half_width` at 95%."""

    half_width: Annotated[float, Field(gt=0, le=20, strict=True, allow_inf_nan=False)]
    min_scores: Annotated[int, Field(ge=2, le=10_000, strict=True)] = 30
    """Fewest scores a group's interval may rest on: a few scores can look alike by chance,
    and an interval that narrow by chance would stop the experiment too early.

    30, not 10: with a round of 2 scores (one scenario, both seat orders), 10 left the coverage
    of normal scores' intervals at 93.5% and of clipped, rounded scores' (which look alike more
    often) at 93.3%, and 20 left normal scores at 93.8%; with 30, every such setting simulated
    kept 94.1% or more (`bench/RESULTS.md`, issue 27).
    A design whose rounds hold 30 scores or more is not slowed by it."""


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
