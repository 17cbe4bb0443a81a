"""Another process drawing from a provider key's shared allowance, for tests that cross one.

python -m tests.support.allowance_client admit URL KEY RPM SECONDS CLIENTS
    asks for requests for SECONDS with CLIENTS callers; prints the server times granted (JSON)
python -m tests.support.allowance_client hold-place URL KEY MAX LEASE
    takes a place in flight for LEASE seconds, prints "entered", then waits to be killed
python -m tests.support.allowance_client call URL MODELS_FILE MODEL
    makes one model call through a registry with the shared allowance; prints the seconds
    from its start to its answer
"""

import asyncio
import json
import sys
import time
from pathlib import Path

from parley.engine.llm import ChatRequest, ModelRegistry
from parley.engine.shared_limit import ProviderLimits
from parley.engine.stats import GenerationStats
from parley.storage.connection import open_client
from parley.storage.provider_limits import RedisAllowance, admit


async def granted(url: str, limits: ProviderLimits, seconds: float, callers: int) -> list[float]:
    client = open_client(url)
    times: list[float] = []
    end = time.monotonic() + seconds

    async def caller() -> None:
        while time.monotonic() < end:
            answer = await admit(client, limits, 1)
            if answer.wait == 0:
                times.append(answer.at)
            else:
                await asyncio.sleep(answer.wait)

    await asyncio.gather(*(caller() for _ in range(callers)))
    await client.aclose()
    return times


async def hold_place(url: str, limits: ProviderLimits, lease: float) -> None:
    client = open_client(url)
    if not await RedisAllowance(client).enter(limits, "doomed", lease):
        raise SystemExit("no place")
    print("entered", flush=True)
    await asyncio.sleep(3600)


async def call(url: str, models_file: Path, model: str) -> float:
    client = open_client(url)
    registry = ModelRegistry(models_file, Path("."), allowance=RedisAllowance(client))
    request = ChatRequest(messages=[{"role": "user", "content": "Say hello."}], max_tokens=8)
    started = time.monotonic()
    try:
        await registry.complete(model, request, GenerationStats())
        return time.monotonic() - started
    finally:
        await registry.aclose()
        await client.aclose()


def main() -> None:
    mode, url, *rest = sys.argv[1:]
    if mode == "admit":
        key, rpm, seconds, callers = rest
        limits = ProviderLimits(key, requests_per_minute=int(rpm))
        print(json.dumps(asyncio.run(granted(url, limits, float(seconds), int(callers)))))
    elif mode == "hold-place":
        key, most, lease = rest
        asyncio.run(hold_place(url, ProviderLimits(key, max_in_flight=int(most)), float(lease)))
    elif mode == "call":
        models_file, model = rest
        print(json.dumps(asyncio.run(call(url, Path(models_file), model))))
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main()
