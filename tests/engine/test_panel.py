"""Judge panels against the fake server: judges scoring differently, one failing, aggregated
exactly; runs at once within the endpoint's limit; kept runs not asked again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.support.factories import make_setup
from bench.support.fake_llm import FakeLLM, Rule
from parley.engine.episode import simulate
from parley.engine.errors import JudgeFailed
from parley.engine.judge import evaluate
from parley.engine.llm import ModelRegistry
from parley.engine.panel import PanelProgress, aggregated, judge_panel
from parley.engine.types import (
    Aggregate,
    DimensionSpec,
    EpisodeSetup,
    JudgeErrorCode,
    JudgeRun,
    JudgeSpec,
    Panel,
)
from tests.engine.conftest import FAST_RETRY
from tests.support.panels import RUNS, script, who_ran

DIMS = [
    DimensionSpec(name="warmth", description="How warm?", range_low=0, range_high=10),
    DimensionSpec(name="candour", description="How candid?", range_low=0, range_high=10),
]


def panel_setup(fake: FakeLLM, aggregate: Aggregate = Aggregate.MEAN) -> EpisodeSetup:
    """Judge A (twice) scores 8, judge B 2, judge C fails (HTTP 500 on every try)."""
    script(fake)
    judges = [
        JudgeSpec(model=fake.model_name("judge-a"), repeats=2),
        JudgeSpec(model=fake.model_name("judge-b")),
        JudgeSpec(model=fake.model_name("judge-c")),
    ]
    return make_setup(
        fake.model_name(),
        max_turns=2,
        dimensions=DIMS,
        panel=Panel(judges=judges, aggregate=aggregate),
    )


@pytest.mark.parametrize(
    ("aggregate", "expected"), [(Aggregate.MEAN, 6.0), (Aggregate.MEDIAN, 8.0)]
)
async def test_a_panel_aggregates_the_judges_that_count(
    fake_llm: FakeLLM, registry: ModelRegistry, aggregate: Aggregate, expected: float
) -> None:
    setup = panel_setup(fake_llm, aggregate)
    transcript = await simulate(setup, registry)
    judged = await judge_panel(setup, transcript, registry)

    assert who_ran(judged.runs) == RUNS
    a0, a1, b, c = judged.runs
    for run, score in ((a0, 8.0), (a1, 8.0), (b, 2.0)):
        assert run.counted and run.code is None
        assert (
            run.rewards
            == [(score, {"warmth": score, "candour": score, "overall_score": score})] * 2
        )
        assert run.prompt_tokens > 0 and run.completion_tokens > 0
        assert "Agent 1 comments:" in run.reasoning
    assert not c.counted and c.code == JudgeErrorCode.UNAVAILABLE and c.rewards == []
    assert c.error is not None and "HTTP 500" in c.error
    # (8 + 8 + 2) / 3 = 6 and the median 8, per dimension; the overall is their mean
    reward = (expected, {"warmth": expected, "candour": expected, "overall_score": expected})
    assert judged.rewards() == [reward, reward]
    assert judged.reasoning.count("Agent 1 comments:") == 3  # the counted runs'
    assert "Judge custom/judge-c" not in judged.reasoning
    assert "Evaluate how well Alice Smith did" in judged.rewards_prompt


def test_the_overall_is_the_mean_of_the_aggregated_dimensions() -> None:
    """Each dimension's median is taken, and the overall is their mean: here 3, where the
    median of the judges' own overall scores (5, 3 and 5) would be 5. A failed run counts in
    neither."""

    def run(warmth: float, candour: float) -> JudgeRun:
        overall = (warmth + candour) / 2
        detail = {"warmth": warmth, "candour": candour, "overall_score": overall}
        return JudgeRun(model="m", rewards=[(overall, detail)])

    runs = [run(0, 10), run(4, 2), run(10, 0), JudgeRun(model="m", error="down")]
    assert aggregated(runs, Aggregate.MEDIAN) == [
        (3.0, {"warmth": 4.0, "candour": 2.0, "overall_score": 3.0})
    ]
    [(overall, detail)] = aggregated(runs, Aggregate.MEAN)
    assert detail == {"warmth": 14 / 3, "candour": 4.0, "overall_score": overall}
    assert overall == pytest.approx(13 / 3)


async def test_a_panel_of_one_judge_scores_as_that_judge(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    setup = make_setup(fake_llm.model_name(), max_turns=2, dimensions=DIMS)
    transcript = await simulate(setup, registry)
    alone = await evaluate(setup, transcript, registry)
    judged = await judge_panel(setup, transcript, registry)
    assert judged.rewards() == alone.rewards()
    assert judged.reasoning == alone.reasoning
    assert judged.rewards_prompt == alone.rewards_prompt
    [run] = judged.runs
    assert run.model == setup.judge_model and run.rewards == alone.rewards()

    fake_llm.add_rule(Rule(kind="judge", status=500, times=None))
    with pytest.raises(JudgeFailed) as alone_failed:
        await evaluate(setup, transcript, registry)
    with pytest.raises(JudgeFailed) as panel_failed:
        await judge_panel(setup, transcript, registry)
    # the same reason (which agent's request failed first may differ between two runs)
    for raised in (alone_failed.value, panel_failed.value):
        assert raised.reason.startswith(f"judge {setup.judge_model} gave no valid scores for ")
        assert raised.reason.endswith("HTTP 500 (after 3 attempts)")
    assert panel_failed.value.code == alone_failed.value.code == JudgeErrorCode.UNAVAILABLE
    [failed] = panel_failed.value.runs
    assert failed.error == panel_failed.value.reason and failed.code == JudgeErrorCode.UNAVAILABLE


async def test_when_every_judge_fails_each_keeps_its_reason_and_code(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    """A judge whose requests time out says TIMEOUT (not an internal error), one whose
    endpoint fails says UNAVAILABLE, one no longer known says UNKNOWN_MODEL."""
    fake_llm.add_rule(
        Rule(kind="judge", model="fake", hang=True, times=None),  # fake-slow-judge: 0.3 s
        Rule(kind="judge", model="judge-b", status=503, times=None),
    )
    judges = [
        JudgeSpec(model="fake-slow-judge"),
        JudgeSpec(model=fake_llm.model_name("judge-b")),
        JudgeSpec(model="lab/removed-from-the-models-file"),
    ]
    setup = make_setup(
        fake_llm.model_name("agents"), max_turns=1, dimensions=DIMS, panel=Panel(judges=judges)
    )
    transcript = await simulate(setup, registry)
    with pytest.raises(JudgeFailed) as failed:
        await judge_panel(setup, transcript, registry)
    slow, broken, unknown = failed.value.runs
    assert slow.code == JudgeErrorCode.TIMEOUT and "timed out after 0.3 s" in (slow.error or "")
    assert broken.code == JudgeErrorCode.UNAVAILABLE and "HTTP 503" in (broken.error or "")
    assert unknown.code == JudgeErrorCode.UNKNOWN_MODEL
    assert failed.value.code == JudgeErrorCode.TIMEOUT  # the first's, as they differ
    reason = failed.value.reason
    assert reason.startswith("no judge of the panel gave valid scores: fake-slow-judge (repeat 1)")
    assert all(run.error in reason for run in failed.value.runs if run.error)


async def test_kept_runs_are_not_asked_again(fake_llm: FakeLLM, registry: ModelRegistry) -> None:
    """What an earlier attempt stored stands: only the runs it lacks are asked (its failed
    one again), each run's progress is reported in turn, and the aggregate is the same as
    judging all at once, each run counted once."""
    setup = panel_setup(fake_llm)
    transcript = await simulate(setup, registry)
    seen: list[list[tuple[str, int]]] = []

    async def on_runs(progress: PanelProgress) -> None:
        seen.append([run.key for run in progress.runs])

    whole = await judge_panel(setup, transcript, registry, on_runs=on_runs)
    assert [len(keys) for keys in seen] == [1, 2, 3, 4]
    assert sorted(seen[-1]) == sorted(run.key for run in whole.runs)

    before = len(fake_llm.requests_of("judge"))
    kept = [whole.runs[0], whole.runs[3]]  # judge A's first run, and judge C's failure
    again = await judge_panel(setup, transcript, registry, kept=kept)
    asked = fake_llm.requests_of("judge")[before:]
    models = sorted({r.body["model"] for r in asked})
    assert models == ["judge-a", "judge-b", "judge-c"]
    assert len([r for r in asked if r.body["model"] == "judge-a"]) == 2  # one run, two agents
    assert again.runs[0] == whole.runs[0]
    assert again.rewards() == whole.rewards()


async def test_a_kept_run_of_other_dimensions_is_made_again(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    setup = panel_setup(fake_llm)
    transcript = await simulate(setup, registry)
    stale = JudgeRun(
        model=setup.judges().judges[1].model,
        rewards=[(1.0, {"warmth": 1.0, "overall_score": 1.0})] * 2,
    )
    judged = await judge_panel(setup, transcript, registry, kept=[stale])
    assert judged.runs[2].rewards[0][0] == 2.0  # judge B asked again
    assert judged.rewards()[0][0] == 6.0


async def test_the_runs_of_a_panel_go_at_once_within_the_endpoints_limit(
    own_fake_llm: FakeLLM, tmp_path: Path
) -> None:
    """Counted on a fake server of the test's own: the shared one may still be answering
    requests another test left hanging."""
    fake_llm = own_fake_llm
    fake_llm.delay = 0.3
    models = tmp_path / "one-at-a-time.json"
    entry = {"base_url": fake_llm.base_url, "model": "fake", "max_concurrency": 1}
    models.write_text(json.dumps({"models": [{"name": "narrow", **entry}]}))
    registry = ModelRegistry(models, tmp_path, retry=FAST_RETRY)
    try:
        judges = [JudgeSpec(model=fake_llm.model_name("wide"), repeats=3)]
        setup = make_setup(fake_llm.model_name("wide"), max_turns=1, panel=Panel(judges=judges))
        transcript = await simulate(setup, registry)
        fake_llm.peak_in_flight = 0
        await judge_panel(setup, transcript, registry)
        assert fake_llm.peak_in_flight > 2  # more than one run's two agents at once

        narrow = setup.model_copy(
            update={"panel": Panel(judges=[JudgeSpec(model="narrow", repeats=3)])}
        )
        fake_llm.peak_in_flight = 0
        judged = await judge_panel(narrow, transcript, registry)
        assert len(judged.runs) == 3 and all(run.counted for run in judged.runs)
        assert fake_llm.peak_in_flight == 1  # the endpoint takes one call at a time
    finally:
        await registry.aclose()


def test_a_panel_is_named_by_its_judges_in_the_order_of_their_names() -> None:
    """Results group by the label: the same judges listed in another order are the same panel;
    another aggregate or another repeat count is another."""
    first = Panel(judges=[JudgeSpec(model="b"), JudgeSpec(model="a", repeats=2)])
    again = Panel(judges=[JudgeSpec(model="a", repeats=2), JudgeSpec(model="b")])
    assert first.label() == again.label() == "panel(MEAN): a x2, b"
    assert first.runs() == [("b", 0), ("a", 0), ("a", 1)]  # the runs keep the panel's order
    median = Panel(judges=again.judges, aggregate=Aggregate.MEDIAN)
    assert median.label() == "panel(MEDIAN): a x2, b"
    assert Panel(judges=[JudgeSpec(model="a"), JudgeSpec(model="b")]).label() != first.label()
    assert Panel.of("a").label() == "a"
