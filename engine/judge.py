"""The judge: one structured evaluation per agent and dimension, within range."""

from __future__ import annotations

from statistics import fmean

from parley.engine.errors import (
    JudgeFailed,
    LLMError,
    LLMOutputError,
    LLMTimeout,
    UnknownModelError,
    gather_or_fail,
)
from parley.engine.generation import ask
from parley.engine.ledger import scoped
from parley.engine.llm import ChatRequest, LLMRouter
from parley.engine.models import ModelInfo
from parley.engine.parsing import (
    InvalidOutput,
    parse_dimension_score,
    parse_episode_evaluation,
    parse_evaluation,
)
from parley.engine.prompts import (
    DIMENSION_SCHEMA_NAME,
    EPISODE_EVALUATION_SCHEMA_NAME,
    EVALUATION_SCHEMA_NAME,
    SCORE_SCHEMA_NAME,
    agent_judge_messages,
    dimension_judge_messages,
    episode_evaluation_schema,
    episode_judge_messages,
    evaluation_schema,
    integer_schema,
    judge_history,
    score_schema,
    short_episode_context,
    short_judge_context,
)
from parley.engine.stats import GenerationStats
from parley.engine.types import (
    AgentEvaluation,
    DimensionScore,
    DimensionSpec,
    EpisodeSetup,
    Evaluation,
    JudgeErrorCode,
    Transcript,
)


class _Judge:
    def __init__(
        self, setup: EpisodeSetup, transcript: Transcript, llm: LLMRouter, info: ModelInfo
    ) -> None:
        self.setup = setup
        self.transcript = transcript
        self.llm = llm
        self.info = info
        self.stats = GenerationStats()
        self.prompts: dict[int, str] = {}

    async def dimension(self, agent: int, context: str, dim: DimensionSpec) -> DimensionScore:
        """Ask one dimension; if the answer stays unusable, ask for a bare integer."""
        name = self.setup.agents[agent].name
        messages = dimension_judge_messages(context, name, dim)
        self.prompts.setdefault(agent, messages[0]["content"])
        request = ChatRequest(
            messages=messages,
            max_tokens=160,
            temperature=0.0,
            purpose="judge",
            schema=score_schema(dim),
            schema_name=DIMENSION_SCHEMA_NAME,
        )
        try:
            return await ask(
                self.llm,
                self.info.name,
                request,
                lambda t: parse_dimension_score(t, dim),
                self.stats,
            )
        except LLMOutputError:
            self.stats.fallbacks += 1
        request = ChatRequest(
            messages=[
                {
                    "role": "user",
                    "content": messages[0]["content"] + " Answer with the integer only.",
                }
            ],
            max_tokens=8,
            temperature=0.0,
            purpose="judge",
            schema=integer_schema(dim),
            schema_name=SCORE_SCHEMA_NAME,
        )
        return await ask(
            self.llm, self.info.name, request, lambda t: parse_dimension_score(t, dim), self.stats
        )

    async def per_dimension(
        self, agent: int, dims: list[DimensionSpec]
    ) -> dict[str, DimensionScore]:
        context = short_judge_context(self.setup, self.transcript, agent)
        with scoped(seat=agent):  # the ledger says whose scores a call asked for
            return {d.name: await self.dimension(agent, context, d) for d in dims}

    async def per_agent(self, agent: int, history: str) -> dict[str, DimensionScore]:
        """All dimensions in one answer; dimensions still invalid after a re-ask go one by one."""
        dims = self.setup.dimensions
        name = self.setup.agents[agent].name
        messages = agent_judge_messages(history, name, dims, self.transcript.termination_reason)
        self.prompts[agent] = messages[0]["content"]
        request = ChatRequest(
            messages=messages,
            max_tokens=300 + 200 * len(dims),
            temperature=0.0,
            purpose="judge",
            schema=evaluation_schema(dims),
            schema_name=EVALUATION_SCHEMA_NAME,
        )
        partial: dict[str, DimensionScore] = {}

        def parse(text: str) -> dict[str, DimensionScore]:
            scores, errors = parse_evaluation(text, dims)
            partial.update(scores)
            if errors:
                raise InvalidOutput("; ".join(errors.values()))
            return scores

        try:
            with scoped(seat=agent):
                return await ask(self.llm, self.info.name, request, parse, self.stats)
        except LLMOutputError:
            self.stats.fallbacks += 1
        missing = [d for d in dims if d.name not in partial]
        partial.update(await self.per_dimension(agent, missing))
        return {d.name: partial[d.name] for d in dims}

    async def agent(self, agent: int, history: str) -> AgentEvaluation:
        name = self.setup.agents[agent].name
        try:
            if self.info.judge_mode == "per_dimension":
                scores = await self.per_dimension(agent, self.setup.dimensions)
            else:
                scores = await self.per_agent(agent, history)
        except LLMError as exc:
            raise self.failed(name, exc) from exc
        return _evaluation(name, scores)

    async def whole_episode(self) -> list[AgentEvaluation]:
        """Every agent in one request; what is still invalid after a re-ask goes dimension by
        dimension."""
        dims = self.setup.dimensions
        names = [a.name for a in self.setup.agents]
        context = short_episode_context(self.setup, self.transcript)
        termination = self.transcript.termination_reason
        messages = episode_judge_messages(context, names, dims, termination)
        self.prompts[0] = messages[0]["content"]
        request = ChatRequest(
            messages=messages,
            max_tokens=len(names) * (60 + 12 * len(dims)),
            temperature=0.0,
            purpose="judge",
            schema=episode_evaluation_schema(names, dims),
            schema_name=EPISODE_EVALUATION_SCHEMA_NAME,
        )
        partial: dict[str, dict[str, DimensionScore]] = {}
        comments: dict[str, str] = {}

        def parse(text: str) -> None:
            scores, reasons, errors = parse_episode_evaluation(text, names, dims)
            for name, found in scores.items():
                partial.setdefault(name, {}).update(found)
            comments.update(reasons)
            if errors:
                raise InvalidOutput("; ".join(errors))

        try:
            await ask(self.llm, self.info.name, request, parse, self.stats)
        except LLMOutputError:
            self.stats.fallbacks += 1
        evaluations = []
        for agent, name in enumerate(names):
            scores = partial.get(name, {})
            missing = [d for d in dims if d.name not in scores]
            if missing:
                try:
                    scores.update(await self.per_dimension(agent, missing))
                except LLMError as exc:
                    raise self.failed(name, exc) from exc
            ordered = {d.name: scores[d.name] for d in dims}
            evaluations.append(_evaluation(name, ordered, comments.get(name, "")))
        return evaluations

    def failed(self, name: str, exc: LLMError) -> JudgeFailed:
        return JudgeFailed(
            f"judge {self.info.name} gave no valid scores for {name}: {exc}",
            self.stats,
            error_code(exc),
        )


def error_code(exc: LLMError) -> JudgeErrorCode:
    """Why a model call gave nothing usable, as a judge's failure says it."""
    if isinstance(exc, LLMOutputError):
        return JudgeErrorCode.INVALID_OUTPUT
    if isinstance(exc, LLMTimeout):
        return JudgeErrorCode.TIMEOUT
    return JudgeErrorCode.UNAVAILABLE


def _evaluation(name: str, scores: dict[str, DimensionScore], comment: str = "") -> AgentEvaluation:
    overall = fmean(s.score for s in scores.values())
    return AgentEvaluation(agent_name=name, scores=scores, overall=overall, comment=comment)


def _reasoning(termination: str, agents: list[AgentEvaluation]) -> str:
    """Sotopia's comment string (EpisodeLog.reasoning)."""
    text = f"Environment comments: terminated: {termination}\n" if termination else ""
    for k, evaluation in enumerate(agents, start=1):
        text += f"Agent {k} comments:\n"
        if evaluation.comment:
            text += f"{evaluation.comment}\n"
        text += "".join(
            f"{dim}: {s.reasoning}\n" for dim, s in evaluation.scores.items() if s.reasoning
        )
    return text


async def evaluate(
    setup: EpisodeSetup, transcript: Transcript, llm: LLMRouter, model: str | None = None
) -> Evaluation:
    """Score every agent on every dimension, by `model` (the setup's judge model by default);
    raises JudgeFailed, with the reason, rather than invent scores (whatever went wrong: an
    unusable model, answers, or its endpoint)."""
    try:
        info = llm.resolve(model or setup.judge_model)
    except UnknownModelError as exc:
        raise JudgeFailed(str(exc), GenerationStats(), JudgeErrorCode.UNKNOWN_MODEL) from exc
    judge = _Judge(setup, transcript, llm, info)
    try:
        if info.judge_mode == "per_episode":
            agents = await judge.whole_episode()
        else:
            history = judge_history(setup, transcript) if info.judge_mode == "per_agent" else ""
            agents = await gather_or_fail(judge.agent(i, history) for i in range(len(setup.agents)))
    except LLMError as exc:  # the whole-episode request itself (per agent: judge.failed)
        reason = f"judge {info.name} gave no valid scores: {exc}"
        raise JudgeFailed(reason, judge.stats, error_code(exc)) from exc
    return Evaluation(
        agents=agents,
        reasoning=_reasoning(transcript.termination_reason, agents),
        rewards_prompt=judge.prompts.get(0, ""),
        stats=judge.stats,
    )
