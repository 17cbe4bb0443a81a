"""What `PARLEY_REDIS_FSYNC=always` costs: startSimulation latency from one client, and starts a
second from 16 clients at once, with the embedded Redis syncing its append-only file once a
second (`everysec`, the default) and before each answer (`always`).

Run: python -m bench.bench_fsync [--starts N] [--dir DIR]
Each policy gets a fresh embedded Redis in a temporary directory under DIR (default: the
system's; put it on the disk whose syncs you mean to measure, not a tmpfs) and one
`parley serve --no-worker` process; nothing runs the episodes, so a start is the request alone:
validation, one Redis script (the episode, its event, its job) and, with `always`, the disk
sync before Redis answers it.
"""

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

import httpx

from bench.bench_start_latency import CLIENTS, measure
from bench.common import bench_redis, summary_ms
from bench.support.processes import api_process, parley_env
from bench.support.simulation import START, make_world, start_input
from parley.storage.durability import Fsync

POLICIES: tuple[Fsync, ...] = ("everysec", "always")


async def clients(url: str, count: int) -> list[httpx.AsyncClient]:
    return [httpx.AsyncClient(base_url=url, timeout=30) for _ in range(count)]


async def policy(fsync: Fsync, starts: int, parent: Path | None) -> None:
    async with bench_redis(fsync, parent) as (redis_url, tmp, _):
        scenario, agents = await make_world("bench-fsync")
        model = "custom/fake@http://127.0.0.1:9/v1"  # validated, never called
        start: dict[str, Any] = {"input": start_input(scenario, agents, model)}
        env = parley_env(redis_url, tmp / "data", seed="false")
        with api_process(env, tmp / "api.log", "--no-worker") as api:
            one = await clients(api.url, 1)
            await measure(one, START, start, 10)  # connections, the first parse
            alone = await measure(one, START, start, max(4, starts // 4))
            many = await clients(api.url, CLIENTS)
            await measure(many, START, start, 5)
            began = time.perf_counter()
            together = await measure(many, START, start, max(1, starts // CLIENTS))
            wall = time.perf_counter() - began
            for client in one + many:
                await client.aclose()
    print(f"appendfsync {fsync} (data under {tmp.parent})")
    print(f"  1 client    {summary_ms(alone)}  {len(alone) / sum(alone):.0f} starts/s")
    print(f"  {CLIENTS} clients  {summary_ms(together)}  {len(together) / wall:.0f} starts/s")


async def main(starts: int, parent: Path | None) -> None:
    for fsync in POLICIES:
        await policy(fsync, starts, parent)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--starts", type=int, default=2000, help="starts per phase and policy")
    parser.add_argument("--dir", type=Path, help="where the Redis data goes (a real disk)")
    args = parser.parse_args()
    asyncio.run(main(args.starts, args.dir))
