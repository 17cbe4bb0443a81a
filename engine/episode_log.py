"""Sotopia's EpisodeLog fields from a transcript and its evaluation."""

from __future__ import annotations

from typing import Protocol

from parley.engine.types import EpisodeLogParts, Reward, Transcript


class Judgement(Protocol):
    """What an evaluation gives an EpisodeLog (a judge's, or a panel's)."""

    reasoning: str
    rewards_prompt: str

    def rewards(self) -> list[Reward]: ...


def episode_log_parts(transcript: Transcript, evaluation: Judgement | None) -> EpisodeLogParts:
    """messages/rewards/reasoning/rewards_prompt shaped as Sotopia stores them.

    rewards[i] = [overall, {dims..., overall_score}]; without an evaluation (the judge gave
    none), Sotopia's bare 0.0 for each agent, which results count apart as unscored.
    """
    messages = [list(turn) for turn in transcript.messages]
    if evaluation is None:
        rewards: list[tuple[float, dict[str, float]] | float] = [0.0] * len(transcript.agent_names)
        return EpisodeLogParts(messages=messages, reasoning="", rewards=rewards, rewards_prompt="")
    return EpisodeLogParts(
        messages=messages,
        reasoning=evaluation.reasoning,
        rewards=list(evaluation.rewards()),
        rewards_prompt=evaluation.rewards_prompt,
    )
