"""Sotopia's EpisodeLog fields from a transcript and its evaluation."""

from parley.engine.episode_log import episode_log_parts
from parley.engine.stats import GenerationStats
from parley.engine.types import AgentEvaluation, DimensionScore, Evaluation, Transcript

TRANSCRIPT = Transcript(
    agent_names=["Ann Lee", "Bo Chen"],
    messages=[[("Environment", "Ann Lee", "hello"), ("Ann Lee", "Environment", "said: hi")]],
    actions=[],
    turns=1,
    termination=["max_turns"],
    termination_reason="max turns",
    stats=GenerationStats(),
)


def test_an_evaluation_gives_sotopias_rewards_per_agent() -> None:
    evaluation = Evaluation(
        agents=[
            AgentEvaluation(
                agent_name="Ann Lee", scores={"goal": DimensionScore(score=7)}, overall=7.0
            ),
            AgentEvaluation(
                agent_name="Bo Chen", scores={"goal": DimensionScore(score=3)}, overall=3.0
            ),
        ],
        reasoning="both tried",
        rewards_prompt="judge this",
        stats=GenerationStats(),
    )
    parts = episode_log_parts(TRANSCRIPT, evaluation)
    assert parts.messages == TRANSCRIPT.messages
    assert parts.rewards == [
        (7.0, {"goal": 7.0, "overall_score": 7.0}),
        (3.0, {"goal": 3.0, "overall_score": 3.0}),
    ]
    assert (parts.reasoning, parts.rewards_prompt) == ("both tried", "judge this")


def test_without_an_evaluation_each_agent_gets_sotopias_bare_zero() -> None:
    parts = episode_log_parts(TRANSCRIPT, None)
    assert parts.rewards == [0.0, 0.0]
    assert (parts.reasoning, parts.rewards_prompt) == ("", "")
