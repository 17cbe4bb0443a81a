"""Counters of what it took to get usable answers from the models."""

from __future__ import annotations

from pydantic import BaseModel, Field

from parley.engine.usage import Usage, merged


class GenerationStats(BaseModel):
    """Carried on Transcript, Evaluation and EpisodeFailed so callers can store them."""

    requests: int = 0
    """HTTP requests sent (including retries)."""
    retries: int = 0
    """Requests repeated after a transport error, timeout, 429 or 5xx."""
    timeouts: int = 0
    rate_limited: int = 0
    server_errors: int = 0
    """5xx answers."""
    transport_errors: int = 0
    """Connection failures."""
    invalid_outputs: int = 0
    """Answers that did not parse or validate."""
    repairs: int = 0
    """Re-asks sent after an invalid answer."""
    fallbacks: int = 0
    """Switches to a simpler request form (e.g. no JSON schema, integer-only score)."""
    failures: int = 0
    """Generations that produced nothing usable in the end."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_seconds: float = 0.0
    usage: Usage = Field(default_factory=dict, exclude=True)
    """Tokens by model, each count the provider's or estimated; kept out of `model_dump` (the
    stored generation_stats stay flat counters) and stored as the episode's usage."""

    def merge(self, other: GenerationStats) -> GenerationStats:
        """Return the sum of two counters."""
        data = self.model_dump()
        for key, value in other.model_dump().items():
            data[key] = data[key] + value
        total = GenerationStats.model_validate(data)
        total.usage = merged(self.usage, other.usage)
        return total
