"""Sotopia's EpisodeLog fields from a transcript and its evaluation."""

from __future__ import annotations

from engine.types import EpisodeLogParts, Evaluation, Transcript


def episode_log_parts(transcript: Transcript, evaluation: Evaluation) -> EpisodeLogParts:
    """messages/rewards/reasoning/rewards_prompt shaped as Sotopia stores them.

    rewards[i] = [overall, {dims..., overall_score}].
    """
    return EpisodeLogParts(
        messages=[list(turn) for turn in transcript.messages],
        reasoning=evaluation.reasoning,
        rewards=evaluation.rewards(),
        rewards_prompt=evaluation.rewards_prompt,
    )
