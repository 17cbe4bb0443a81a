"""The one retry schedule: doubling from base up to cap, spread by jitter into [0.5, 1) of it."""

from itertools import islice

from parley.core.backoff import Backoff


def test_delays_double_from_base_and_stop_at_cap() -> None:
    assert list(islice(Backoff(base=0.5, cap=3.0).delays(), 6)) == [0.5, 1.0, 2.0, 3.0, 3.0, 3.0]


def test_jitter_keeps_each_delay_within_half_and_all_of_the_schedule() -> None:
    plain, spread = Backoff(base=1.0, cap=8.0), Backoff(base=1.0, cap=8.0, jitter=True)
    for attempt in range(1, 7):
        delays = {spread.delay(attempt) for _ in range(50)}
        assert all(plain.delay(attempt) / 2 <= d < plain.delay(attempt) for d in delays)
        assert len(delays) > 1
