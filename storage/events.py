"""An episode's events: what happened to it, numbered by its sequence.

`EpisodeEvent` is the one declaration of an event: the episode store's scripts emit exactly its
JSON shape (a test checks every payload they can emit), and `stored_events` rebuilds the same
events from storage.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict

from parley.storage.models import (
    EpisodeLog,
    EpisodeStatus,
    StatusChange,
    StoredInjection,
    StoredTurn,
    Waiting,
)

Status = EpisodeStatus
NOT_JUDGED = "not judged: "
"""How the reason of a COMPLETED change begins when the episode has no scores (the only
COMPLETED change with a reason): what follows is why its judge gave none."""


class EventKind(StrEnum):
    """SNAPSHOT is the stored state when a stream starts; then STATUS changes and TURNs.
    CURSOR_EXPIRED says a resuming stream's cursor is older than what is kept: snapshots of the
    current state follow it instead of the missed events."""

    SNAPSHOT = "snapshot"
    STATUS = "status"
    TURN = "turn"
    INJECTION = "injection"
    CURSOR_EXPIRED = "cursor_expired"


class EpisodeEvent(BaseModel):
    """Something that happened to an episode, numbered by the episode's sequence."""

    model_config = ConfigDict(extra="forbid")

    type: EventKind
    episode_id: str
    sequence: int
    at: float
    attempt: int = 0
    tag: str | None = None
    experiment_id: str | None = None
    """The experiment of the episode, so an experiment's stream knows its new episodes."""
    status: EpisodeStatus | None = None
    previous_status: EpisodeStatus | None = None
    reason: str | None = None
    turn: StoredTurn | None = None
    resumed_from: int | None = None
    """On the RUNNING of a resumed attempt: the number of turns kept from before."""
    waiting: Waiting | None = None
    """On a WAITING: whose turn it is and until when."""
    injection: StoredInjection | None = None
    """On an INJECTION: the environment message added."""
    log_id: str | None = None
    """The status event's id in the events log (the cursor of episodeUpdates streams)."""

    @property
    def terminal(self) -> bool:
        return self.type == EventKind.STATUS and self.status is not None and self.status.terminal


class MalformedEvent(ValueError):
    """A pub/sub payload on Parley's channels that is not an EpisodeEvent."""


def parse_event(data: str | bytes) -> EpisodeEvent:
    try:
        return EpisodeEvent.model_validate_json(data)
    except ValueError as err:
        raise MalformedEvent(f"{err}; payload {data[:300]!r}") from None


def episode_event(
    kind: EventKind, episode: EpisodeLog, sequence: int, at: float, attempt: int, **fields: Any
) -> EpisodeEvent:
    """An event of `episode`: what every kind carries, and `fields` of its own."""
    return EpisodeEvent(
        type=kind,
        episode_id=str(episode.pk),
        sequence=sequence,
        at=at,
        attempt=attempt,
        tag=episode.tag,
        **fields,
    )


def status_event(
    episode: EpisodeLog, change: StatusChange, previous: Status | None
) -> EpisodeEvent:
    return episode_event(
        EventKind.STATUS,
        episode,
        change.sequence,
        change.at,
        change.attempt,
        experiment_id=episode.experiment_id,
        status=change.status,
        previous_status=previous,
        reason=change.reason,
        resumed_from=change.resumed_from,
        waiting=change.waiting,
    )


def snapshot_event(episode: EpisodeLog) -> EpisodeEvent:
    """The episode as stored now, as the first event of a stream."""
    history = episode.status_history
    at = history[-1].at if history else episode.created_at
    return episode_event(
        EventKind.SNAPSHOT,
        episode,
        episode.sequence,
        at,
        episode.attempt,
        experiment_id=episode.experiment_id,
        status=episode.status,
        waiting=episode.waiting,
    )


def stored_events(episode: EpisodeLog, after: int = 0) -> list[EpisodeEvent]:
    """The episode's events with a sequence above `after`, rebuilt from what is stored."""
    events: list[EpisodeEvent] = []
    previous: Status | None = None
    for change in episode.status_history:
        if change.sequence > after:
            events.append(status_event(episode, change, previous))
        previous = change.status
    for turn in episode.turns:
        if turn.sequence > after:
            kind = EventKind.TURN
            events.append(
                episode_event(kind, episode, turn.sequence, turn.at, episode.attempt, turn=turn)
            )
    for injection in episode.injections:
        if injection.sequence > after:
            events.append(injection_event(episode, injection))
    return sorted(events, key=lambda e: e.sequence)


def injection_event(episode: EpisodeLog, injection: StoredInjection) -> EpisodeEvent:
    return episode_event(
        EventKind.INJECTION,
        episode,
        injection.sequence,
        injection.at,
        episode.attempt,
        injection=injection,
    )
