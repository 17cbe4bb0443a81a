"""The judge: ranges enforced by re-asking, per-dimension mode, Sotopia-shaped output."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench.support.factories import ALICE, make_setup
from bench.support.fake_llm import FakeLLM, Rule
from parley.engine.episode import play, simulate
from parley.engine.episode_log import episode_log_parts
from parley.engine.errors import EpisodeFailed, JudgeFailed
from parley.engine.judge import evaluate
from parley.engine.llm import ModelRegistry
from parley.engine.prompts import evaluation_schema
from parley.engine.types import SOTOPIA_DIMENSIONS, DimensionSpec

DIMS = [
    DimensionSpec(name="warmth", description="How warm was the agent?", range_low=1, range_high=3),
    DimensionSpec(name="greed", description="How greedy?", range_low=-4, range_high=-2),
]


def _scores(warmth: int, greed: int) -> str:
    return json.dumps(
        {"warmth": {"reasoning": "w", "score": warmth}, "greed": {"reasoning": "g", "score": greed}}
    )


async def test_sotopia_shaped_log(fake_llm: FakeLLM, registry: ModelRegistry) -> None:
    setup = make_setup(fake_llm.model_name(), max_turns=2)
    transcript = await simulate(setup, registry)
    evaluation = await evaluate(setup, transcript, registry)
    log = episode_log_parts(transcript, evaluation)
    names = [d.name for d in SOTOPIA_DIMENSIONS]
    for reward in log.rewards:
        assert not isinstance(reward, float)  # scored
        overall, detail = reward
        assert list(detail) == [*names, "overall_score"]
        for dim in SOTOPIA_DIMENSIONS:
            assert dim.range_low <= detail[dim.name] <= dim.range_high
        assert (
            overall == detail["overall_score"] == pytest.approx(sum(detail[n] for n in names) / 7)
        )
    assert log.reasoning.startswith(
        "Environment comments: terminated: The conversation is too long; \nAgent 1 comments:\n"
    )
    assert "Agent 2 comments:\nbelievability: " in log.reasoning
    assert "Evaluate how well Alice Smith did" in log.rewards_prompt
    assert ALICE.secret in log.rewards_prompt  # the judge sees everything
    json.dumps(log.model_dump())


async def test_out_of_range_score_is_reasked(fake_llm: FakeLLM, registry: ModelRegistry) -> None:
    setup = make_setup(fake_llm.model_name(), max_turns=1, dimensions=DIMS)
    transcript = await simulate(setup, registry)
    fake_llm.add_rule(Rule(kind="judge", contains=["how well Bob Jones"], content=_scores(9, -3)))
    evaluation = await evaluate(setup, transcript, registry)
    bob = evaluation.agents[1]
    assert bob.scores["warmth"].score == 2 and bob.scores["greed"].score == -3
    assert bob.overall == pytest.approx(-0.5)
    assert evaluation.stats.repairs == 1
    reask = [r for r in fake_llm.requests_of("judge") if "cannot be used" in r.text]
    assert "warmth: score 9 is outside the range 1..3" in reask[0].text


async def test_judge_falls_back_per_dimension(fake_llm: FakeLLM, registry: ModelRegistry) -> None:
    setup = make_setup(fake_llm.model_name(), max_turns=1, dimensions=DIMS)
    transcript = await simulate(setup, registry)
    fake_llm.add_rule(
        Rule(kind="judge", contains=["how well Alice Smith"], content=_scores(3, 7), times=2)
    )
    evaluation = await evaluate(setup, transcript, registry)
    alice = evaluation.agents[0]
    assert alice.scores["warmth"].score == 3  # kept from the answer
    assert alice.scores["greed"].score == -3  # asked again on its own
    assert evaluation.stats.fallbacks == 1


async def test_per_dimension_judge(fake_llm: FakeLLM, registry: ModelRegistry) -> None:
    setup = make_setup("fake-small", max_turns=2, dimensions=DIMS)
    transcript = await simulate(setup, registry)
    evaluation = await evaluate(setup, transcript, registry)
    judge_requests = fake_llm.requests_of("judge")
    assert len(judge_requests) == 4  # 2 agents x 2 dimensions
    schema = judge_requests[0].body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["score"] == {"type": "integer", "minimum": 1, "maximum": 3}
    assert schema["properties"]["reasoning"]["maxLength"] == 200
    assert [a.overall for a in evaluation.agents] == [-0.5, -0.5]


async def test_per_dimension_integer_fallback(fake_llm: FakeLLM, registry: ModelRegistry) -> None:
    setup = make_setup("fake-small", max_turns=1, dimensions=DIMS[:1])
    transcript = await simulate(setup, registry)
    fake_llm.add_rule(
        Rule(kind="judge", contains=["Rate Alice Smith"], content='{"score": 99}', times=2)
    )
    evaluation = await evaluate(setup, transcript, registry)
    assert evaluation.agents[0].scores["warmth"].score == 2
    assert evaluation.stats.fallbacks == 1
    alice = [r for r in fake_llm.requests_of("judge") if "Rate Alice Smith" in r.text]
    assert [r.body["response_format"]["json_schema"]["name"] for r in alice] == [
        "dimension_score",
        "dimension_score",
        "score",
    ]


async def test_judge_never_valid_fails(fake_llm: FakeLLM, registry: ModelRegistry) -> None:
    setup = make_setup(fake_llm.model_name(), max_turns=1, dimensions=DIMS)
    transcript = await simulate(setup, registry)
    fake_llm.add_rule(Rule(kind="judge", content="no idea", times=None))
    with pytest.raises(EpisodeFailed, match="gave no valid scores") as info:
        await evaluate(setup, transcript, registry)
    assert info.value.stats.failures >= 1


async def test_a_judge_that_times_out_leaves_the_conversation_unjudged(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    """Judge requests have their own timeout: turns slower than it are answered, the judge that
    never answers times out on each try, and the conversation comes back whole with the reason
    (it was an uncaught transport error of the whole-episode request)."""
    fake_llm.delay = 0.5  # every answer: longer than the judge's 0.3 s, within a turn's 5 s
    fake_llm.add_rule(Rule(kind="judge", hang=True, times=None))
    played = await play(make_setup("fake-slow-judge", max_turns=2), registry)
    assert played.transcript.turns == 2 and len(played.transcript.actions) == 2
    assert played.evaluation is None
    assert played.unjudged is not None
    assert "judge fake-slow-judge gave no valid scores" in played.unjudged
    assert "timed out after 0.3 s (after 3 attempts)" in played.unjudged
    assert isinstance(played.judged, JudgeFailed) and played.judged.stats.timeouts == 3
    assert played.stats.timeouts == 3  # the judge's tries count with the turns'
    log = played.log_parts()
    assert log.rewards == [0.0, 0.0] and log.reasoning == ""  # Sotopia's shape for no scores
    assert len(log.messages) == 3


def _episode_scores(alice: dict[str, int] | None, bob: dict[str, int]) -> str:
    answer = {"Bob Jones": {"reasoning": "steady", **bob}}
    if alice is not None:
        answer["Alice Smith"] = {"reasoning": "kind", **alice}
    return json.dumps(answer)


async def test_whole_episode_judge(fake_llm: FakeLLM, registry: ModelRegistry) -> None:
    setup = make_setup("fake-tiny", max_turns=2, dimensions=DIMS)
    transcript = await simulate(setup, registry)
    fake_llm.add_rule(
        Rule(
            kind="judge",
            content=_episode_scores({"warmth": 3, "greed": -2}, {"warmth": 1, "greed": -4}),
        )
    )
    evaluation = await evaluate(setup, transcript, registry)
    assert evaluation.stats.requests == 1  # one request scores everybody
    request = fake_llm.requests_of("judge")[-1]
    schema = request.body["response_format"]["json_schema"]["schema"]
    assert schema["required"] == ["Alice Smith", "Bob Jones"]
    assert schema["properties"]["Bob Jones"]["properties"]["greed"] == {
        "type": "integer",
        "minimum": -4,
        "maximum": -2,
    }
    alice, bob = evaluation.agents
    assert (alice.scores["warmth"].score, alice.scores["greed"].score) == (3, -2)
    assert bob.overall == pytest.approx(-1.5)
    assert (alice.comment, bob.comment) == ("kind", "steady")
    log = episode_log_parts(transcript, evaluation)
    assert "Agent 1 comments:\nkind\n" in log.reasoning
    assert log.rewards_prompt.startswith("Scenario: ") and ALICE.secret in log.rewards_prompt


async def test_whole_episode_judge_fills_gaps_per_dimension(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    """Alice is missing and Bob's greed is out of range, twice: the re-ask keeps what was valid
    and asks the rest one dimension at a time."""
    setup = make_setup("fake-tiny", max_turns=1, dimensions=DIMS)
    transcript = await simulate(setup, registry)
    answer = _episode_scores(None, {"warmth": 1, "greed": 5})
    fake_llm.add_rule(Rule(kind="judge", content=answer, times=2))
    evaluation = await evaluate(setup, transcript, registry)
    alice, bob = evaluation.agents
    assert bob.scores["warmth"].score == 1  # kept from the whole-episode answer
    assert bob.scores["greed"].score == -3 and alice.scores["warmth"].score == 2  # asked alone
    assert evaluation.stats.repairs >= 1 and evaluation.stats.fallbacks == 1
    reask = fake_llm.requests_of("judge")[1]
    assert "Alice Smith: missing" in reask.text and "outside the range -4..-2" in reask.text


def test_evaluation_schema_defines_a_shared_range_once() -> None:
    schema = evaluation_schema(SOTOPIA_DIMENSIONS)
    defs = schema["$defs"]

    def resolved(prop: dict[str, Any]) -> dict[str, Any]:
        return defs[prop["$ref"].rsplit("/", 1)[1]] if "$ref" in prop else prop

    for dim in SOTOPIA_DIMENSIONS:
        entry = resolved(schema["properties"][dim.name])
        assert entry["required"] == ["reasoning", "score"]
        score = entry["properties"]["score"]
        assert (score["minimum"], score["maximum"]) == (dim.range_low, dim.range_high)
    assert len(defs) == 3  # 0..10, -5..5 and -10..0
    assert schema["required"] == [d.name for d in SOTOPIA_DIMENSIONS]
    inline = evaluation_schema(DIMS)  # every range used once: nothing to share
    assert "$defs" not in inline and inline["properties"]["greed"]["properties"]["score"] == {
        "type": "integer",
        "minimum": -4,
        "maximum": -2,
    }
