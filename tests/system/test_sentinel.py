"""A Redis failover under load: a primary, a replica and three Sentinels from the bundled server,
an API and two workers on the Sentinel URL with acknowledged writes waiting for the replica; the
primary is killed with episodes in flight and starts still coming (bench/support/failover.py).

Run on its own with `pytest -m sentinel`.
"""

from collections import Counter
from pathlib import Path

import pytest

from bench.support.failover import Plan, run_failover

pytestmark = [pytest.mark.sentinel, pytest.mark.timeout(240)]


async def test_a_killed_primary_loses_nothing_acknowledged(tmp_path: Path) -> None:
    report = await run_failover(tmp_path, Plan())
    statuses = Counter(read["status"] if read else "MISSING" for read in report.episodes.values())
    summary = (
        f"{len(report.acknowledged)} starts acknowledged, {len(report.failures)} failed tries, "
        f"clients saw errors for {report.window:.1f} s, promoted after "
        f"{report.promoted_after:.1f} s, episodes {dict(statuses)}"
    )
    print(summary)
    # Starts came before, during and after the failover, and some were refused meanwhile.
    assert report.failures, summary
    assert len(report.acknowledged) >= 20, summary
    assert report.given_up == [], summary
    assert {code for _, code in report.failures} <= {"UNAVAILABLE"}, report.failures
    # The same idempotency key names the same episode, whatever happened between the two.
    assert report.repeated == report.acknowledged
    # Nothing acknowledged is lost: every episode is there, and ended.
    assert set(report.episodes) == set(report.acknowledged.values())
    assert statuses == {"COMPLETED": len(report.acknowledged)}, summary
    assert not any(report.unfinished.values()), report.unfinished
    assert report.duplicate_turns() == {}
    # The replica is the primary now, and the API and workers followed it without a restart.
    assert report.new_port != report.old_port
    assert report.processes_alive
