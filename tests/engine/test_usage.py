"""Tokens per model: the provider's counts over every answered call, estimates when it sends
none, prices from the models file (and refused when they are not prices)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.support.factories import make_setup
from bench.support.fake_llm import FakeLLM, RecordedRequest, Rule
from parley.engine.episode import play
from parley.engine.errors import UnknownModelError
from parley.engine.llm import ModelRegistry
from parley.engine.usage import Prices, TokenCount, counted, estimate_prompt, estimate_text


def reported(requests: list[RecordedRequest], model_id: str) -> TokenCount:
    """What the fake said it spent on the answered requests for one endpoint model id."""
    total = TokenCount()
    for r in requests:
        if r.body.get("model") == model_id and r.usage is not None:
            total += TokenCount(
                prompt_tokens=r.usage["prompt_tokens"],
                completion_tokens=r.usage["completion_tokens"],
            )
    return total


async def test_counts_are_the_providers_summed_per_model_over_retries_and_reasks(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    """A 500 (retried: no answer, no tokens) and an unusable action (re-asked: both answers
    count) on the agents' model; the judge on another model is counted apart."""
    fake_llm.add_rule(
        Rule(kind="action", status=500),
        Rule(kind="action", content="Sure! I think I will say hello."),
    )
    agents, judge = fake_llm.model_name("agents"), fake_llm.model_name("judge")
    played = await play(make_setup(agents, judge=judge, max_turns=3), registry)

    usage = played.stats.usage
    assert set(usage) == {agents, judge}
    requests = fake_llm.requests
    assert [r.status for r in requests].count(500) == 1
    assert played.stats.repairs == 1 and played.stats.retries == 1
    for model, model_id in ((agents, "agents"), (judge, "judge")):
        assert usage[model] == reported(requests, model_id)
        assert usage[model].prompt_tokens > 0 and usage[model].completion_tokens > 0
        assert not usage[model].estimated and usage[model].estimated_tokens == 0
    assert "usage" not in played.stats.model_dump()  # generationStats keep their flat counts
    assert played.stats.prompt_tokens == sum(u.prompt_tokens for u in usage.values())


async def test_counts_are_estimated_and_marked_when_the_provider_sends_none(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    fake_llm.usage = False
    model = fake_llm.model_name()
    played = await play(make_setup(model, max_turns=2), registry)

    count = played.stats.usage[model]
    requests = fake_llm.requests
    assert requests and all(r.usage is None for r in requests)
    prompt = sum(estimate_prompt(r.body["messages"]) for r in requests)
    completion = sum(estimate_text(r.reply or "") for r in requests)
    assert count == TokenCount(
        prompt_tokens=prompt,
        completion_tokens=completion,
        estimated_tokens=prompt + completion,
        estimated=True,
    )
    assert played.stats.prompt_tokens == 0  # generationStats count only what was reported


async def test_one_answer_without_usage_marks_the_model_estimated(
    fake_llm: FakeLLM, registry: ModelRegistry
) -> None:
    fake_llm.add_rule(Rule(kind="judge", usage=False))
    model = fake_llm.model_name()
    played = await play(make_setup(model, max_turns=2), registry)
    count = played.stats.usage[model]
    unreported = [r for r in fake_llm.requests if r.usage is None]
    assert len(unreported) == 1 and count.estimated
    assert count.estimated_tokens == estimate_prompt(unreported[0].body["messages"]) + (
        estimate_text(unreported[0].reply or "")
    )
    assert count.prompt_tokens > count.estimated_tokens


def test_a_partial_usage_estimates_only_what_is_missing() -> None:
    messages = [{"role": "user", "content": "x" * 40}]
    assert counted({"prompt_tokens": 7}, messages, "abcdefgh") == TokenCount(
        prompt_tokens=7, completion_tokens=2, estimated_tokens=2, estimated=True
    )
    assert counted({"prompt_tokens": 7, "completion_tokens": 0}, messages, "x") == TokenCount(
        prompt_tokens=7, completion_tokens=0
    )
    assert counted({"prompt_tokens": "7", "completion_tokens": -1}, messages, "") == TokenCount(
        prompt_tokens=14, completion_tokens=0, estimated_tokens=14, estimated=True
    )


def write_models(path: Path, base_url: str, **prices: object) -> Path:
    entry = {"name": "priced", "base_url": base_url, "model": "m", **prices}
    path.write_text(json.dumps({"models": [entry]}))
    return path


def test_prices_come_from_the_models_file(tmp_path: Path) -> None:
    path = write_models(tmp_path / "m.json", "http://h/v1", prompt_price=0.15, completion_price=6)
    registry = ModelRegistry(path, tmp_path)
    prices = registry.prices("priced")
    assert prices == Prices(prompt=0.15, completion=6.0)
    assert prices.cost(TokenCount(prompt_tokens=2_000_000, completion_tokens=500)) == 0.303
    assert registry.prices("custom/x@http://h/v1") is None
    path.write_text('[[models]]\nname = "free"\nbase_url = "http://h/v1"\nmodel = "m"\n')
    toml = path.rename(tmp_path / "m.toml")
    assert ModelRegistry(toml, tmp_path).prices("free") is None


@pytest.mark.parametrize(
    ("prices", "message"),
    [
        ({"prompt_price": -0.5, "completion_price": 1}, "prompt_price must be a number"),
        ({"prompt_price": 1, "completion_price": "2"}, "completion_price must be a number"),
        ({"prompt_price": True, "completion_price": 1}, "not True"),
        ({"prompt_price": 1}, "give both prompt_price and completion_price"),
    ],
)
def test_bad_prices_are_refused_naming_the_entry_and_field(
    tmp_path: Path, prices: dict[str, object], message: str
) -> None:
    path = write_models(tmp_path / "m.json", "http://h/v1", **prices)
    with pytest.raises(UnknownModelError, match="cannot read models file") as raised:
        ModelRegistry(path, tmp_path)
    assert "models[0] (priced)" in str(raised.value)
    assert message in str(raised.value)
