"""The repair loop: an unusable answer is asked again once, with its error or hotter."""

from collections.abc import Callable

import pytest

from bench.support.fake_llm import FakeLLM
from parley.engine.errors import LLMOutputError
from parley.engine.generation import ask, hotter, show_error
from parley.engine.llm import ChatRequest, ModelRegistry
from parley.engine.parsing import InvalidOutput
from parley.engine.stats import GenerationStats

REQUEST = ChatRequest(messages=[{"role": "user", "content": "Say something."}], temperature=0.5)


def parser(seen: list[str], refusals: int) -> Callable[[str], str]:
    """A parse that refuses its first `refusals` answers, keeping each answer in `seen`."""

    def parse(answer: str) -> str:
        seen.append(answer)
        if len(seen) <= refusals:
            raise InvalidOutput("not a greeting")
        return answer

    return parse


def test_show_error_puts_the_answer_and_its_error_in_the_conversation() -> None:
    retry = show_error()(REQUEST, "42", "not a greeting")
    assert retry.messages[1:] == [
        {"role": "assistant", "content": "42"},
        {"role": "user", "content": "Your answer cannot be used: not a greeting. Reply again."},
    ]
    assert REQUEST.messages == [{"role": "user", "content": "Say something."}]


def test_show_error_keeps_a_prefill_open_after_the_reask() -> None:
    prefilled = ChatRequest(
        messages=[{"role": "user", "content": "Go."}, {"role": "assistant", "content": "{"}]
    )
    retry = show_error(prefill="{")(prefilled, '"a": 1', "bad")
    assert [m["role"] for m in retry.messages] == ["user", "assistant", "user", "assistant"]
    assert (retry.messages[1]["content"], retry.messages[-1]["content"]) == ('{"a": 1', "{")


def test_hotter_raises_the_temperature_up_to_its_ceiling() -> None:
    assert hotter(step=0.4)(REQUEST, "", "").temperature == pytest.approx(0.9)
    assert hotter(step=2.0, ceiling=1.3)(REQUEST, "", "").temperature == 1.3


async def test_a_second_usable_answer_is_returned_and_counted_as_one_repair(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    seen: list[str] = []
    stats = GenerationStats()
    answer = await ask(registry, "fake-quick", REQUEST, parser(seen, 1), stats)
    assert answer == seen[1] and len(seen) == 2
    assert (stats.invalid_outputs, stats.repairs, stats.failures) == (1, 1, 0)
    assert "Your answer cannot be used: not a greeting" in fake_llm.requests[-1].text


async def test_two_unusable_answers_fail_for_good(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    stats = GenerationStats()
    with pytest.raises(LLMOutputError, match="unusable answer after a re-ask: not a greeting"):
        await ask(registry, "fake-quick", REQUEST, parser([], 2), stats)
    assert (stats.invalid_outputs, stats.repairs, stats.failures) == (2, 1, 1)
    assert len(fake_llm.requests) == 2
