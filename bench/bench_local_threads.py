"""The embedded model's decoding speed by CPU threads, on an idle and on a busy machine.

Run: python -m bench.bench_local_threads [--hogs 0,2] [--threads 1,2] [--poll 0,50]
                                         [--tokens 48] [--data-dir DIR]

For each number of CPU-bound processes running beside it (a busy loop each, stopped by pid) and
each threads and polling setting, starts the embedded model's server (`engine.local_server`,
llama.cpp with Gemma 3 270M) and sends one request, then four at once, each decoding TOKENS
tokens; prints the seconds they took and each one's tokens a second as llama.cpp measured them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from bench.bench_busy_laptop import cpu_hogs
from parley.core.processes import stop_process
from parley.engine.local_model import CONTEXT_PER_SLOT, SLOTS, prepare_files

PROMPT = "Tell a long story about a lighthouse keeper and a storm."


def server(
    model: Path, template: Path, threads: int, poll: int
) -> tuple[subprocess.Popen[bytes], str]:
    process = subprocess.Popen(
        [
            sys.executable, "-m", "parley.engine.local_server", "--model", str(model),
            "--template", str(template), "--slots", str(SLOTS),
            "--context", str(CONTEXT_PER_SLOT), "--threads", str(threads), "--poll", str(poll),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert process.stdout is not None
    url = str(json.loads(process.stdout.readline())["url"]).rstrip("/")
    return process, url


async def ready(url: str) -> None:
    async with aiohttp.ClientSession() as http:
        while True:
            try:
                async with http.get(f"{url}/health") as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.2)


async def decode(url: str, at_once: int, tokens: int) -> tuple[float, list[float]]:
    """Seconds for `at_once` requests sent together, and each one's tokens a second."""

    async def one(http: aiohttp.ClientSession, k: int) -> float:
        body = {
            "messages": [{"role": "user", "content": f"({k}) {PROMPT}"}],
            "max_tokens": tokens,
            "ignore_eos": True,  # every request decodes exactly `tokens`
        }
        async with http.post(f"{url}/v1/chat/completions", json=body) as response:
            answer = await response.json()
        return float(answer["timings"]["predicted_per_second"])

    began = time.monotonic()
    async with aiohttp.ClientSession() as http:
        speeds = await asyncio.gather(*(one(http, k) for k in range(at_once)))
    return time.monotonic() - began, list(speeds)


def numbers(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hogs", default="0,2")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--poll", default="0,50")
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--data-dir", type=Path)
    args = parser.parse_args()
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="parley-threads-"))
    model, template = prepare_files(data_dir / "models")
    print(f"{os.cpu_count()} cores; {args.tokens} tokens a request")
    for hogs in numbers(args.hogs):
        with cpu_hogs(hogs):
            for threads in numbers(args.threads):
                for poll in numbers(args.poll):
                    process, url = server(model, template, threads, poll)
                    try:
                        asyncio.run(ready(url))
                        for at_once in (1, SLOTS):
                            seconds, speeds = asyncio.run(decode(url, at_once, args.tokens))
                            each = ", ".join(f"{s:.1f}" for s in speeds)
                            load = os.getloadavg()[0]
                            print(
                                f"busy processes {hogs}, threads {threads}, poll {poll:>2}, "
                                f"{at_once} at once: {seconds:5.1f} s, tokens/s each [{each}] "
                                f"(load {load:.1f})",
                                flush=True,
                            )
                    finally:
                        stop_process(process, 5)


if __name__ == "__main__":
    main()
