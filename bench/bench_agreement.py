"""Every agreement figure of one study: what it costs in seconds and peak memory.

Run: python -m bench.bench_agreement [--episodes 238] [--raters 3] [--dimensions 7]
     [--models 4] [--resamples 2000] [--repeat 5]

The study: episodes of two agents, each played by one of the models; every rater scores every
agent on every dimension (integers 0-10: the agent's quality, the rater's bias and noise),
5% of the scores missing. The defaults make 238 x 2 x 7 x 3 = 9,996 ratings. All the figures:
for each dimension and for the overall score (each rater's mean over the dimensions),
Krippendorff's alpha and ICC(2,1)/ICC(2,k) over the raters, and Pearson and Spearman for each
pair of raters; over all dimensions at once, alpha of the agent-dimension units; for each pair
of raters, Kendall's tau-b between their rankings of the models by overall score, bootstrapped
over episodes. The first run includes the lazy imports of scipy; the others do not. Peak
memory is measured in one more run, under tracemalloc (which slows allocation).
"""

import argparse
import itertools
import statistics
import time
import tracemalloc

import numpy as np
import numpy.typing as npt

from parley.resolvers.agreement import alpha, icc, pearson, ranking, spearman

Ratings = npt.NDArray[np.float64]


def study(
    episodes: int, raters: int, dimensions: int, models: int, seed: int = 1
) -> tuple[Ratings, list[str], list[str]]:
    """Scores (agents x dimensions x raters), each agent's model and episode."""
    rng = np.random.default_rng(seed)
    agents = 2 * episodes
    model_of = rng.integers(0, models, size=agents)
    quality = model_of[:, None] * 0.5 + rng.normal(0, 1.5, size=(agents, dimensions))
    bias = rng.normal(0, 0.7, size=raters)
    noise = rng.normal(0, 1.2, size=(agents, dimensions, raters))
    scores = np.clip(np.rint(5 + quality[:, :, None] + bias + noise), 0, 10)
    scores[rng.random(scores.shape) < 0.05] = np.nan
    names = [f"model-{m}" for m in model_of]
    episode_of = [f"episode-{a // 2:05d}" for a in range(agents)]
    return scores, names, episode_of


def every_figure(scores: Ratings, models: list[str], episodes: list[str], resamples: int) -> int:
    """Computes every figure of the study; returns how many it computed."""
    rng = np.random.default_rng(7)
    agents, dimensions, raters = scores.shape
    with np.errstate(invalid="ignore"):
        overall = np.nanmean(scores, axis=1)  # a rater who scored no dimension: NaN
    tables = [scores[:, d, :] for d in range(dimensions)] + [overall]
    figures = 0
    for table in tables:
        alpha(table, rng=rng, resamples=resamples)
        icc(table)
        for first, second in itertools.combinations(range(raters), 2):
            pearson(table[:, first], table[:, second])
            spearman(table[:, first], table[:, second])
            figures += 2
        figures += 3
    alpha(scores.reshape(agents * dimensions, raters), rng=rng, resamples=resamples)
    figures += 1
    for first, second in itertools.combinations(range(raters), 2):
        ranking(
            overall[:, first], overall[:, second], models, episodes, rng=rng, resamples=resamples
        )
        figures += 1
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=238)
    parser.add_argument("--raters", type=int, default=3)
    parser.add_argument("--dimensions", type=int, default=7)
    parser.add_argument("--models", type=int, default=4)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    scores, models, episodes = study(args.episodes, args.raters, args.dimensions, args.models)
    print(
        f"{args.episodes} episodes x 2 agents x {args.dimensions} dimensions x {args.raters} "
        f"raters = {scores.size} ratings ({int(np.isnan(scores).sum())} missing), "
        f"{args.models} models, {args.resamples} resamples per bootstrap interval"
    )
    times = []
    for _ in range(max(1, args.repeat)):
        began = time.perf_counter()
        figures = every_figure(scores, models, episodes, args.resamples)
        times.append(time.perf_counter() - began)
    print(f"first run (imports scipy): {figures} figures in {times[0]:.3f} s")
    if len(times) > 1:
        print(
            f"later runs: median {statistics.median(times[1:]):.3f} s, best {min(times[1:]):.3f} s"
        )
    tracemalloc.start()
    every_figure(scores, models, episodes, args.resamples)
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    print(f"peak memory of one run: {peak:.1f} MiB (tracemalloc: Python and numpy allocations)")


if __name__ == "__main__":
    main()
