"""How an experiment's progress stream takes one status event."""

from lifecycle.experiment_follow import apply
from lifecycle.experiments import Tally
from lifecycle.transitions import EpisodeEvent, EventKind
from storage.models import EpisodeStatus


def status(episode_id: str, experiment_id: str | None, tag: str = "") -> EpisodeEvent:
    return EpisodeEvent(
        type=EventKind.STATUS,
        episode_id=episode_id,
        sequence=2,
        at=10.0,
        tag=tag,
        experiment_id=experiment_id,
        status=EpisodeStatus.COMPLETED,
    )


def test_an_event_is_counted_read_again_for_or_passed_over_by_its_experiment() -> None:
    state = Tally(total=2, since=0.0, states={"known": (EpisodeStatus.RUNNING, 0.0)})
    assert apply(status("known", "exp"), state, "exp") is True
    assert state.states["known"] == (EpisodeStatus.COMPLETED, 10.0)
    # an episode of its own it does not know yet (a start elsewhere): read everything again
    assert apply(status("new", "exp"), state, "exp") is None
    # another experiment's episode with the same tag, or an episode of none: passed over
    assert apply(status("other", "exp-2", tag="shared"), state, "exp") is False
    assert apply(status("plain", None), state, "exp") is False
    assert apply(None, state, "exp") is None  # events may have been lost
