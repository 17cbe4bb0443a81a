"""startSimulation latency against a trivial query, with 1 and with 16 concurrent clients, then
the start alone at 16 clients: latency, requests per second and the API's CPU per start, and
the same for a trivial query (what the server spends on a request that does nothing).

Run: python -m bench.bench_start_latency [--requests N] [--throughput N] [--only-throughput]
Starts an embedded Redis and one `parley serve --no-worker` process; nothing runs the episodes,
so the figure is the request alone: validation, one transaction, the event, the job. CPU figures
are each process's CPU time (user + system, psutil) over the phase, divided by the requests; the
load generator shares the machine's cores with the server and Redis.
"""

import argparse
import asyncio
import os
import time
from pathlib import Path
from typing import Any

import httpx

from bench.common import bench_redis, cpu_seconds, percentile, summary_ms
from bench.support.processes import api_process, parley_env
from bench.support.simulation import START, make_world, start_input

TRIVIAL = "{ __typename }"
CLIENTS = 16


async def timed(client: httpx.AsyncClient, query: str, variables: dict[str, Any]) -> float:
    body = {"query": query, "variables": variables}
    began = time.perf_counter()
    response = await client.post("/graphql", json=body)
    elapsed = time.perf_counter() - began
    assert response.status_code == 200 and "errors" not in response.json(), response.text
    return elapsed


async def measure(
    clients: list[httpx.AsyncClient], query: str, variables: dict[str, Any], per_client: int
) -> list[float]:
    async def one_client(client: httpx.AsyncClient) -> list[float]:
        return [await timed(client, query, variables) for _ in range(per_client)]

    results = await asyncio.gather(*(one_client(c) for c in clients))
    return [t for r in results for t in r]


async def ratios(url: str, start: dict[str, Any], requests: int) -> None:
    """Start latency next to a trivial query's, interleaved so both see the same machine."""
    for level in (1, CLIENTS):
        per_client = max(4, requests // level)
        clients = [httpx.AsyncClient(base_url=url, timeout=30) for _ in range(level)]
        # Warm up: connections, and the server's first parse of each document.
        await measure(clients, TRIVIAL, {}, 5)
        await measure(clients, START, start, 5)
        trivial: list[float] = []
        starts: list[float] = []
        for _ in range(4):
            trivial += await measure(clients, TRIVIAL, {}, per_client // 4)
            starts += await measure(clients, START, start, per_client // 4)
        for client in clients:
            await client.aclose()
        ratio50 = percentile(starts, 50) / percentile(trivial, 50)
        ratio99 = percentile(starts, 99) / percentile(trivial, 99)
        print(f"clients={level}")
        print(f"  trivial query    {summary_ms(trivial)}")
        print(f"  startSimulation  {summary_ms(starts)}")
        print(f"  ratio p50 {ratio50:.2f}x  p99 {ratio99:.2f}x")


async def throughput(url: str, start: dict[str, Any], requests: int, api: int, redis: int) -> None:
    """Starts only, from 16 clients at once (each sends its next as soon as one is answered);
    then as many trivial queries the same way: the API's CPU for a request that does nothing,
    the floor under a start's."""
    for label, query, variables in (
        ("startSimulation alone", START, start),
        ("a trivial query, the same way", TRIVIAL, {}),
    ):
        clients = [httpx.AsyncClient(base_url=url, timeout=30) for _ in range(CLIENTS)]
        await measure(clients, query, variables, 10)
        per_client = max(1, requests // CLIENTS)
        me = os.getpid()
        before = [cpu_seconds(p) for p in (api, redis, me)]
        began = time.perf_counter()
        times = await measure(clients, query, variables, per_client)
        wall = time.perf_counter() - began
        processes = (api, redis, me)
        api_cpu, redis_cpu, client_cpu = (
            (cpu_seconds(p) - b) / len(times) * 1000 for p, b in zip(processes, before, strict=True)
        )
        for client in clients:
            await client.aclose()
        print(f"{label}, clients={CLIENTS}")
        print(f"  {summary_ms(times)}  {len(times) / wall:.0f} requests/s")
        print(
            f"  CPU per request: API {api_cpu:.2f} ms, Redis {redis_cpu:.2f} ms, "
            f"load generator {client_cpu:.2f} ms"
        )


async def main(requests: int, starts: int, skip_ratios: bool) -> None:
    async with bench_redis() as (redis_url, tmp, _):
        scenario, agents = await make_world("bench")
        model = "custom/fake@http://127.0.0.1:9/v1"  # validated, never called
        start = {"input": start_input(scenario, agents, model)}
        env = parley_env(redis_url, tmp / "data", seed="false")
        redis = int((tmp / "redis.pid").read_text())
        with api_process(env, Path(tmp) / "api.log", "--no-worker") as api:
            if not skip_ratios:
                await ratios(api.url, start, requests)
            await throughput(api.url, start, starts, api.pid, redis)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=2000, help="requests per kind and level")
    parser.add_argument("--throughput", type=int, default=4000, help="starts in the last phase")
    parser.add_argument("--only-throughput", action="store_true", help="skip the ratio phases")
    args = parser.parse_args()
    asyncio.run(main(args.requests, args.throughput, args.only_throughput))
