"""Exceptions raised by the engine."""

from __future__ import annotations

from engine.stats import GenerationStats


class EngineError(Exception):
    """Base class of engine errors."""


class UnknownModelError(EngineError):
    """A model name that is unknown or cannot be used (e.g. its API key is missing)."""


class LLMError(EngineError):
    """A model call failed for good (retries and repairs exhausted)."""


class LLMTransportError(LLMError):
    """The endpoint could not be reached or kept failing."""


class LLMOutputError(LLMError):
    """The model kept answering with output that does not parse or validate."""


class LocalModelError(EngineError):
    """The embedded model server could not be prepared or started."""


class EpisodeFailed(EngineError):
    """The episode cannot go on (or cannot be scored); nothing was made up instead."""

    def __init__(self, reason: str, stats: GenerationStats) -> None:
        super().__init__(reason)
        self.reason = reason
        self.stats = stats
