"""Fan-out of one API process: websocket subscribers on one dashboard, at stepped event rates.

Run: python -m bench.bench_subscribers [--subscribers 200] [--rates 25,50,100,150,200]
         [--step 5] [--deflate | --no-deflate]

Starts an embedded Redis and one `parley serve --no-worker` (permessage-deflate on or off),
stores enough QUEUED episodes with one tag, and opens SUBSCRIBERS graphql-transport-ws
connections that all follow `episodeUpdates(tag)`: one document with one set of variables, so
every status change reaches every subscriber. Then, for each rate R, it moves episodes through
RUNNING, EVALUATING and COMPLETED from this process at R status changes a second for STEP
seconds (open loop: R x SUBSCRIBERS deliveries a second offered) and waits until every
subscriber has every change before the next step.

Per step it prints deliveries offered and delivered per second (delivered: the step's
deliveries over the time from its first change to the last receipt) and the per-delivery
latency, from the change's timestamp (taken by the store just before the script that publishes
it) to the subscriber reading it. The saturation point is the step that delivered the most per
second; the sustained rate is the highest step whose p99 stayed under 250 ms with nothing lost.
The subscribers share this process (and the machine) with the publisher, so their own lag is
in the latencies.
"""

import argparse
import asyncio
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import redis.asyncio as redis

from bench.common import bench_redis, percentile, rss_mib
from bench.support.episodes import queued_episode
from bench.support.processes import api_process, parley_env
from bench.support.subscriber import Subscriber
from parley.graph.cli import event_loop_factory
from parley.storage import keys
from parley.storage.episode_store import EpisodeStore
from parley.storage.models import EpisodeStatus
from parley.storage.vocabulary import AttemptMode

SUBSCRIBE = """
subscription($tag: String) {
  episodeUpdates(tag: $tag) { kind episodeId sequence status occurredAt }
}"""
AFTER_QUEUED = (EpisodeStatus.RUNNING, EpisodeStatus.EVALUATING, EpisodeStatus.COMPLETED)
SUSTAINED_P99 = 0.250
CATCH_UP = 60.0
"""Seconds a step's deliveries may take to arrive after its last change."""


@dataclass
class Step:
    rate: float
    changes: int
    offered: float
    delivered: float
    lost: int
    latencies: list[float]

    @property
    def sustained(self) -> bool:
        return not self.lost and percentile(self.latencies, 99) < SUSTAINED_P99


async def store_episodes(client: redis.Redis, count: int, tag: str) -> list[str]:
    store = EpisodeStore(client)
    ids: list[str] = []
    for start in range(0, count, 500):
        batch = [queued_episode(tag) for _ in range(min(500, count - start))]
        await store.create(batch, keys.JOBS)
        ids += [str(e.pk) for e in batch]
    return ids


async def publish(store: EpisodeStore, ids: list[str], rate: float) -> None:
    """Each episode through RUNNING, EVALUATING, COMPLETED (one status for all, then the next),
    one change every 1/rate s on schedule, whether or not earlier ones have returned."""
    began = time.perf_counter()
    due = 0
    for status in AFTER_QUEUED:
        tasks = []
        for episode_id in ids:
            wait = began + due / rate - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
            mode: AttemptMode = "restart" if status == EpisodeStatus.RUNNING else "none"
            tasks.append(
                asyncio.create_task(store.transition(episode_id, status, attempt_mode=mode))
            )
            due += 1
        results = await asyncio.gather(*tasks)
        assert all(r.ok for r in results), [r for r in results if not r.ok][:1]


async def run_step(
    store: EpisodeStore, ids: list[str], rate: float, clients: list[Subscriber]
) -> Step:
    marks = [len(c.latencies) for c in clients]
    expected = len(ids) * len(AFTER_QUEUED)
    began = time.perf_counter()
    await publish(store, ids, rate)
    deadline = time.monotonic() + CATCH_UP
    while time.monotonic() < deadline:
        if all(len(c.latencies) - m >= expected for c, m in zip(clients, marks, strict=True)):
            break
        await asyncio.sleep(0.01)
    elapsed = time.perf_counter() - began
    received = [c.latencies[m:] for c, m in zip(clients, marks, strict=True)]
    count = sum(len(r) for r in received)
    return Step(
        rate=rate,
        changes=expected,
        offered=rate * len(clients),
        delivered=count / elapsed,
        lost=expected * len(clients) - count,
        latencies=[t for r in received for t in r],
    )


async def counters(api_url: str) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=api_url, timeout=30) as http:
        found: dict[str, Any] = (await http.get("/metrics")).json()
    return found


async def main(subscribers: int, rates: list[float], step: float, deflate: bool) -> None:
    tag = f"fan{uuid.uuid4().hex[:8]}"
    per_step = [max(1, round(rate * step / len(AFTER_QUEUED))) for rate in rates]
    async with bench_redis() as (redis_url, tmp, client):
        ids = await store_episodes(client, sum(per_step), tag)
        env = parley_env(
            redis_url, tmp / "data", seed="false", ws_per_message_deflate=str(deflate).lower()
        )
        with api_process(env, Path(tmp) / "api.log", "--no-worker") as api:
            idle_before = rss_mib(api.pid)
            ws_url = api.url.replace("http://", "ws://") + "/graphql"
            clients = [
                Subscriber(ws_url, SUBSCRIBE, {"tag": tag}, "episodeUpdates")
                for _ in range(subscribers)
            ]
            tasks = [asyncio.create_task(c.run()) for c in clients]
            began = time.perf_counter()
            await asyncio.wait_for(asyncio.gather(*(c.first_snapshot.wait() for c in clients)), 300)
            connect_seconds = time.perf_counter() - began
            await asyncio.sleep(1)
            idle_after = rss_mib(api.pid)
            before = await counters(api.url)
            store = EpisodeStore(client)
            steps = []
            offset = 0
            for rate, count in zip(rates, per_step, strict=True):
                steps.append(await run_step(store, ids[offset : offset + count], rate, clients))
                offset += count
            after = await counters(api.url)
            busy_rss = rss_mib(api.pid)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    dropped = [c.error for c in clients if c.error]
    print(
        f"{subscribers} subscribers on episodeUpdates(tag) (one document, one set of "
        f"variables), permessage-deflate {'on' if deflate else 'off'}; {step:g} s steps"
    )
    print(f"all subscribed (snapshots received) in {connect_seconds:.2f} s; dropped {len(dropped)}")
    print("changes/s  deliveries/s offered  delivered  p50 ms  p99 ms  max ms  lost")
    for s in steps:
        lat = [t * 1000 for t in s.latencies] or [0.0]
        print(
            f"{s.rate:9.0f}  {s.offered:20.0f}  {s.delivered:9.0f}  {percentile(lat, 50):6.1f}  "
            f"{percentile(lat, 99):6.1f}  {max(lat):6.1f}  {s.lost}"
        )
    best = max(steps, key=lambda s: s.delivered)
    print(
        f"saturation point: {best.delivered:.0f} deliveries/s delivered "
        f"(at {best.rate:.0f} changes/s offered)"
    )
    sustained = [s for s in steps if s.sustained]
    if sustained:
        top = max(sustained, key=lambda s: s.rate)
        print(
            f"sustained (p99 < {SUSTAINED_P99 * 1000:.0f} ms, nothing lost): {top.offered:.0f} "
            f"deliveries/s ({top.rate:.0f} changes/s)"
        )
    else:
        print(f"sustained (p99 < {SUSTAINED_P99 * 1000:.0f} ms, nothing lost): no step")
    executed = after.get("subscription_executions", 0) - before.get("subscription_executions", 0)
    changes = sum(s.changes for s in steps)
    if "subscription_executions" in after:
        print(f"selections executed for the {changes} changes: {executed}")
    per = (idle_after - idle_before) * 1024 / subscribers
    print(
        f"API RSS {idle_before:.1f} MiB -> {idle_after:.1f} MiB idle ({per:.1f} KiB per "
        f"subscriber), {busy_rss:.1f} MiB after the steps"
    )
    if dropped:
        print(f"first drop: {dropped[0]}")


def rate_list(text: str) -> list[float]:
    return [float(r) for r in text.split(",") if r.strip()]


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--subscribers", type=int, default=200)
    parser.add_argument(
        "--rates", type=rate_list, default=rate_list("25,50,100,150,200"), help="changes/s"
    )
    parser.add_argument("--step", type=float, default=5.0, help="seconds per rate")
    parser.add_argument("--deflate", action=argparse.BooleanOptionalAction, default=False)
    args = parser.parse_args()
    asyncio.run(
        main(args.subscribers, args.rates, args.step, args.deflate),
        loop_factory=event_loop_factory(),
    )
