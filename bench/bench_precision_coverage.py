"""Coverage of the reported intervals when an experiment stops on its precision.

Run: python -m bench.bench_precision_coverage [--experiments 10000]
     [--min-scores 2,10,20,30,40,60,100] [--targets 1.0,0.5,0.25] [--scenarios 1,3,10]
     [--groups 1,3] [--scores normal,scenario,clipped,failures] [--max-rounds 100] [--check 40]
     [--seed 27]
(about 100 s of CPU with the defaults; a setting's scores come from a seed of its own place in
the grid, so a run with fewer --min-scores and the same other options repeats its figures)

A design with a precision is queued one round at a time (round r holds every (scenario, seating)
slot once: in a design comparing models against a partner, each compared model plays every
scenario in both seat orders, so 2 x scenarios scores a round). After each round the design stops
once `precise` (`parley.resolvers.precision`) says every compared group's 95% t half-width is
within the target on at least `min_scores` scores, or when `max-rounds` rounds are used up. Each
group's reported interval is then the standard t interval over all its scores
(`parley.resolvers.statistics.interval`). Whether that interval still holds the group's true
mean 95% of the time is what this measures, over `experiments` simulated experiments a setting.

The stopping decision is computed for all experiments at once with numpy, mirroring `precise`:
the same t quantiles (`t_quantile`), the moments merged round by round as `Moments.merge` merges
them. For the first `check` experiments of every setting the product's own code decides as well
(`Moments.of_scores` and `merge` round by round, then `precise(groups, Precision(...))`), and the
script stops if the two disagree on a stopping round or an interval.

Scores (an agent's overall score; with 3 compared groups, group g is shifted by 0, +0.8, -0.8 and
its spread scaled by 1, 0.8, 1.2):
- normal: independent N(3, 1.5).
- scenario: 3 + scenario effect N(0, 1.2) (shared by the compared models) + the model's own
  effect in that scenario N(0, 0.5) + a seat effect in that scenario N(0, 0.4) + noise
  N(0, 1.2); total sd about 1.8. The scenarios are a fixed set drawn once per experiment, and the
  estimand is the group's mean over the design's scenarios and seats with equal weight (each
  round holds each of them once): the figure Parley reports, which says nothing of scenarios
  outside the design (how often it holds the mean over all scenarios is printed apart).
- clipped: N(7.5, 2) clipped to 0..10 and rounded to 0.5 (a pile at 10, a tail to the left).
- failures: N(6.5, 1) in 90% of episodes and N(2, 1.5) in the 10% that go wrong (an agent that
  derails or refuses), clipped to 0..10 and rounded to 0.5; mean about 6.0, sd about 1.8.
The true means of the clipped and rounded scores are exact (from the normal distribution
function at the rounding bounds), not simulated.

For each setting: the coverage of each group's reported interval and of all groups' at once,
with the Monte Carlo standard error; the mean rounds used and the share of experiments that ran
out of rounds; and, on the same simulated scores:
- a fixed design (no stopping) with the same mean number of rounds: each experiment runs the
  whole number of rounds just below or just above the mean, drawn apart from its scores;
- a two-stage rule (Stein's): the number of rounds is fixed once, from the spread of the first
  `min_scores` scores, and the t interval reported after them;
- for the scores bounded to 0..10, a confidence sequence (the empirical-Bernstein one of
  Waudby-Smith and Ramdas, "Estimating means of bounded random variables by betting", 2023,
  eq. 13-15), which keeps 95% whenever it stops, checked after each round like the rule.
"""

import argparse
import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.special import ndtr

from parley.resolvers.precision import Precision, precise
from parley.resolvers.statistics import Moments, interval, t_quantile

Floats = npt.NDArray[np.float64]
Bools = npt.NDArray[np.bool_]
Ints = npt.NDArray[np.int64]

SCORES = ("normal", "scenario", "clipped", "failures")
GROUP_SHIFT = (0.0, 0.8, -0.8)
GROUP_SCALE = (1.0, 0.8, 1.2)
GRID = np.arange(0.0, 10.0 + 0.25, 0.5)
FAILURE_SHARE = 0.1
BOUNDED = ("clipped", "failures")
NOMINAL = 0.95
FLOOR = 0.94


@dataclass(frozen=True)
class Setting:
    scores: str
    scenarios: int
    groups: int
    target: float
    min_scores: int

    @property
    def per_round(self) -> int:
        """Scores a compared group gets in one round: every scenario in both seat orders."""
        return 2 * self.scenarios


@dataclass(frozen=True)
class Coverage:
    """How often the reported intervals held the true means, over the simulated experiments."""

    groups: tuple[float, ...]
    """Each group's interval."""
    every_group: float
    """All groups' intervals at once."""
    mean_rounds: float

    @classmethod
    def of(cls, covered: Bools, rounds: Ints) -> "Coverage":
        return cls(
            groups=tuple(float(c) for c in covered.mean(axis=0)),
            every_group=float(covered.all(axis=1).mean()),
            mean_rounds=float(rounds.mean()),
        )

    @property
    def lowest(self) -> float:
        return min(self.groups)


@dataclass(frozen=True)
class Outcome:
    setting: Setting
    experiments: int
    stopping: Coverage
    """Under Parley's rule."""
    ran_out: float
    """The share of experiments that used every round without being precise."""
    fixed: Coverage
    """A fixed design with the same mean number of rounds."""
    two_stage: Coverage
    """The remedy: the number of rounds fixed once from the first `min_scores` scores."""
    new_scenarios: float | None
    """scenario: how often every group's interval held its mean over all scenarios (not only
    the design's)."""
    checked: int

    def se(self, p: float) -> float:
        return math.sqrt(p * (1 - p) / self.experiments)


class Scores:
    """Draws one round's scores of every experiment, and knows each group's true mean."""

    def __init__(self, setting: Setting, experiments: int, rng: np.random.Generator) -> None:
        self.kind = setting.scores
        self.rng = rng
        shape = (experiments, setting.groups, setting.per_round)
        self.shape = shape
        self.shift = np.array(GROUP_SHIFT[: setting.groups])[None, :, None]
        self.scale = np.array(GROUP_SCALE[: setting.groups])[None, :, None]
        self.cell = np.zeros(shape)
        if self.kind == "scenario":
            scenario = rng.normal(0, 1.2, (experiments, 1, setting.scenarios))
            own = rng.normal(0, 0.5, (experiments, setting.groups, setting.scenarios))
            seat = rng.normal(0, 0.4, shape)
            self.cell = np.repeat(scenario + own, 2, axis=2) + seat
        self.truth = self._truth(experiments)

    def _truth(self, experiments: int) -> Floats:
        shift = self.shift[0, :, 0]
        scale = self.scale[0, :, 0]
        if self.kind == "normal":
            truth = 3.0 + shift
        elif self.kind == "scenario":
            return 3.0 + shift[None, :] + self.cell.mean(axis=2)
        else:
            truth = np.array(
                [
                    rounded_mean(self._cdf(float(s), float(c)))
                    for s, c in zip(shift, scale, strict=True)
                ]
            )
        return np.broadcast_to(truth, (experiments, len(shift))).copy()

    def _cdf(self, shift: float, scale: float) -> Callable[[Floats], Floats]:
        """The distribution function of a score before clipping and rounding."""
        clipped, share = self.kind == "clipped", FAILURE_SHARE

        def cdf(x: Floats) -> Floats:
            if clipped:
                found: Floats = ndtr((x - 7.5 - shift) / (2.0 * scale))
            else:
                good, bad = ndtr((x - 6.5 - shift) / scale), ndtr((x - 2.0 - shift) / 1.5)
                found = (1 - share) * good + share * bad
            return found

        return cdf

    def draw(self) -> Floats:
        rng, shape = self.rng, self.shape
        drawn: Floats
        if self.kind == "normal":
            drawn = 3.0 + self.shift + rng.normal(0, 1.5, shape) * self.scale
        elif self.kind == "scenario":
            drawn = 3.0 + self.shift + self.cell + rng.normal(0, 1.2, shape) * self.scale
        else:
            if self.kind == "clipped":
                raw = 7.5 + self.shift + rng.normal(0, 2.0, shape) * self.scale
            else:
                good = 6.5 + self.shift + rng.normal(0, 1.0, shape) * self.scale
                bad = 2.0 + self.shift + rng.normal(0, 1.5, shape)
                raw = np.where(rng.random(shape) < FAILURE_SHARE, bad, good)
            drawn = np.clip(np.rint(raw * 2) / 2, 0.0, 10.0)
        return drawn


def rounded_mean(cdf: Callable[[Floats], Floats]) -> float:
    """The exact mean of a score clipped to 0..10 and rounded to 0.5."""
    upper = np.append(cdf(GRID[:-1] + 0.25), 1.0)
    lower = np.insert(cdf(GRID[1:] - 0.25), 0, 0.0)
    return float(np.sum(GRID * (upper - lower)))


def simulate(setting: Setting, experiments: int, max_rounds: int, check: int, seed: int) -> Outcome:
    """`experiments` experiments of one setting: under the stopping rule, a fixed design and the
    two-stage rule, all on the same scores."""
    rng = np.random.default_rng(seed)
    scores = Scores(setting, experiments, rng)
    k, target = setting.per_round, setting.target
    count = 0
    mean = np.zeros((experiments, setting.groups))
    m2 = np.zeros((experiments, setting.groups))
    means = np.empty((max_rounds, experiments, setting.groups))
    margins = np.empty((max_rounds, experiments, setting.groups))
    stopped = np.full(experiments, max_rounds - 1)
    going = np.ones(experiments, dtype=bool)
    pilot = math.ceil(setting.min_scores / k)
    planned = np.full(experiments, max_rounds)
    kept: list[Floats] = []
    rounds = 0
    for r in range(max_rounds):
        drawn = scores.draw()
        kept.append(drawn[:check].copy())
        round_mean = drawn.mean(axis=2)
        round_m2 = ((drawn - round_mean[:, :, None]) ** 2).sum(axis=2)
        if count == 0:
            mean, m2 = round_mean, round_m2
        else:
            # Moments.merge, term for term.
            total = count + k
            delta = round_mean - mean
            mean = mean + delta * k / total
            m2 = m2 + round_m2 + delta * delta * count * k / total
        count += k
        margin = t_quantile(count - 1) * np.sqrt(m2 / (count - 1) / count)
        means[r], margins[r] = mean, margin
        rounds = r + 1
        if count >= setting.min_scores:
            now = going & (margin <= target).all(axis=1)
            stopped[now] = r
            going &= ~now
        if rounds == pilot:
            # The scores the pilot's spread says are needed: t * s / sqrt(n) = target.
            needed = (count * (margin / target) ** 2).max(axis=1)
            planned = np.clip(np.ceil(needed / k).astype(np.int64), pilot, max_rounds)
        if not going.any() and rounds >= planned.max():
            break
    at = np.arange(experiments)

    def covered(used: Ints, truth: Floats) -> Bools:
        centre, margin = means[used - 1, at], margins[used - 1, at]
        result: Bools = np.abs(centre - truth) <= margin
        return result

    used = stopped + 1
    average = float(used.mean())
    whole = math.floor(average)
    fixed = np.minimum(whole + (rng.random(experiments) < average - whole), rounds)
    new_scenarios = None
    if setting.scores == "scenario":
        everywhere = np.broadcast_to(3.0 + scores.shift[0, :, 0], scores.truth.shape)
        new_scenarios = float(covered(used, everywhere).all(axis=1).mean())
    return Outcome(
        setting=setting,
        experiments=experiments,
        stopping=Coverage.of(covered(used, scores.truth), used),
        ran_out=float(np.mean(going)),
        fixed=Coverage.of(covered(fixed, scores.truth), fixed),
        two_stage=Coverage.of(covered(planned, scores.truth), planned),
        new_scenarios=new_scenarios,
        checked=check_against_precise(setting, kept, stopped, means, margins),
    )


def check_against_precise(
    setting: Setting, kept: Sequence[Floats], stopped: Ints, means: Floats, margins: Floats
) -> int:
    """Replays the first experiments through `precise` itself; raises on any disagreement."""
    target = Precision(half_width=setting.target, min_scores=setting.min_scores)
    experiments = kept[0].shape[0] if kept else 0
    for e in range(experiments):
        moments = [Moments() for _ in range(setting.groups)]
        stop = len(kept) - 1
        for r, drawn in enumerate(kept):
            moments = [
                m.merge(Moments.of_scores(float(x) for x in drawn[e, g]))
                for g, m in enumerate(moments)
            ]
            if precise({f"model-{g}": m for g, m in enumerate(moments)}, target):
                stop = r
                break
        if stop != stopped[e]:
            raise AssertionError(
                f"{setting}: experiment {e} stops after round {stop + 1} by precise(), "
                f"after round {stopped[e] + 1} here"
            )
        for g, m in enumerate(moments):
            found = interval(m)
            assert found is not None
            centre, margin = means[stop, e, g], margins[stop, e, g]
            if not (
                math.isclose(found.low, centre - margin, rel_tol=1e-9, abs_tol=1e-9)
                and math.isclose(found.high, centre + margin, rel_tol=1e-9, abs_tol=1e-9)
            ):
                raise AssertionError(f"{setting}: experiment {e} group {g}: {found}")
    return experiments


def confidence_sequence(
    setting: Setting, experiments: int, max_rounds: int, seed: int
) -> tuple[Coverage, float]:
    """The same experiments (the same seed, so the same scores) stopping once every group's
    confidence sequence for scores in 0..10 is within the target: its coverage, and the share
    that ran out of rounds."""
    rng = np.random.default_rng(seed)
    scores = Scores(setting, experiments, rng)
    shape = (experiments, setting.groups)
    log_term = math.log(2 / (1 - NOMINAL))
    t = 0
    total, deviations = np.zeros(shape), np.zeros(shape)
    weights, weighted, penalty = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    low, high = np.full(shape, -np.inf), np.full(shape, np.inf)
    used = np.full(experiments, max_rounds)
    going = np.ones(experiments, dtype=bool)
    reported_low, reported_high = np.zeros(shape), np.zeros(shape)
    for r in range(max_rounds):
        drawn = scores.draw() / 10.0
        # One score at a time, as the paper's eq. 13-15 (scores scaled to 0..1): the bet
        # (lambda) is predictable, from the mean and spread of the scores before it; the
        # penalty adds v * psi_E(lambda) = 4 (x - mean before)^2 * (-log(1 - lambda) - lambda) / 4.
        for x in np.moveaxis(drawn, 2, 0):
            before = (0.5 + total) / (t + 1)
            spread = (0.25 + deviations) / (t + 1)
            t += 1
            bet = np.minimum(np.sqrt(2 * log_term / (spread * t * math.log(1 + t))), 0.5)
            weights += bet
            weighted += bet * x
            penalty += 4 * (x - before) ** 2 * (-np.log1p(-bet) - bet) / 4
            total += x
            deviations += (x - (0.5 + total) / (t + 1)) ** 2
        centre, margin = weighted / weights, (log_term + penalty) / weights
        low, high = np.maximum(low, centre - margin), np.minimum(high, centre + margin)
        now = going & (10 * (high - low) / 2 <= setting.target).all(axis=1)
        used[now] = r + 1
        reported_low[now], reported_high[now] = low[now], high[now]
        going &= ~now
        if not going.any():
            break
    reported_low[going], reported_high[going] = low[going], high[going]
    truth = scores.truth / 10.0
    covered = (reported_low <= truth) & (truth <= reported_high)
    return Coverage.of(covered, used), float(np.mean(going))


def numbers(text: str, kind: Callable[[str], float | int]) -> list[float | int]:
    return [kind(part) for part in text.split(",") if part.strip()]


def percent(p: float) -> str:
    return f"{100 * p:.1f}"


def each(coverage: Coverage) -> str:
    return " / ".join(percent(g) for g in coverage.groups)


def row(outcome: Outcome) -> str:
    s, o = outcome.setting, outcome
    several = s.groups > 1
    cells = [
        s.scores,
        str(s.scenarios),
        str(s.groups),
        f"{s.target:g}",
        str(s.min_scores),
        f"{o.stopping.mean_rounds:.1f}",
        percent(o.ran_out),
        each(o.stopping),
        f"{100 * max(o.se(g) for g in o.stopping.groups):.1f}",
        each(o.fixed),
        percent(o.stopping.every_group) if several else "",
        percent(o.fixed.every_group) if several else "",
        f"{o.two_stage.mean_rounds:.1f}",
        each(o.two_stage),
    ]
    return "| " + " | ".join(cells) + " |"


HEADER = (
    "| scores | scenarios | groups | ± target | min_scores | mean rounds | ran out % "
    "| coverage % | ± se | fixed design % | all groups % | fixed, all groups % "
    "| two-stage rounds | two-stage % |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def summarize(outcomes: Sequence[Outcome], minimums: Sequence[int], kinds: Sequence[str]) -> None:
    """The lowest coverage of a group's interval for each min_scores and kind of scores."""
    print(
        f"\nLowest coverage of a group's interval (%, nominal {percent(NOMINAL)}), the setting "
        f"(scores, scenarios, groups, ± target) and how many settings fall below "
        f"{percent(FLOOR)}%; for the stopping rule, a fixed design with its mean rounds, and the "
        "two-stage rule:"
    )
    print("\n| min_scores | scores | stopping rule | below | fixed design | two-stage | below |")
    print("|---|---|---|---|---|---|---|")
    for minimum in minimums:
        for kind in kinds:
            mine = [
                o for o in outcomes if o.setting.min_scores == minimum and o.setting.scores == kind
            ]
            if not mine:
                continue
            worst = min(mine, key=lambda o: o.stopping.lowest)
            w = worst.setting
            cells = [
                str(minimum),
                kind,
                f"{percent(worst.stopping.lowest)} ({w.scenarios}, {w.groups}, ±{w.target:g})",
                f"{sum(o.stopping.lowest < FLOOR for o in mine)} of {len(mine)}",
                percent(min(o.fixed.lowest for o in mine)),
                percent(min(o.two_stage.lowest for o in mine)),
                f"{sum(o.two_stage.lowest < FLOOR for o in mine)} of {len(mine)}",
            ]
            print("| " + " | ".join(cells) + " |")
    scenario = [o for o in outcomes if o.new_scenarios is not None]
    if scenario:
        low = min(scenario, key=lambda o: o.new_scenarios or 0.0)
        print(
            f"\nscenario: all groups' intervals held the mean over all scenarios (not only the "
            f"design's) in {percent(min(o.new_scenarios or 0.0 for o in scenario))} to "
            f"{percent(max(o.new_scenarios or 0.0 for o in scenario))}% of experiments (lowest: "
            f"{low.setting.scenarios} scenarios, {low.setting.groups} groups, "
            f"±{low.setting.target:g})."
        )
    for name, kinds_in in (
        ("every kind of scores", kinds),
        ("all but failures", [k for k in kinds if k != "failures"]),
    ):
        chosen = next(
            (
                m
                for m in minimums
                if all(
                    o.stopping.lowest >= FLOOR
                    for o in outcomes
                    if o.setting.min_scores == m and o.setting.scores in kinds_in
                )
            ),
            None,
        )
        found = "none of those tried" if chosen is None else str(chosen)
        print(
            f"Smallest min_scores with every group at {percent(FLOOR)}% or above, {name}: {found}"
        )


def sequences_table(
    sequences: Sequence[tuple[Setting, Coverage, float]], outcomes: Sequence[Outcome], default: int
) -> None:
    """The confidence sequence beside Parley's rule at its default min_scores."""
    print(
        "\nA confidence sequence for scores in 0..10 (valid whenever it stops), beside Parley's "
        f"rule at its default min_scores ({default}):"
    )
    print(
        "\n| scores | scenarios | groups | ± target | sequence: mean rounds | ran out % "
        "| coverage % | all groups % | rule: mean rounds | coverage % |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for setting, coverage, ran_out in sequences:
        rule = next(
            (
                o
                for o in outcomes
                if o.setting.min_scores == default
                and (o.setting.scores, o.setting.scenarios, o.setting.groups, o.setting.target)
                == (setting.scores, setting.scenarios, setting.groups, setting.target)
            ),
            None,
        )
        cells = [
            setting.scores,
            str(setting.scenarios),
            str(setting.groups),
            f"{setting.target:g}",
            f"{coverage.mean_rounds:.1f}",
            percent(ran_out),
            each(coverage),
            percent(coverage.every_group) if setting.groups > 1 else "",
            "" if rule is None else f"{rule.stopping.mean_rounds:.1f}",
            "" if rule is None else each(rule.stopping),
        ]
        print("| " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--experiments", type=int, default=10_000)
    parser.add_argument("--min-scores", default="2,10,20,30,40,60,100")
    parser.add_argument("--targets", default="1.0,0.5,0.25")
    parser.add_argument("--scenarios", default="1,3,10")
    parser.add_argument("--groups", default="1,3")
    parser.add_argument("--scores", default=",".join(SCORES))
    parser.add_argument("--max-rounds", type=int, default=100)
    parser.add_argument("--check", type=int, default=40)
    parser.add_argument("--seed", type=int, default=27)
    args = parser.parse_args()
    kinds = [k.strip() for k in args.scores.split(",") if k.strip()]
    unknown = set(kinds) - set(SCORES)
    if unknown:
        parser.error(f"unknown scores {sorted(unknown)}: choose from {', '.join(SCORES)}")
    minimums = [int(m) for m in numbers(args.min_scores, int)]
    began, cpu = time.perf_counter(), time.process_time()
    outcomes: list[Outcome] = []
    sequences: list[tuple[Setting, Coverage, float]] = []
    print(HEADER)
    grid = itertools.product(
        kinds,
        numbers(args.scenarios, int),
        numbers(args.groups, int),
        numbers(args.targets, float),
    )
    for index, (kind, scenarios, groups, target) in enumerate(grid):
        if kind == "scenario" and scenarios == 1:
            continue  # one scenario: its effect is a constant
        # The same scores for every min_scores and the sequence: only the rule differs.
        seed = args.seed * 1000 + index
        for minimum in minimums:
            setting = Setting(kind, int(scenarios), int(groups), float(target), minimum)
            outcome = simulate(setting, args.experiments, args.max_rounds, args.check, seed)
            outcomes.append(outcome)
            print(row(outcome), flush=True)
        if kind in BOUNDED:
            setting = Setting(kind, int(scenarios), int(groups), float(target), 2)
            coverage, ran_out = confidence_sequence(
                setting, args.experiments, args.max_rounds, seed
            )
            sequences.append((setting, coverage, ran_out))
    print(
        f"\n{args.experiments} experiments a setting, at most {args.max_rounds} rounds; "
        f"{sum(o.checked for o in outcomes)} experiments replayed through precise() with the "
        f"same stopping rounds and intervals; {time.perf_counter() - began:.0f} s, "
        f"{time.process_time() - cpu:.0f} s CPU"
    )
    summarize(outcomes, minimums, kinds)
    if sequences:
        default = Precision.model_fields["min_scores"].default
        sequences_table(sequences, outcomes, default)


if __name__ == "__main__":
    main()
