"""How an experiment's progress stream takes one status event."""

from lifecycle.experiment_follow import apply
from lifecycle.experiments import Tally
from lifecycle.transitions import NOT_JUDGED, EpisodeEvent, EventKind
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


def test_a_completion_without_scores_is_counted_apart_until_it_has_them() -> None:
    state = Tally(total=2, since=0.0, states={"a": (EpisodeStatus.EVALUATING, 0.0)})
    unjudged = status("a", "exp").model_copy(update={"reason": NOT_JUDGED + "judge timed out"})
    assert apply(unjudged, state, "exp") is True
    progress = state.progress(20.0)
    assert progress.unjudged == 1 and progress.counts[EpisodeStatus.COMPLETED] == 1
    # the episode's state read again once it has scores (a re-judging filled them)
    state.saw("a", EpisodeStatus.COMPLETED, 10.0, unjudged=False)
    assert state.progress(20.0).unjudged == 0
    plain = Tally(2, 0.0, {"b": (EpisodeStatus.RUNNING, 0.0)})
    assert apply(status("b", "exp"), plain, "exp") is True
    assert plain.progress(20.0).unjudged == 0  # a completion with its scores
