"""What a provider's shared limits cost a model call: the Redis round trips per call.

Run: python -m bench.bench_shared_limits [--calls 400] [--in-flight 20]
Calls go through the model registry to the fake OpenAI-compatible server (its own process,
answering at once) with the embedded Redis keeping the allowance, under limits high enough never
to make a call wait: what is measured is the bookkeeping, not the limiting. Printed per call:
wall milliseconds one after another (the added latency) and the calling process's CPU
milliseconds with `in_flight` calls at once.
"""

import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import run_main
from bench.support.fake_llm import fake_llm_process
from parley.engine.llm import ChatRequest, ModelRegistry
from parley.engine.stats import GenerationStats
from parley.storage.connection import open_client
from parley.storage.embedded import EmbeddedRedis, free_port
from parley.storage.provider_limits import RedisAllowance

REQUEST = ChatRequest(messages=[{"role": "user", "content": "Hello there. " * 20}], max_tokens=64)
SETTINGS: dict[str, dict[str, Any]] = {
    "no limits": {},
    "requests a minute": {"requests_per_minute": 10_000_000},
    "requests and tokens a minute": {
        "requests_per_minute": 10_000_000,
        "tokens_per_minute": 1_000_000_000,
    },
    "all three": {
        "requests_per_minute": 10_000_000,
        "tokens_per_minute": 1_000_000_000,
        "max_in_flight": 100_000,
    },
}


async def measure(
    registry: ModelRegistry, name: str, calls: int, in_flight: int
) -> tuple[float, float]:
    """Wall ms per call one at a time, CPU ms per call `in_flight` at once."""
    for _ in range(20):  # warm up the connections and the scripts
        await registry.complete(name, REQUEST, GenerationStats())
    began = time.perf_counter()
    for _ in range(calls):
        await registry.complete(name, REQUEST, GenerationStats())
    wall = (time.perf_counter() - began) / calls * 1000
    gate = asyncio.Semaphore(in_flight)

    async def one() -> None:
        async with gate:
            await registry.complete(name, REQUEST, GenerationStats())

    began = time.process_time()
    await asyncio.gather(*(one() for _ in range(calls)))
    cpu = (time.process_time() - began) / calls * 1000
    return wall, cpu


async def main(calls: int = 400, in_flight: int = 20) -> None:
    with tempfile.TemporaryDirectory() as scratch, fake_llm_process(free_port()) as (base, _):
        server = EmbeddedRedis(Path(scratch) / "redis")
        client = open_client(await server.start())
        try:
            for label, limits in SETTINGS.items():
                models = Path(scratch) / "models.json"
                entry = {"name": "bench", "base_url": base, "model": "fake", **limits}
                models.write_text(json.dumps({"models": [entry]}))
                registry = ModelRegistry(models, Path(scratch), allowance=RedisAllowance(client))
                wall, cpu = await measure(registry, "bench", calls, in_flight)
                await registry.aclose()
                print(f"{label:30} {wall:6.3f} ms a call one at a time, {cpu:6.3f} ms CPU a call")
        finally:
            await client.aclose()
            await server.stop()


if __name__ == "__main__":
    run_main(main, __doc__)
