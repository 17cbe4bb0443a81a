"""Client CPU per chat call: Parley's aiohttp client against the openai SDK, many calls in flight.

Run: python -m bench.bench_chat_client [--calls 2000] [--in-flight 200]
The SDK part runs only where `openai[aiohttp]` is installed (it is not a Parley dependency):
  pip install 'openai[aiohttp]'
Both send the same request to the fake OpenAI-compatible server (its own process, answering
after 200 ms), so the figure is what the calling process spends per call.
"""

import asyncio
import importlib
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bench.common import run_main
from bench.support.fake_llm import fake_llm_process
from parley.engine.chat_client import ChatClient
from parley.storage.embedded import free_port

BODY: dict[str, Any] = {
    "model": "fake",
    "messages": [
        {"role": "system", "content": "You are Ava Tester, at lunch with a colleague. " * 10},
        {"role": "user", "content": "It is turn #3. What do you do next?"},
    ],
    "max_tokens": 100,
    "response_format": {
        "type": "json_schema",
        "json_schema": {
            "name": "agent_action",
            "schema": {
                "type": "object",
                "properties": {"action_type": {"enum": ["speak"]}, "argument": {"type": "string"}},
            },
        },
    },
}


async def measure(call: Callable[[], Awaitable[Any]], calls: int, in_flight: int) -> float:
    """CPU milliseconds this process spent per call."""
    gate = asyncio.Semaphore(in_flight)

    async def one() -> None:
        async with gate:
            await call()

    await asyncio.gather(*(one() for _ in range(50)))  # warm up connections
    began = time.process_time()
    await asyncio.gather(*(one() for _ in range(calls)))
    return (time.process_time() - began) / calls * 1000


async def main(calls: int = 2000, in_flight: int = 200) -> None:
    with fake_llm_process(free_port(), 0.2) as (base, _):
        ours = ChatClient(base, "key", timeout=30)
        print(
            f"Parley ChatClient: {await measure(lambda: ours.create(BODY), calls, in_flight):.3f}"
            " ms CPU per call"
        )
        await ours.aclose()
        try:
            openai: Any = importlib.import_module("openai")
        except ImportError:
            print("openai SDK: not installed, skipped")
            return
        sdk = openai.AsyncOpenAI(
            base_url=base,
            api_key="key",
            max_retries=0,
            http_client=openai.DefaultAioHttpClient(),
        )

        async def sdk_call() -> Any:
            return await sdk.post("/chat/completions", body=BODY, cast_to=dict)

        print(
            f"openai SDK (aiohttp transport, low-level post): "
            f"{await measure(sdk_call, calls, in_flight):.3f} ms CPU per call"
        )
        await sdk.close()


if __name__ == "__main__":
    run_main(main, __doc__)
