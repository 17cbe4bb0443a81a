"""Many websocket subscribers on one API process: every status event delivered, and how fast.

Run: python -m bench.bench_subscribers [--subscribers 1000] [--episodes 100] [--rate 200]
Starts an embedded Redis and one `parley serve --no-worker`; queues EPISODES episodes, opens
SUBSCRIBERS graphql-transport-ws connections (each follows one episode's `episodeStatus`), then
moves every episode through RUNNING, EVALUATING and COMPLETED from this process at RATE
transitions a second. Latency is from the transition's timestamp (taken just before the script
that publishes it) to the subscriber receiving it. Prints lost events, latency percentiles and
the API process's memory per idle subscriber.
"""

import argparse
import asyncio
import time
from pathlib import Path

from bench.common import bench_redis, percentile, rss_mib
from lifecycle.transitions import EpisodeStore
from storage.models import EpisodeStatus
from tests.support.processes import api_process, parley_env
from tests.support.simulation import make_world, post, start_input
from tests.support.subscriber import Subscriber

BATCH = """
mutation($inputs: [StartSimulationInput!]!) {
  startSimulations(inputs: $inputs) { episodes { id } userErrors { message } }
}"""
SUBSCRIBE = """
subscription($id: ID!) { episodeStatus(id: $id) { kind episodeId sequence status occurredAt } }"""
AFTER_QUEUED = (EpisodeStatus.RUNNING, EpisodeStatus.EVALUATING, EpisodeStatus.COMPLETED)


async def main(subscribers: int, episodes: int, rate: float) -> None:
    async with bench_redis() as (redis_url, tmp, client):
        scenario, agents = await make_world("subs")
        env = parley_env(redis_url, tmp / "data", seed="false")
        with api_process(env, Path(tmp) / "api.log", "--no-worker") as api:
            model = "custom/fake@http://127.0.0.1:9/v1"
            inputs = [start_input(scenario, agents, model)] * episodes
            made = (await post(api.url, BATCH, {"inputs": inputs}))["startSimulations"]
            ids = [e["id"] for e in made["episodes"]]
            await asyncio.sleep(0.5)
            idle_before = rss_mib(api.pid)

            ws_url = api.url.replace("http://", "ws://") + "/graphql"
            clients = [
                Subscriber(ws_url, SUBSCRIBE, {"id": ids[i % episodes]}, "episodeStatus")
                for i in range(subscribers)
            ]
            tasks = [asyncio.create_task(c.run()) for c in clients]
            began = time.perf_counter()
            await asyncio.wait_for(asyncio.gather(*(c.first_snapshot.wait() for c in clients)), 300)
            connect_seconds = time.perf_counter() - began
            await asyncio.sleep(1)
            idle_after = rss_mib(api.pid)

            store = EpisodeStore(client)
            gap = 1 / rate
            for status in AFTER_QUEUED:
                for episode_id in ids:
                    restart = status == EpisodeStatus.RUNNING
                    result = await store.transition(
                        episode_id, status, begin="restart" if restart else "none"
                    )
                    assert result.ok, result
                    await asyncio.sleep(gap)
            await asyncio.wait_for(asyncio.gather(*tasks), 120)

    expected = subscribers * len(AFTER_QUEUED)
    received = sum(len(c.statuses) for c in clients)
    in_order = all(c.statuses == [s.value for s in AFTER_QUEUED] for c in clients)
    latencies = [t * 1000 for c in clients for t in c.latencies]
    print(f"{subscribers} subscribers on {episodes} episodes, {rate:.0f} transitions/s")
    print(f"all subscribed (snapshot received) in {connect_seconds:.2f} s")
    print(
        f"events expected {expected}, received {received}, lost {expected - received}; "
        f"every stream in order and completed: {in_order and all(c.completed for c in clients)}"
    )
    print(
        f"latency from publish: p50 {percentile(latencies, 50):.1f} ms, "
        f"p99 {percentile(latencies, 99):.1f} ms, max {max(latencies):.1f} ms"
    )
    per = (idle_after - idle_before) * 1024 / subscribers
    print(
        f"API RSS {idle_before:.1f} MiB -> {idle_after:.1f} MiB idle: {per:.1f} KiB per subscriber"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--rate", type=float, default=200.0, help="transitions per second")
    args = parser.parse_args()
    asyncio.run(main(args.subscribers, args.episodes, args.rate))
