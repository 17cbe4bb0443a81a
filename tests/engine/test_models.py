"""The model registry: names, availability, refusal of unknown models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.support.factories import make_setup
from parley.engine.episode import simulate
from parley.engine.errors import EpisodeFailed, UnknownModelError
from parley.engine.llm import ModelRegistry
from parley.engine.models import local_model_info


def test_unknown_model_refused(tmp_path: Path) -> None:
    registry = ModelRegistry(None, tmp_path)
    with pytest.raises(UnknownModelError, match="unknown model 'gpt4-turbo-ultra'"):
        registry.resolve("gpt4-turbo-ultra")


async def test_simulate_refuses_unknown_model(tmp_path: Path) -> None:
    registry = ModelRegistry(None, tmp_path)
    with pytest.raises(EpisodeFailed, match="unknown model 'nope'"):
        await simulate(make_setup("nope"), registry)


def test_openai_needs_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    registry = ModelRegistry(None, tmp_path)
    with pytest.raises(UnknownModelError, match="OPENAI_API_KEY"):
        registry.resolve("gpt-4o-mini")
    listed = {m.name: m for m in registry.list_models()}
    assert listed["gpt-4o-mini"].available is False
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    info = registry.resolve("o4-mini")
    assert info.provider == "openai" and info.available


def test_custom_and_local_names(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUSTOM_API_KEY", raising=False)
    registry = ModelRegistry(None, tmp_path)
    info = registry.resolve("custom/llama3.2:1b@http://localhost:8000/v1/")
    assert (info.model, info.base_url) == ("llama3.2:1b", "http://localhost:8000/v1")
    local = registry.resolve("local/gemma-3-270m")
    assert local.text_actions and local.judge_mode == "per_episode" and local.available
    assert registry.list_models()[0].name == "local/gemma-3-270m"


def test_models_file_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "models.toml"
    path.write_text(
        '[[models]]\nname = "vllm-llama"\nbase_url = "http://10.0.0.2:8000/v1"\n'
        'model = "meta-llama/Llama-3-8B"\napi_key_env = "VLLM_KEY"\njson_schema = false\n'
        "max_concurrency = 3\n"
    )
    monkeypatch.delenv("VLLM_KEY", raising=False)
    registry = ModelRegistry(path, tmp_path)
    listed = {m.name: m for m in registry.list_models()}
    assert listed["vllm-llama"].max_concurrency == 3
    assert listed["vllm-llama"].json_schema is False
    assert listed["vllm-llama"].reason == "environment variable VLLM_KEY is not set"
    with pytest.raises(UnknownModelError, match="VLLM_KEY"):
        registry.resolve("vllm-llama")
    monkeypatch.setenv("VLLM_KEY", "k")
    assert registry.resolve("vllm-llama").model == "meta-llama/Llama-3-8B"


def test_bad_models_file(tmp_path: Path) -> None:
    path = tmp_path / "models.json"
    path.write_text('{"models": [{"name": "x"}]}')
    with pytest.raises(UnknownModelError, match="cannot read models file"):
        ModelRegistry(path, tmp_path)


def test_models_file_judge_modes(tmp_path: Path) -> None:
    """`judge_per_dimension = true` still reads as judge_mode per_dimension; extras are kept."""
    path = tmp_path / "models.toml"
    path.write_text(
        '[[models]]\nname = "old"\nbase_url = "http://h/v1"\nmodel = "m"\n'
        "judge_per_dimension = true\n"
        '[[models]]\nname = "new"\nbase_url = "http://h/v1"\nmodel = "m"\n'
        'judge_mode = "per_episode"\nextra_body = { repetition_penalty = 1.1 }\n'
        '[[models]]\nname = "wrong"\nbase_url = "http://h/v1"\nmodel = "m"\n'
        'judge_mode = "sometimes"\n'
    )
    with pytest.raises(UnknownModelError, match="judge_mode"):
        ModelRegistry(path, tmp_path)
    path.write_text(path.read_text().rsplit("[[models]]", 1)[0])
    registry = ModelRegistry(path, tmp_path)
    assert registry.resolve("old").judge_mode == "per_dimension"
    new = registry.resolve("new")
    assert new.judge_mode == "per_episode" and new.extra_body == {"repetition_penalty": 1.1}


def test_judge_requests_have_a_timeout_of_their_own(tmp_path: Path) -> None:
    """Three times the turn's unless the models file gives one; the embedded model's sized to
    its work on a busy machine."""
    path = tmp_path / "models.toml"
    path.write_text(
        '[[models]]\nname = "quick"\nbase_url = "http://h/v1"\nmodel = "m"\ntimeout = 2\n'
        '[[models]]\nname = "patient"\nbase_url = "http://h/v1"\nmodel = "m"\n'
        "judge_timeout = 600\n"
    )
    registry = ModelRegistry(path, tmp_path)
    quick, patient = registry.resolve("quick"), registry.resolve("patient")
    assert (quick.timeout, quick.judge_timeout) == (2, 6)
    assert (patient.timeout, patient.judge_timeout) == (60, 600)
    custom = registry.resolve("custom/m@http://h/v1")
    assert (custom.timeout, custom.judge_timeout) == (60, 180)
    local = local_model_info(True, None)
    assert (local.timeout, local.judge_timeout) == (300, 900)


@pytest.mark.parametrize(
    "url",
    ["http://user:secret@h/v1", "http://:secret@h/v1", "http://h/v1?key=secret", "http://h/v1#x"],
)
def test_a_base_url_carrying_credentials_is_refused(tmp_path: Path, url: str) -> None:
    path = tmp_path / "models.json"
    path.write_text(json.dumps({"models": [{"name": "x", "base_url": url, "model": "m"}]}))
    with pytest.raises(UnknownModelError, match=r"base_url: carries .*api_key_env") as raised:
        ModelRegistry(path, tmp_path)
    assert "secret" not in str(raised.value)
    registry = ModelRegistry(None, tmp_path)
    with pytest.raises(UnknownModelError, match="CUSTOM_API_KEY"):
        registry.resolve(f"custom/m@{url}")


@pytest.mark.parametrize("price", [1e160, 100_000.5, -1])
def test_a_price_beyond_any_provider_is_refused(tmp_path: Path, price: float) -> None:
    path = tmp_path / "models.json"
    entry = {"name": "x", "base_url": "http://h/v1", "model": "m"}
    prices = {"prompt_price": price, "completion_price": 1.0}
    path.write_text(json.dumps({"models": [{**entry, **prices}]}))
    with pytest.raises(UnknownModelError, match=r"prompt_price must be .* 0 to 100,000"):
        ModelRegistry(path, tmp_path)
