"""A judge panel: every judge run of the episode's panel (engine/types.py `Panel`), at once,
and their scores aggregated per agent and dimension.

Each run is the one judge of `engine.judge.evaluate`, by its model; the runs are started
together and each model call waits for its place under its endpoint's limit
(engine/limiter.py), so a panel asks no endpoint more than it takes. A run that fails is kept
with its reason and code and left out of the aggregate; the panel fails only when no run
counts. The overall score of an agent is then the mean of its aggregated dimensions, as a
single judge's overall is the mean of its own (so a panel of one run scores exactly as that
judge does, and every stored overall is the mean of the dimensions beside it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from statistics import fmean, median

from parley.core import metrics, tracing
from parley.engine.errors import JudgeFailed
from parley.engine.judge import evaluate
from parley.engine.ledger import CallPurpose, scoped
from parley.engine.llm import LLMRouter
from parley.engine.stats import GenerationStats
from parley.engine.types import (
    OVERALL_SCORE,
    Aggregate,
    EpisodeSetup,
    JudgeErrorCode,
    JudgeRun,
    Reward,
    Transcript,
)
from parley.engine.usage import TokenCount


@dataclass
class PanelProgress:
    """The runs so far (kept ones included), in the panel's order; what the runs made in this
    call spent; the judge's prompt, once a run of this call has scored."""

    runs: list[JudgeRun]
    stats: GenerationStats = field(default_factory=GenerationStats)
    rewards_prompt: str = ""


@dataclass
class PanelEvaluation(PanelProgress):
    """Every run of the panel, and the aggregate of those that count."""

    aggregate: list[Reward] = field(default_factory=list)
    reasoning: str = ""

    def rewards(self) -> list[Reward]:
        return list(self.aggregate)


OnRuns = Callable[[PanelProgress], Awaitable[None]]


def aggregated(runs: Sequence[JudgeRun], how: Aggregate) -> list[Reward]:
    """Per agent, each dimension's score over the runs that count (their mean or median), and
    the overall score as the mean of those."""
    counted = [run for run in runs if run.counted]
    reduce = fmean if how == Aggregate.MEAN else median
    out: list[Reward] = []
    for agent in range(len(counted[0].rewards) if counted else 0):
        details = [run.rewards[agent][1] for run in counted]
        names = [name for name in details[0] if name != OVERALL_SCORE]
        detail = {name: float(reduce([d[name] for d in details])) for name in names}
        overall = fmean(detail.values())
        out.append((overall, {**detail, OVERALL_SCORE: overall}))
    return out


def fits(run: JudgeRun, setup: EpisodeSetup) -> bool:
    """Whether a kept run's scores are of this setup: a reward per agent, on exactly its
    dimensions (after a dimension list changed, the run is made again)."""
    names = {d.name for d in setup.dimensions} | {OVERALL_SCORE}
    return len(run.rewards) == len(setup.agents) and all(
        set(detail) == names for _, detail in run.rewards
    )


async def judge_panel(
    setup: EpisodeSetup,
    transcript: Transcript,
    llm: LLMRouter,
    kept: Sequence[JudgeRun] = (),
    on_runs: OnRuns | None = None,
) -> PanelEvaluation:
    """Run the panel's judge runs that `kept` (an earlier attempt's, as stored) does not hold
    scores of already, all at once (a kept failure is tried again); `on_runs` sees the
    progress after each run ends, one call at a time.

    Raises JudgeFailed, with every run, when none gives valid scores: with one run, its own
    reason and code; with more, each run's reason in one line and the code they share (their
    first's when they differ)."""
    panel = setup.judges()
    wanted = panel.runs()
    done = {run.key: run for run in kept if run.key in wanted and run.counted and fits(run, setup)}
    progress = PanelProgress(runs=[])
    lock = asyncio.Lock()
    made: dict[tuple[str, int], JudgeRun] = {}

    async def one(model: str, repeat: int) -> None:
        run, stats, prompt = await _run(setup, transcript, llm, model, repeat)
        async with lock:
            made[run.key] = run
            progress.stats = progress.stats.merge(stats)
            progress.rewards_prompt = progress.rewards_prompt or prompt
            progress.runs = [r for key in wanted if (r := made.get(key) or done.get(key))]
            if on_runs is not None:
                await on_runs(progress)

    try:
        async with asyncio.TaskGroup() as group:
            for model, repeat in wanted:
                if (model, repeat) not in done:
                    group.create_task(one(model, repeat))
    except BaseExceptionGroup as failed:  # a bug, or the caller's on_runs refused
        raise failed.exceptions[0] from None
    runs = [made.get(key) or done[key] for key in wanted]
    if not any(run.counted for run in runs):
        raise _all_failed(runs, progress.stats)
    return PanelEvaluation(
        runs=runs,
        stats=progress.stats,
        rewards_prompt=progress.rewards_prompt,
        aggregate=aggregated(runs, panel.aggregate),
        reasoning=_reasoning(runs),
    )


async def _run(
    setup: EpisodeSetup, transcript: Transcript, llm: LLMRouter, model: str, repeat: int
) -> tuple[JudgeRun, GenerationStats, str]:
    """One judge run: its scores or its failure, what it spent, and its prompt."""
    try:
        with (
            scoped(purpose=CallPurpose.JUDGE, seat=None, turn=None, judge=f"{model}#{repeat}"),
            tracing.judge(model, repeat),
        ):
            judged = await metrics.judge_run(model, evaluate(setup, transcript, llm, model))
    except JudgeFailed as failed:
        run = JudgeRun(model=model, repeat=repeat, error=failed.reason, code=failed.code)
        return _spent(run, failed.stats), failed.stats, ""
    except TimeoutError:  # one the judge's model calls did not report (a busy machine's)
        reason = f"judge {model} gave no valid scores: it timed out"
        run = JudgeRun(model=model, repeat=repeat, error=reason, code=JudgeErrorCode.TIMEOUT)
        return run, GenerationStats(), ""
    run = JudgeRun(model=model, repeat=repeat, rewards=judged.rewards(), reasoning=judged.reasoning)
    return _spent(run, judged.stats), judged.stats, judged.rewards_prompt


def _spent(run: JudgeRun, stats: GenerationStats) -> JudgeRun:
    total = sum(stats.usage.values(), TokenCount())
    run.prompt_tokens = total.prompt_tokens
    run.completion_tokens = total.completion_tokens
    run.estimated_tokens = total.estimated_tokens
    return run


def _all_failed(runs: list[JudgeRun], stats: GenerationStats) -> JudgeFailed:
    codes = [run.code or JudgeErrorCode.UNAVAILABLE for run in runs]
    if len(runs) == 1:
        return JudgeFailed(runs[0].error or "", stats, codes[0], runs)
    reasons = "; ".join(f"{_named(run)}: {run.error}" for run in runs)
    return JudgeFailed(f"no judge of the panel gave valid scores: {reasons}", stats, codes[0], runs)


def _named(run: JudgeRun) -> str:
    return f"{run.model} (repeat {run.repeat + 1})"


def _reasoning(runs: list[JudgeRun]) -> str:
    """Sotopia's comment string: a single run's own; a panel's, each counted run's under its
    name."""
    if len(runs) == 1:
        return runs[0].reasoning
    return "".join(f"Judge {_named(run)}:\n{run.reasoning}" for run in runs if run.counted)
