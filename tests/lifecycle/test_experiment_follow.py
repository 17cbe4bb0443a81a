"""How an experiment's progress stream takes one status event."""

from parley.lifecycle.experiment_follow import apply
from parley.lifecycle.experiments import Tally
from parley.storage.events import NOT_JUDGED, EpisodeEvent, EventKind
from parley.storage.models import EpisodeStatus


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


def test_rate_and_time_left_count_completed_episodes_only() -> None:
    """Failed episodes often end at once: counting them made 12 episodes that all failed in a
    quarter of a second "3111.3 episodes a minute, finished"."""
    failed = {f"f{i}": (EpisodeStatus.FAILED, 100.0 + i / 50) for i in range(12)}
    all_failed = Tally(total=12, since=100.0, states=dict(failed)).progress(now=130.0)
    assert all_failed.finished and not all_failed.all_completed
    assert (all_failed.episodes_per_minute, all_failed.seconds_left) == (0.0, 0.0)

    running = {f"r{i}": (EpisodeStatus.RUNNING, 0.0) for i in range(4)}
    early = Tally(total=20, since=100.0, states={**failed, **running}).progress(now=130.0)
    assert early.episodes_per_minute == 0.0 and early.seconds_left is None  # nothing to go by

    done = {"c0": (EpisodeStatus.COMPLETED, 110.0), "c1": (EpisodeStatus.COMPLETED, 120.0)}
    mixed = Tally(total=20, since=100.0, states={**failed, **running, **done}).progress(130.0)
    assert mixed.episodes_per_minute == 4.0  # 2 completed in 30 s; the 12 failed count nothing
    assert mixed.seconds_left == 90.0  # 2 slots not queued and 4 running, at 2 in 30 s


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
