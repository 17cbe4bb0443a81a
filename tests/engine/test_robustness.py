"""Repairs, retries and clear failures: nothing turns silently into 'did nothing'."""

from __future__ import annotations

import asyncio

import pytest

from bench.support.factories import make_setup
from bench.support.fake_llm import FakeLLM, Rule
from parley.engine.episode import simulate
from parley.engine.errors import EpisodeFailed, LLMError, gather_or_fail
from parley.engine.ledger import ModelCall, recording
from parley.engine.llm import ChatRequest, ModelRegistry
from parley.engine.stats import GenerationStats


async def test_malformed_action_repaired_by_reask(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    fake_llm.add_rule(Rule(kind="action", content="Sure! I think I will say hello."))
    transcript = await simulate(make_setup(fake_llm.model_name(), max_turns=2), registry)
    assert transcript.stats.invalid_outputs == 1
    assert transcript.stats.repairs == 1
    assert transcript.actions[0].action_type == "speak"
    reask = fake_llm.requests_of("action")[1]
    assert "Your answer cannot be used: no JSON object found" in reask.text


async def test_fenced_json_and_invalid_recipient(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    fenced = '```json\n{"action_type": "Speak", "argument": "Hi", "to": []}\n```'
    bad_to = '{"action_type": "speak", "argument": "Hi", "to": ["Zed"]}'
    fake_llm.add_rule(Rule(kind="action", content=fenced), Rule(kind="action", content=bad_to))
    transcript = await simulate(make_setup(fake_llm.model_name(), max_turns=2), registry)
    assert transcript.actions[0].argument == "Hi"
    assert transcript.stats.repairs == 1
    assert "invalid recipient 'Zed'" in fake_llm.requests_of("action")[2].text


async def test_http_500_then_success(fake_llm: FakeLLM, registry: ModelRegistry) -> None:
    fake_llm.add_rule(Rule(kind="action", status=500))
    transcript = await simulate(make_setup(fake_llm.model_name(), max_turns=1), registry)
    assert transcript.stats.server_errors == 1
    assert transcript.stats.retries == 1
    assert transcript.stats.requests == 2
    assert transcript.actions[0].action_type == "speak"


async def test_rate_limit_and_hang_are_retried(fake_llm: FakeLLM, registry: ModelRegistry) -> None:
    fake_llm.add_rule(Rule(kind="action", status=429), Rule(kind="action", hang=True))
    transcript = await simulate(make_setup("fake-quick", max_turns=1), registry)
    assert transcript.stats.rate_limited == 1
    assert transcript.stats.timeouts == 1
    assert transcript.stats.retries == 2
    assert transcript.actions[0].action_type == "speak"


async def test_permanently_failing_model_fails_episode(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    fake_llm.add_rule(Rule(kind="action", status=503, times=None))
    with pytest.raises(EpisodeFailed) as info:
        await simulate(make_setup(fake_llm.model_name()), registry)
    assert "Alice Smith" in info.value.reason and "HTTP 503" in info.value.reason
    assert info.value.stats.requests == 3
    assert info.value.stats.failures == 1


async def test_garbage_twice_fails_episode(fake_llm: FakeLLM, registry: ModelRegistry) -> None:
    fake_llm.add_rule(Rule(kind="action", content="blah", times=2))
    with pytest.raises(EpisodeFailed) as info:
        await simulate(make_setup(fake_llm.model_name()), registry)
    assert "unusable answer after a re-ask" in info.value.reason
    assert info.value.stats.invalid_outputs == 2


async def test_client_error_is_not_retried(fake_llm: FakeLLM, registry: ModelRegistry) -> None:
    fake_llm.add_rule(Rule(kind="action", status=401))
    with pytest.raises(EpisodeFailed, match="HTTP 401"):
        await simulate(make_setup("fake-noschema"), registry)
    assert len(fake_llm.requests) == 1


async def test_schema_rejected_falls_back_to_prompt(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    fake_llm.add_rule(Rule(kind="action", status=400))
    transcript = await simulate(make_setup(fake_llm.model_name("other"), max_turns=2), registry)
    assert transcript.stats.fallbacks == 1
    second = fake_llm.requests[1]
    assert "response_format" not in second.body
    assert "follows this JSON schema" in second.text


async def test_cancellation_propagates(fake_llm: FakeLLM, registry: ModelRegistry) -> None:
    fake_llm.add_rule(Rule(kind="action", hang=True))
    task = asyncio.create_task(simulate(make_setup(fake_llm.model_name("slow")), registry))
    for _ in range(500):
        if fake_llm.requests:
            break
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


class HeldLedger:
    """Keeps the calls; each write holds until `release`."""

    def __init__(self) -> None:
        self.calls: list[ModelCall] = []
        self.writing = asyncio.Event()
        self.release = asyncio.Event()

    async def record(self, call: ModelCall) -> None:
        self.calls.append(call)
        self.writing.set()
        await self.release.wait()


async def failing_call(registry: ModelRegistry, fake: FakeLLM) -> int:
    """A call whose every try fails, in an episode's scope, failing as a judge's job would."""
    request = ChatRequest(messages=[{"role": "user", "content": "hi"}])
    with recording("episode", 1):
        try:
            await registry.complete(fake.model_name(), request, GenerationStats())
        except LLMError as exc:
            raise EpisodeFailed(f"the call: {exc}", GenerationStats()) from exc
    return 0


async def test_a_cancellation_while_a_failure_is_recorded_is_passed_on(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    fake_llm.add_rule(Rule(status=500, times=None))
    ledger = HeldLedger()
    registry.record_calls(ledger)
    task = asyncio.create_task(failing_call(registry, fake_llm))
    await asyncio.wait_for(ledger.writing.wait(), 10)
    task.cancel()  # a worker stopping: not the call's failure
    with pytest.raises(asyncio.CancelledError):
        await task
    ledger.release.set()
    assert [c.error_code for c in ledger.calls] == ["server"]


async def test_a_failure_being_recorded_when_a_sibling_fails_stands(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    fake_llm.add_rule(Rule(status=500, times=None))
    ledger = HeldLedger()
    registry.record_calls(ledger)

    async def sibling() -> int:
        await ledger.writing.wait()
        raise EpisodeFailed("the sibling", GenerationStats())

    with pytest.raises(EpisodeFailed) as caught:
        await gather_or_fail([failing_call(registry, fake_llm), sibling()])
    assert caught.value.reason.startswith("the call: ")  # the first job's, though it came last
    ledger.release.set()
    assert [c.error_code for c in ledger.calls] == ["server"]
