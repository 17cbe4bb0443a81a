"""Model names and where they are served: the registry's data side."""

from __future__ import annotations

import functools
import json
import math
import os
import re
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from parley.core.wording import plain
from parley.engine.errors import UnknownModelError
from parley.engine.local_model import SLOTS
from parley.engine.shared_limit import ProviderLimits, default_key
from parley.engine.usage import Prices

LOCAL_MODEL = "local/gemma-3-270m"
DEFAULT_MODEL = LOCAL_MODEL
OPENAI_BASE_URL = "https://api.openai.com/v1"
OPENAI_LISTED = (
    "gpt-4o-mini",
    "gpt-4o",
    "gpt-4.1",
    "gpt-4.1-mini",
    "gpt-4.1-nano",
    "o3-mini",
    "o4-mini",
)
_OPENAI_NAME = re.compile(r"^(gpt-[0-9][\w.\-]*|chatgpt-[\w.\-]+|o[0-9][\w.\-]*)$")
_CUSTOM_NAME = re.compile(r"^custom/(?P<model>[^@\s]+)@(?P<url>https?://\S+)$")


def url_problem(url: str) -> str | None:
    """Why a model's base URL cannot be used as it is: credentials in it would be sent where the
    key is not (and shown wherever the URL is), and a query would end up before the path."""
    parts = urlsplit(url)
    if "@" in parts.netloc:
        return "carries a user or password"
    if parts.query or parts.fragment:
        return "carries a query or a fragment"
    return None


Provider = Literal["local", "custom", "config", "openai"]
JudgeMode = Literal["per_agent", "per_dimension", "per_episode"]
"""How the judge is asked: one request per agent with every dimension (the default), one request
per agent and dimension (the smallest answers), or one request for the whole episode, every
agent's integer scores and a short reasoning (the fewest requests, for slow local models)."""

LOCAL_SAMPLING: dict[str, Any] = {
    "cache_prompt": True,
    # DRY penalises continuing any run of more than a few tokens that already occurs in the
    # context, which is what a small model's word-for-word repetition of earlier lines is.
    "dry_multiplier": 0.8,
    "dry_base": 1.75,
    "dry_allowed_length": 2,
    "dry_penalty_last_n": 8192,
    "repeat_penalty": 1.1,
    "top_p": 0.95,
}
"""llama.cpp sampling settings for the embedded model (measured in bench/RESULTS.md)."""
DEFAULT_TIMEOUT = 60.0
JUDGE_TIMEOUT_FACTOR = 3
"""A judge request's timeout, unless given, is this many times the model's turn timeout: the
whole conversation goes in and the longest answer comes out."""
LOCAL_TIMEOUT = 300.0
LOCAL_JUDGE_TIMEOUT = JUDGE_TIMEOUT_FACTOR * LOCAL_TIMEOUT
"""The embedded model's request timeouts, counted from the request's slot: its work on a busy
two-core machine, several requests decoded at once beside other programs, with room to spare (a
whole-episode judgement took about 95 s beside two CPU-bound processes, under 3 tokens a second:
bench/RESULTS.md); a request that takes longer is stuck, not queued."""
DEFAULT_CEILING = 256
"""Most calls in flight to one endpoint unless the models file says otherwise: about what one
worker's CPU drives at 200 ms a call (bench/RESULTS.md, issue 11)."""


class ModelInfo(BaseModel):
    """How to reach one model and how to ask it (frozen: the registry hands out one per name,
    as every turn and judge call asks for it)."""

    model_config = ConfigDict(frozen=True)

    name: str
    provider: Provider
    model: str
    """The model id sent to the endpoint."""
    base_url: str | None
    """None for the embedded model until it is started."""
    api_key_env: str | None = None
    json_schema: bool = True
    """The endpoint accepts response_format json_schema."""
    text_actions: bool = False
    """Actions are asked as one plain-text line (small models) instead of JSON."""
    judge_mode: JudgeMode = "per_agent"
    extra_body: dict[str, Any] = Field(default_factory=dict)
    """Further keys of every request body (sampling settings the endpoint understands)."""
    max_concurrency: int = DEFAULT_CEILING
    """Ceiling of the adaptive limit on calls in flight to its endpoint (engine/limiter.py)."""
    min_concurrency: int = 1
    """Floor of that limit; equal to the ceiling, a fixed limit."""
    timeout: float = DEFAULT_TIMEOUT
    """Seconds allowed for one request of an agent's turn, from the moment it has its place
    under the endpoint's limit (waiting for that place is not counted)."""
    judge_timeout: float = JUDGE_TIMEOUT_FACTOR * DEFAULT_TIMEOUT
    """Seconds allowed for one judge request (the whole conversation in, the longest answer
    out), counted the same way."""
    available: bool = True
    reason: str | None = None
    """Why the model cannot be used, when available is False."""


MAX_PRICE = 100_000.0
"""The most US dollars per million tokens a price may state (a typo beyond it would make every
cost, estimate and budget meaningless)."""


def _price(value: Any, info: ValidationInfo) -> Any:
    """A finite number from zero to MAX_PRICE; a string or a boolean is refused, not converted."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or not 0 <= value <= MAX_PRICE:
        raise ValueError(
            f"{info.field_name} must be a number of US dollars per million tokens, "
            f"0 to {MAX_PRICE:,.0f}, not {value!r}"
        )
    return float(value)


Price = Annotated[float, BeforeValidator(_price)]


def _count(value: Any, info: ValidationInfo) -> Any:
    """A whole number, one or more; a string, a fraction or a boolean is refused."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{info.field_name} must be a whole number, 1 or more, not {value!r}")
    return value


Count = Annotated[int, BeforeValidator(_count)]


class ConfiguredModel(BaseModel):
    """One entry of the models file."""

    name: str
    base_url: str
    model: str
    api_key_env: str | None = None
    json_schema: bool = True
    text_actions: bool = False
    judge_mode: JudgeMode = "per_agent"
    extra_body: dict[str, Any] = Field(default_factory=dict)
    max_concurrency: int = Field(default=DEFAULT_CEILING, ge=1)
    min_concurrency: int = Field(default=1, ge=1)
    timeout: float = Field(default=DEFAULT_TIMEOUT, gt=0)
    judge_timeout: float | None = Field(default=None, gt=0)
    """None: JUDGE_TIMEOUT_FACTOR times `timeout`."""
    prompt_price: Price | None = None
    """US dollars per million prompt tokens."""
    completion_price: Price | None = None
    """US dollars per million completion tokens."""
    requests_per_minute: Count | None = None
    tokens_per_minute: Count | None = None
    """Counted at each request's estimate (its max_tokens and its prompt at four characters a
    token), corrected by the answer's `usage`."""
    max_in_flight: Count | None = None
    """Requests at once, across every process."""
    limit_key: str | None = Field(default=None, min_length=1, max_length=200)
    """What the limits are counted under; None: the base URL and `api_key_env`, so entries on
    one endpoint and key share them."""

    @field_validator("base_url")
    @classmethod
    def _plain_url(cls, url: str) -> str:
        problem = url_problem(url)
        if problem is not None:
            raise ValueError(f"{problem}: name the variable holding the key in api_key_env")
        return url

    @model_validator(mode="after")
    def _bounds(self) -> ConfiguredModel:
        if self.min_concurrency > self.max_concurrency:
            raise ValueError("min_concurrency must not exceed max_concurrency")
        if (self.prompt_price is None) != (self.completion_price is None):
            raise ValueError("give both prompt_price and completion_price, or neither")
        return self

    def provider_limits(self) -> ProviderLimits | None:
        """The limits this entry states, under its key; None when it states none."""
        stated = (self.requests_per_minute, self.tokens_per_minute, self.max_in_flight)
        if all(value is None for value in stated):
            return None
        return ProviderLimits(self.limit_key_name, *stated)

    @property
    def limit_key_name(self) -> str:
        return self.limit_key or default_key(self.base_url, self.api_key_env)

    def prices(self) -> Prices | None:
        if self.prompt_price is None or self.completion_price is None:
            return None
        return Prices(prompt=self.prompt_price, completion=self.completion_price)

    @model_validator(mode="before")
    @classmethod
    def _judge_per_dimension(cls, data: Any) -> Any:
        """`judge_per_dimension = true`, the older spelling of judge_mode = "per_dimension"."""
        if isinstance(data, dict) and "judge_per_dimension" in data:
            data = dict(data)
            if data.pop("judge_per_dimension") and "judge_mode" not in data:
                data["judge_mode"] = "per_dimension"
        return data


class ModelsFile(BaseModel):
    models: list[ConfiguredModel] = Field(default_factory=list)

    @model_validator(mode="after")
    def _one_limit_per_key(self) -> ModelsFile:
        """Entries counted under one key state the same limits, or none (they take the key's)."""
        stated: dict[str, tuple[str, ProviderLimits]] = {}
        for entry in self.models:
            limits = entry.provider_limits()
            if limits is None:
                continue
            first = stated.setdefault(limits.key, (entry.name, limits))
            if first[1] != limits:
                raise ValueError(
                    f"models {first[0]!r} and {entry.name!r} are counted under one limit key "
                    f"({limits.key}) but state different limits: state them once, or give "
                    "each its own limit_key"
                )
        return self


def provider_limits(entries: list[ConfiguredModel]) -> dict[str, ProviderLimits]:
    """The limits each model is counted under, by model name: an entry that states none takes
    those another entry states for its key."""
    by_key = {limits.key: limits for e in entries if (limits := e.provider_limits()) is not None}
    return {e.name: by_key[e.limit_key_name] for e in entries if e.limit_key_name in by_key}


def load_models_file(path: Path) -> list[ConfiguredModel]:
    """Read named models from a JSON or TOML file: {"models": [{name, base_url, model, ...}]}."""
    try:
        raw = path.read_bytes()
        data = tomllib.loads(raw.decode()) if path.suffix == ".toml" else json.loads(raw)
        return ModelsFile.model_validate(data).models
    except ValidationError as exc:
        problems = "; ".join(_problem(data, error) for error in exc.errors())
        raise UnknownModelError(f"cannot read models file {path}: {problems}") from exc
    except (OSError, ValueError) as exc:
        raise UnknownModelError(f"cannot read models file {path}: {exc}") from exc


def _problem(data: Any, error: Any) -> str:
    """One validation error as `models[0] (lab-llama).prompt_price: <what is wrong>`."""
    where = ""
    loc = list(error["loc"])
    if loc[:1] == ["models"] and len(loc) > 1 and isinstance(loc[1], int):
        where = f"models[{loc[1]}]"
        entries = data.get("models") if isinstance(data, dict) else None
        entry = entries[loc[1]] if isinstance(entries, list) else None
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            where += f" ({entry['name']})"
        loc = loc[2:]
    where += "".join(f".{part}" for part in loc)
    message = plain(error)
    return f"{where.lstrip('.')}: {message}" if where else message


def local_model_info(available: bool, reason: str | None) -> ModelInfo:
    return ModelInfo(
        name=LOCAL_MODEL,
        provider="local",
        model="gemma-3-270m",
        base_url=None,
        json_schema=True,
        text_actions=True,
        judge_mode="per_episode",
        extra_body=LOCAL_SAMPLING,
        max_concurrency=SLOTS,
        min_concurrency=SLOTS,
        timeout=LOCAL_TIMEOUT,
        judge_timeout=LOCAL_JUDGE_TIMEOUT,
        available=available,
        reason=reason,
    )


@functools.lru_cache(maxsize=1024)
def custom_model_info(name: str) -> ModelInfo | None:
    """`custom/<model>@<base_url>` as in Sotopia; the key comes from CUSTOM_API_KEY if set."""
    match = _CUSTOM_NAME.match(name)
    if match is None:
        return None
    problem = url_problem(match["url"])
    return ModelInfo(
        name=name,
        provider="custom",
        model=match["model"],
        base_url=match["url"].rstrip("/") if problem is None else None,
        api_key_env="CUSTOM_API_KEY",
        available=problem is None,
        reason=None if problem is None else f"its URL {problem}: give the key in CUSTOM_API_KEY",
    )


_AS_CONFIGURED = ModelInfo.model_fields.keys() & ConfiguredModel.model_fields.keys() - {
    "base_url",
    "judge_timeout",
}
"""What a configured model's info takes from its entry unchanged."""


def configured_model_info(entry: ConfiguredModel) -> ModelInfo:
    missing = entry.api_key_env is not None and not os.environ.get(entry.api_key_env)
    return ModelInfo(
        **entry.model_dump(include=_AS_CONFIGURED),
        provider="config",
        base_url=entry.base_url.rstrip("/"),
        judge_timeout=entry.judge_timeout or JUDGE_TIMEOUT_FACTOR * entry.timeout,
        available=not missing,
        reason=f"environment variable {entry.api_key_env} is not set" if missing else None,
    )


def openai_model_info(name: str) -> ModelInfo | None:
    if _OPENAI_NAME.match(name) is None:
        return None
    has_key = bool(os.environ.get("OPENAI_API_KEY"))
    return _openai_model_info(name, has_key, os.environ.get("OPENAI_BASE_URL", OPENAI_BASE_URL))


@functools.lru_cache(maxsize=1024)
def _openai_model_info(name: str, has_key: bool, base_url: str) -> ModelInfo:
    return ModelInfo(
        name=name,
        provider="openai",
        model=name,
        base_url=base_url.rstrip("/"),
        api_key_env="OPENAI_API_KEY",
        available=has_key,
        reason=None if has_key else "environment variable OPENAI_API_KEY is not set",
    )


def is_reasoning_model(info: ModelInfo) -> bool:
    """OpenAI o-series models take no temperature."""
    return info.provider == "openai" and info.model.startswith("o")
