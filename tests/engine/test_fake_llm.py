"""The fake server itself: delay, control over HTTP, use from another process."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import httpx

from tests.support.fake_llm import FakeLLM

CLIENT = """
import json, sys, httpx
base = sys.argv[1]
rules = [{"kind": "any", "content": "scripted"}]
httpx.post(base.removesuffix("/v1") + "/_fake/rules", json=rules).raise_for_status()
body = {"model": "fake", "messages": [{"role": "user", "content": "hi"}]}
first = httpx.post(base + "/chat/completions", json=body).json()
second = httpx.post(base + "/chat/completions", json=body).json()
print(json.dumps([r["choices"][0]["message"]["content"] for r in (first, second)]))
"""


async def test_other_process_can_script_and_call(fake_llm: FakeLLM) -> None:
    result = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", CLIENT, fake_llm.base_url],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert json.loads(result.stdout) == ["scripted", "OK"]
    assert [r.kind for r in fake_llm.requests] == ["other", "other"]


async def test_fixed_delay_and_models(fake_llm: FakeLLM) -> None:
    fake_llm.delay = 0.2
    async with httpx.AsyncClient(base_url=fake_llm.base_url) as client:
        assert (await client.get("/models")).json()["data"][0]["id"] == "fake"
        started = time.perf_counter()
        body = {"model": "fake", "messages": [{"role": "user", "content": "hi"}]}
        response = await client.post("/chat/completions", json=body)
        assert time.perf_counter() - started >= 0.2
    assert response.json()["choices"][0]["message"]["content"] == "OK"
