"""Who judges: the fields every request that judges takes (a start, an experiment design, a
re-judging), checked once here, and the judge runs a stored record shows."""

from collections.abc import Sequence
from typing import Annotated

from pydantic import BaseModel, Field, model_validator

from parley.core.errors import ErrorCode, UserError
from parley.core.limits import MAX_JUDGE_RUNS, ShortText
from parley.engine.errors import UnknownModelError
from parley.engine.llm import ModelCatalog
from parley.engine.models import DEFAULT_MODEL
from parley.engine.types import Aggregate, JudgeRun, JudgeSpec, Panel
from parley.storage.models import EpisodeLog, EpisodeStatus, Evaluation, EvaluationStatus


class JudgeFields(BaseModel, extra="forbid"):
    model: ShortText
    repeats: Annotated[int, Field(ge=1, le=MAX_JUDGE_RUNS)] = 1


class PanelFields(BaseModel):
    """`judge_model` alone (the embedded model by default), or a panel of `judges`."""

    judge_model: ShortText | None = None
    judges: Annotated[list[JudgeFields], Field(min_length=1, max_length=MAX_JUDGE_RUNS)] | None = (
        None
    )
    judge_aggregate: Aggregate = Aggregate.MEAN

    @model_validator(mode="after")
    def one_panel(self) -> "PanelFields":
        if self.judges is None:
            return self
        if self.judge_model is not None:
            raise ValueError("give a judge model or a panel of judges, not both")
        models = [judge.model for judge in self.judges]
        if len(set(models)) != len(models):
            raise ValueError("name each judge of the panel once (repeats asks it again)")
        runs = sum(judge.repeats for judge in self.judges)
        if runs > MAX_JUDGE_RUNS:
            raise ValueError(
                f"a panel makes at most {MAX_JUDGE_RUNS} judge runs (its judges' repeats added "
                f"up), not {runs}"
            )
        return self

    def panel(self) -> Panel:
        if self.judges is None:
            return Panel.of(self.judge_model or DEFAULT_MODEL)
        judges = [JudgeSpec(model=j.model, repeats=j.repeats) for j in self.judges]
        return Panel(judges=judges, aggregate=self.judge_aggregate)

    def first_judge(self) -> str:
        """The model of the panel's first judge (the judge, when there is one)."""
        return self.panel().judges[0].model

    def judge_errors(self, models: ModelCatalog, prefix: Sequence[str]) -> list[UserError]:
        """INVALID for each judge model that is not known (or not usable) here."""
        if self.judges is None:
            named = [(["judgeModel"], self.judge_model or DEFAULT_MODEL)]
        else:
            named = [(["judges", str(i), "model"], j.model) for i, j in enumerate(self.judges)]
        errors = []
        for path, name in named:
            try:
                models.resolve(name)
            except UnknownModelError as err:
                errors.append(UserError([*prefix, *path], str(err), ErrorCode.INVALID))
        return errors


def episode_runs(episode: EpisodeLog) -> list[JudgeRun]:
    """An episode's judge runs; for a finished record stored without them (by Sotopia, or
    before panels), the one run its own fields hold."""
    if episode.judge_runs or episode.status != EpisodeStatus.COMPLETED:
        return list(episode.judge_runs)
    return [_one_run(episode.panel(), episode.rewards, episode.reasoning, episode.judge_error)]


def evaluation_runs(entry: Evaluation) -> list[JudgeRun]:
    """An evaluation's judge runs; for one that ended before panels, the one it made."""
    if entry.judge_runs or entry.status not in (
        EvaluationStatus.COMPLETED,
        EvaluationStatus.FAILED,
    ):
        return list(entry.judge_runs)
    return [_one_run(entry.panel(), entry.rewards, entry.reasoning, entry.error)]


def _one_run(
    panel: Panel,
    rewards: list[tuple[float, dict[str, float]] | float],
    reasoning: str,
    error: str | None,
) -> JudgeRun:
    scored = [reward for reward in rewards if not isinstance(reward, float | int)]
    if error is None and len(scored) == len(rewards) and scored:
        return JudgeRun(model=panel.judges[0].model, rewards=scored, reasoning=reasoning)
    return JudgeRun(model=panel.judges[0].model, error=error or "no scores")
