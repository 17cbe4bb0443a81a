"""Redis failover through Sentinel: what waiting for a replica costs, and how long clients see
errors when the primary is killed.

Run: python -m bench.bench_failover [--writes N] [--runs N]

1. A primary, a replica and three Sentinels on loopback (bench/support/sentinels.py). Through
   the Sentinel URL, the two acknowledged writes that happen most, a start's (the episode, its
   event and its job, one script) and a turn's, each timed N times with no replica asked for and
   with PARLEY_REPLICAS_ACKED=1 (the script, then WAIT 1, one round trip). Then one write
   followed by `WAIT 1` and by `WAITAOF 0 1` (the replica's append-only file synced), with the
   replica's appendfsync everysec and always.
2. The failover test's scenario (bench/support/failover.py), `--runs` times: starts through
   the failover, retried with their idempotency keys; how long the clients saw errors, and
   when the replica was promoted and the killed node was back as a replica.
"""

import argparse
import asyncio
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

import redis.asyncio as redis

from bench.common import summary_ms
from bench.support.failover import Plan, run_failover
from bench.support.sentinels import SentinelCluster
from parley.lifecycle.start import SimulationFields, new_episode
from parley.storage import keys
from parley.storage.connection import open_client
from parley.storage.durability import ReplicaAcks
from parley.storage.episode_store import EpisodeStore
from parley.storage.models import EpisodeStatus

ACKS = ReplicaAcks(1, 1.0)


async def timed(count: int, write: Callable[[int], Awaitable[object]]) -> list[float]:
    took = []
    for i in range(count):
        began = time.perf_counter()
        await write(i)
        took.append(time.perf_counter() - began)
    return took


async def writes(url: str, count: int, acks: ReplicaAcks | None) -> tuple[list[float], list[float]]:
    """(a start's write, a turn's write) timed `count` times each."""
    client = open_client(url, acks=acks)
    store = EpisodeStore(client)
    fields = SimulationFields(scenario_id="bench-scenario", agent_ids=["bench-a", "bench-b"])
    try:

        async def start(_: int) -> object:
            return await store.create([new_episode(fields, {})], keys.JOBS)

        starts = await timed(count, start)
        [episode_id] = await store.create([new_episode(fields, {})], keys.JOBS)
        began = await store.transition(
            episode_id, EpisodeStatus.RUNNING, fence=0, attempt_mode="restart", owner="bench"
        )
        assert began.ok, began

        async def turn(i: int) -> object:
            said = {"turn": i, "agent_index": i % 2, "action_type": "speak", "argument": "Hi"}
            return await store.append_turn(episode_id, 1, said, i + 1, [("a", "b", "Hi")])

        turns = await timed(count, turn)
        return starts, turns
    finally:
        await client.aclose()


async def raw_waits(url: str, count: int) -> dict[str, list[float]]:
    """A SET alone, then followed by WAIT 1, then by WAITAOF 0 1, on one connection."""
    client = open_client(url, max_connections=1)
    found: dict[str, list[float]] = {}
    try:
        plans: list[tuple[str, tuple[str | int, ...] | None, int]] = [
            ("SET", None, count),
            ("SET + WAIT 1", ("WAIT", 1, 2000), count),
            ("SET + WAITAOF 0 1", ("WAITAOF", 0, 1, 3000), min(count, 20)),
        ]
        for name, after, times in plans:
            found[name] = await timed(times, partial(_set_then, client, after=after))
    finally:
        await client.aclose()
    return found


async def _set_then(client: redis.Redis, i: int, after: tuple[str | int, ...] | None) -> object:
    await client.set("bench:failover", i)
    if after is not None:
        return await client.execute_command(*after)  # type: ignore[no-untyped-call]
    return None


async def costs(count: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, SentinelCluster(Path(tmp)) as cluster:
        for label, acks in (("no replica asked for", None), ("PARLEY_REPLICAS_ACKED=1", ACKS)):
            starts, turns = await writes(cluster.url, count, acks)
            print(f"{label}")
            print(f"  a start's write  {summary_ms(starts)}")
            print(f"  a turn's write   {summary_ms(turns)}")
        for name, took in (await raw_waits(cluster.url, count)).items():
            print(f"replica appendfsync everysec: {name:18} {summary_ms(took)}")
    with (
        tempfile.TemporaryDirectory() as tmp,
        SentinelCluster(Path(tmp), appendfsync="always") as cluster,
    ):
        for name, took in (await raw_waits(cluster.url, count)).items():
            print(f"replica appendfsync always:   {name:18} {summary_ms(took)}")


async def failovers(runs: int) -> None:
    for run in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            report = await run_failover(Path(tmp), Plan())
        statuses = Counter(
            read["status"] if read else "MISSING" for read in report.episodes.values()
        )
        codes = Counter(code for _, code in report.failures)
        before = [at for at, _ in report.failures if at < report.promoted_after]
        print(
            f"run {run + 1}: {len(report.acknowledged)} starts acknowledged "
            f"({len(report.given_up)} given up), {len(report.failures)} failed tries "
            f"{dict(codes)}; errors seen for {report.window:.2f} s "
            f"({len(before)} before the promotion); promoted {report.promoted_after:.2f} s "
            f"after the kill, killed node back as a replica {report.rejoined_after:.2f} s after "
            f"it was started again; slowest acknowledged start {max(report.start_seconds):.2f} s; "
            f"episodes {dict(statuses)}; unfinished {sum(report.unfinished.values())}; "
            f"duplicate turns {len(report.duplicate_turns())}; same episode for a repeated key: "
            f"{report.repeated == report.acknowledged}"
        )


async def main(count: int, runs: int) -> None:
    await costs(count)
    await failovers(runs)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--writes", type=int, default=500, help="writes timed per kind")
    parser.add_argument("--runs", type=int, default=3, help="failovers")
    args = parser.parse_args()
    asyncio.run(main(args.writes, args.runs))
