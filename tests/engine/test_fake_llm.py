"""The fake server itself: delay, control over HTTP, use from another process.

Each test has a fake of its own (`own_fake_llm`): requests other modules left in the shared one
would count against a limit set here."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import httpx

from bench.support.fake_llm import FakeLLM, RateLimit, Rule, fake_llm_process
from parley.storage.embedded import free_port

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


async def test_other_process_can_script_and_call(own_fake_llm: FakeLLM) -> None:
    result = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", CLIENT, own_fake_llm.base_url],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert json.loads(result.stdout) == ["scripted", "OK"]
    assert [r.kind for r in own_fake_llm.requests] == ["other", "other"]


async def test_fixed_delay_and_models(own_fake_llm: FakeLLM) -> None:
    own_fake_llm.delay = 0.2
    async with httpx.AsyncClient(base_url=own_fake_llm.base_url) as client:
        assert (await client.get("/models")).json()["data"][0]["id"] == "fake"
        started = time.perf_counter()
        body = {"model": "fake", "messages": [{"role": "user", "content": "hi"}]}
        response = await client.post("/chat/completions", json=body)
        assert time.perf_counter() - started >= 0.2
    assert response.json()["choices"][0]["message"]["content"] == "OK"


async def test_a_limit_on_requests_at_once_answers_429_beyond_it(own_fake_llm: FakeLLM) -> None:
    own_fake_llm.delay = 1.0
    own_fake_llm.limit = RateLimit(in_flight=2)
    body = {"model": "fake", "messages": [{"role": "user", "content": "hi"}]}
    async with httpx.AsyncClient(base_url=own_fake_llm.base_url, timeout=30) as client:
        answers = await asyncio.gather(
            *(client.post("/chat/completions", json=body) for _ in range(5))
        )
        stats = (
            await client.get(own_fake_llm.base_url.removesuffix("/v1") + "/_fake/stats")
        ).json()
    assert sorted(a.status_code for a in answers) == [200, 200, 429, 429, 429]
    assert not any("retry-after" in a.headers for a in answers)
    assert stats == {"in_flight": 0, "peak_in_flight": 2, "served": 2, "rejected": 3}


async def test_a_limit_per_second_says_when_to_come_back(own_fake_llm: FakeLLM) -> None:
    own_fake_llm.limit = RateLimit(per_second=2)
    body = {"model": "fake", "messages": [{"role": "user", "content": "hi"}]}
    async with httpx.AsyncClient(base_url=own_fake_llm.base_url, timeout=30) as client:
        answers = [await client.post("/chat/completions", json=body) for _ in range(3)]
    assert [a.status_code for a in answers] == [200, 200, 429]
    refused = answers[2].headers
    assert refused["retry-after"] == "1"
    assert 0 < int(refused["retry-after-ms"]) <= 1000
    assert own_fake_llm.rejected == 1


async def test_a_limit_at_once_can_say_retry_after(own_fake_llm: FakeLLM) -> None:
    own_fake_llm.delay = 1.0
    own_fake_llm.limit = RateLimit(in_flight=1, retry_after=0.25)
    body = {"model": "fake", "messages": [{"role": "user", "content": "hi"}]}
    async with httpx.AsyncClient(base_url=own_fake_llm.base_url, timeout=30) as client:
        first = asyncio.create_task(client.post("/chat/completions", json=body))
        while own_fake_llm.in_flight == 0:  # noqa: ASYNC110 - set in the server's thread
            await asyncio.sleep(0.01)
        refused = await client.post("/chat/completions", json=body)
        assert (await first).status_code == 200
    assert refused.status_code == 429
    assert (refused.headers["retry-after"], refused.headers["retry-after-ms"]) == ("1", "250")


def test_a_fake_in_its_own_process_has_the_faults_it_is_given() -> None:
    body = {"model": "fake", "messages": [{"role": "user", "content": "hi"}]}
    with fake_llm_process(free_port(), faults="500=1.0") as (faulty, _):
        assert httpx.post(faulty + "/chat/completions", json=body).status_code == 500
    with fake_llm_process(free_port()) as (healthy, _):
        assert httpx.post(healthy + "/chat/completions", json=body).status_code == 200


async def test_a_request_through_an_ended_scope_takes_no_rule_and_is_not_recorded(
    own_fake_llm: FakeLLM,
) -> None:
    """What one test sent just before it ended may be read by the server only in the next: sent
    through the ended scope's URL, it is answered by default and the next test never sees it."""
    body = {"model": "fake", "messages": [{"role": "user", "content": "hi"}]}
    own_fake_llm.begin_scope()
    ended = own_fake_llm.base_url
    own_fake_llm.begin_scope()
    current = own_fake_llm.base_url
    assert current != ended and current.endswith("/v1")
    own_fake_llm.add_rule(Rule(content="scripted", times=None))
    async with httpx.AsyncClient(timeout=30) as client:
        late = await client.post(ended + "/chat/completions", json=body)
        assert late.json()["choices"][0]["message"]["content"] == "OK"
        assert own_fake_llm.requests == []
        now = await client.post(current + "/chat/completions", json=body)
        own_fake_llm.end_scope()
        plain = await client.post(own_fake_llm.base_url + "/chat/completions", json=body)
    assert [a.json()["choices"][0]["message"]["content"] for a in (now, plain)] == ["scripted"] * 2
    assert len(own_fake_llm.requests) == 2
