"""Episode events on Redis pub/sub: channel names and the JSON payload shape.

Every event carries the episode's sequence number, assigned atomically with the change it
reports, so a reader can order events, drop duplicates and notice gaps.
"""

from typing import Literal

from pydantic import BaseModel

from storage.models import EpisodeStatus, StoredTurn

GLOBAL_CHANNEL = "parley:events:episodes"
"""Status events of every episode (turns are only on the per-episode channel)."""


def episode_channel(episode_id: str) -> str:
    return f"parley:events:episode:{episode_id}"


class EpisodeEvent(BaseModel):
    type: Literal["status", "turn"]
    episode_id: str
    sequence: int
    at: float
    attempt: int = 0
    tag: str | None = None
    status: EpisodeStatus | None = None
    previous_status: EpisodeStatus | None = None
    reason: str | None = None
    turn: StoredTurn | None = None

    @property
    def terminal(self) -> bool:
        return self.type == "status" and self.status is not None and self.status.terminal


def parse_event(data: str | bytes) -> EpisodeEvent | None:
    """Decode a pub/sub payload; foreign or malformed messages are ignored."""
    try:
        return EpisodeEvent.model_validate_json(data)
    except ValueError:
        return None
