"""startSimulation latency against a trivial query, with 1 and with 16 concurrent clients.

Run: python -m bench.bench_start_latency [--requests N]
Starts an embedded Redis and one `parley serve --no-worker` process; nothing runs the episodes,
so the figure is the request alone: validation, one transaction, the event, the job.
"""

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

import httpx

from bench.common import bench_redis, percentile, summary_ms
from tests.support.processes import api_process, parley_env
from tests.support.simulation import START, make_world, start_input

TRIVIAL = "{ __typename }"


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


async def main(requests: int) -> None:
    async with bench_redis() as (redis_url, tmp, _):
        scenario, agents = await make_world("bench")
        model = "custom/fake@http://127.0.0.1:9/v1"  # validated, never called
        start = {"input": start_input(scenario, agents, model)}
        env = parley_env(redis_url, tmp / "data", seed="false")
        with api_process(env, Path(tmp) / "api.log", "--no-worker") as api:
            for level in (1, 16):
                per_client = max(4, requests // level)
                clients = [httpx.AsyncClient(base_url=api.url, timeout=30) for _ in range(level)]
                # Warm up: connections, and the server's first parse of each document.
                await measure(clients, TRIVIAL, {}, 5)
                await measure(clients, START, start, 5)
                trivial: list[float] = []
                starts: list[float] = []
                for _ in range(4):  # interleaved, so both see the same machine state
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


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=2000, help="requests per kind and level")
    asyncio.run(main(parser.parse_args().requests))
