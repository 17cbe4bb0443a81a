"""An episode's events: parsed strictly, and rebuilt from what is stored in sequence order."""

import pytest

from parley.storage.events import (
    EventKind,
    MalformedEvent,
    parse_event,
    snapshot_event,
    stored_events,
)
from parley.storage.models import EpisodeLog, EpisodeStatus, StatusChange, StoredTurn


def episode() -> EpisodeLog:
    return EpisodeLog(
        pk="ep1",
        environment="env",
        agents=["a", "b"],
        status=EpisodeStatus.COMPLETED,
        sequence=5,
        attempt=1,
        created_at=10.0,
        tag="t",
        status_history=[
            StatusChange(status=EpisodeStatus.QUEUED, at=10.0, sequence=1),
            StatusChange(status=EpisodeStatus.RUNNING, at=11.0, sequence=2, attempt=1),
            StatusChange(status=EpisodeStatus.COMPLETED, at=14.0, sequence=5, attempt=1),
        ],
        turns=[
            StoredTurn(
                action_type="speak",
                argument="hi",
                turn=0,
                agent_index=0,
                agent_name="A",
                sequence=3,
                at=12.0,
            ),
            StoredTurn(
                action_type="leave", turn=1, agent_index=1, agent_name="B", sequence=4, at=13.0
            ),
        ],
    )


def test_stored_events_are_rebuilt_in_sequence_with_each_previous_status() -> None:
    events = stored_events(episode())
    assert [(e.sequence, e.type) for e in events] == [
        (1, EventKind.STATUS),
        (2, EventKind.STATUS),
        (3, EventKind.TURN),
        (4, EventKind.TURN),
        (5, EventKind.STATUS),
    ]
    assert [e.previous_status for e in events if e.type == EventKind.STATUS] == [
        None,
        EpisodeStatus.QUEUED,
        EpisodeStatus.RUNNING,
    ]
    assert events[-1].terminal and not events[1].terminal


def test_only_events_after_a_sequence_are_rebuilt() -> None:
    assert [e.sequence for e in stored_events(episode(), after=3)] == [4, 5]


def test_a_snapshot_is_the_state_now_at_its_last_change() -> None:
    snapshot = snapshot_event(episode())
    assert (snapshot.type, snapshot.sequence, snapshot.at, snapshot.status) == (
        EventKind.SNAPSHOT,
        5,
        14.0,
        EpisodeStatus.COMPLETED,
    )


def test_an_event_reads_back_as_itself() -> None:
    event = stored_events(episode())[2]
    assert parse_event(event.model_dump_json()) == event


@pytest.mark.parametrize(
    "payload",
    ["not json", "{}", '{"type": "status", "episode_id": "e", "sequence": 1, "at": 1, "extra": 1}'],
)
def test_anything_else_is_a_malformed_event_quoting_the_payload(payload: str) -> None:
    with pytest.raises(MalformedEvent, match="payload"):
        parse_event(payload)
