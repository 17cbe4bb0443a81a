"""The judge panel the panel tests share: judge A twice, judge B and judge C, all served by the
fake model; A and B score, C fails."""

from collections.abc import Sequence
from typing import Any

from bench.support.fake_llm import FakeLLM, Rule
from parley.engine.types import JudgeRun

RUNS = [("custom/judge-a", 0), ("custom/judge-a", 1), ("custom/judge-b", 0), ("custom/judge-c", 0)]
"""The panel's runs in order, as `who_ran` names them."""


def judges(fake: FakeLLM) -> list[dict[str, Any]]:
    """The panel's judges, as a start or a design names them."""
    return [
        {"model": fake.model_name("judge-a"), "repeats": 2},
        {"model": fake.model_name("judge-b")},
        {"model": fake.model_name("judge-c")},
    ]


def script(fake: FakeLLM, a: int = 8, b: int | None = 2) -> None:
    """Judge A scores `a` on every dimension, B `b` (None: B never answers); C answers HTTP
    500 to every try."""
    fake.add_rule(
        Rule(kind="judge", model="judge-a", score=a, times=None),
        Rule(kind="judge", model="judge-b", score=b, hang=b is None, times=None),
        Rule(kind="judge", model="judge-c", status=500, times=None),
    )


def who_ran(judged: Sequence[JudgeRun]) -> list[tuple[str, int]]:
    """Each run's judge (its model without the endpoint) and repeat."""
    return [(run.model.split("@")[0], run.repeat) for run in judged]
