"""The episode loop: agents take turns until a termination rule fires."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from parley.core import tracing
from parley.engine.episode_log import episode_log_parts
from parley.engine.errors import (
    EngineError,
    EpisodeFailed,
    EpisodeSuspended,
    JudgeFailed,
    LLMError,
    UnknownModelError,
    gather_or_fail,
)
from parley.engine.game_prompts import game_action_schema, notices_text, phase_text, rules_text
from parley.engine.games import GameState, game_rules, result_text
from parley.engine.generation import Repair, ask, hotter
from parley.engine.ledger import CallPurpose, scoped
from parley.engine.llm import ChatRequest, LLMRouter
from parley.engine.models import ModelInfo
from parley.engine.panel import OnRuns, PanelEvaluation, judge_panel
from parley.engine.parsing import InvalidOutput, parse_action, parse_text_action
from parley.engine.prompts import (
    ACTION_SCHEMA_NAME,
    action_json,
    action_schema,
    agent_background,
    agent_context,
    short_context,
    text_action_messages,
    text_prefill,
    turn_message,
)
from parley.engine.render import (
    action_line,
    action_text,
    agent_viewer,
    first_observation,
    render_tagged,
    turn_observation,
)
from parley.engine.stats import GenerationStats
from parley.engine.types import (
    ACTION_TYPES,
    ActionType,
    AgentAction,
    EpisodeLogParts,
    EpisodeSetup,
    Injection,
    JudgeRun,
    Suspended,
    TerminationKind,
    Transcript,
    Triple,
    Turn,
    TurnEvent,
    TurnOrder,
)

OnTurn = Callable[[TurnEvent], Awaitable[None]]
ENV = "Environment"
_REASONS: dict[TerminationKind, str] = {
    "max_turns": "The conversation is too long; ",
    "too_few_agents": "Too few active agents; ",
    "stale": "The conversation stales for too long; ",
    "game_over": "The game is over; ",
}
_NONE = AgentAction(action_type=ActionType.NONE)


@dataclass(frozen=True)
class TurnControl:
    """What the caller says before a turn: the messages delivered in it, and whether to pause."""

    injections: list[Injection] = field(default_factory=list)
    pause: bool = False


class Control(Protocol):
    async def before_turn(self, turn: int, replaying: bool) -> TurnControl:
        """Called before every turn; `replaying` when the turn is one of the history's (then a
        pause is not asked for, and the injections are those it was delivered then)."""
        ...


class Uncontrolled:
    """No injections, no pauses: an episode run from start to end."""

    async def before_turn(self, turn: int, replaying: bool) -> TurnControl:
        return TurnControl()


class _Episode:
    """Mutable state of one running episode."""

    def __init__(
        self,
        setup: EpisodeSetup,
        llm: LLMRouter,
        infos: list[ModelInfo],
        game: GameState | None = None,
    ) -> None:
        self.setup = setup
        self.game = game
        """The social game being played, if the scenario is one: it chooses who acts."""
        self.llm = llm
        self.infos = infos
        self.names = [a.name for a in setup.agents]
        self.stats = GenerationStats()
        n = len(self.names)
        backgrounds = [agent_background(setup, i) for i in range(n)]
        first = [first_observation(b) for b in backgrounds]
        self.dialogues: list[list[dict[str, str]]] = [[] for _ in range(n)]
        """Each JSON-action agent's conversation so far: it only grows (see engine.prompts)."""
        self.unseen: list[list[str]] = [[] for _ in range(n)]
        """What each agent saw the others do since its last turn."""
        self.lines: list[list[str]] = [[] for _ in range(n)]
        self.contexts: list[str | None] = [None] * n
        self.said: list[set[str]] = [set() for _ in range(n)]
        """What each agent has said, normalised, to catch word-for-word repeats."""
        self.messages: list[list[Triple]] = [[(ENV, self.names[i], first[i]) for i in range(n)]]
        self.actions: list[Turn] = []
        self.active = [True] * n
        self.rng = random.Random(setup.seed)
        self.next_rr = 0
        self.told = [0] * n
        """How many of the game's notices each agent has been told."""

    def actors(self) -> list[int]:
        if self.game is not None:
            actor = self.game.actor()
            return [] if actor is None else [actor]
        live = [i for i, a in enumerate(self.active) if a]
        match self.setup.turn_order:
            case TurnOrder.SIMULTANEOUS:
                return live
            case TurnOrder.RANDOM:
                return [self.rng.choice(live)]
            case _:
                n = len(self.names)
                for step in range(n):
                    i = (self.next_rr + step) % n
                    if self.active[i]:
                        self.next_rr = (i + 1) % n
                        return [i]
                return []

    async def act(self, i: int, turn: int) -> AgentAction:
        with (
            scoped(purpose=CallPurpose.TURN, seat=i, turn=turn),
            tracing.turn(turn, i, self.names[i]),
        ):
            return await self._act(i, turn)

    async def _act(self, i: int, turn: int) -> AgentAction:
        info, name = self.infos[i], self.names[i]
        recipients = [n for j, n in enumerate(self.names) if j != i]
        try:
            if info.text_actions and self.game is None:
                if self.contexts[i] is None:
                    self.contexts[i] = short_context(self.setup, i)
                prefill = text_prefill(name)
                goal = render_tagged(self.setup.goal_of(i), agent_viewer(i))
                context = self.contexts[i] or ""
                request = ChatRequest(
                    messages=text_action_messages(name, context, self.lines[i], goal),
                    max_tokens=40,
                    temperature=0.7,
                    stop=["\n", '"'],
                )
                action = await self.ask_fresh(
                    i, request, lambda text: parse_text_action(text, prefill), hotter()
                )
            else:
                game = self.game
                everything = list(ACTION_TYPES)
                types = everything if game is None else list(game.phase.action_types)
                request = ChatRequest(
                    messages=[*self.dialogues[i], self.turn_prompt(i, turn)],
                    max_tokens=400,
                    temperature=0.7,
                    schema=action_schema(types) if game is None else game_action_schema(game, i),
                    schema_name=ACTION_SCHEMA_NAME,
                )

                def parse_one(text: str) -> AgentAction:
                    if game is None:
                        return parse_action(text, types, name, recipients)
                    # any type parses; the phase then says which it allows, and why not
                    return game.check(i, parse_action(text, everything, name, recipients))

                action = await self.ask_fresh(i, request, parse_one)
        except LLMError as exc:
            raise EpisodeFailed(
                f"{name} ({info.name}) produced no valid action at turn {turn}: {exc}", self.stats
            ) from exc
        if action.action_type == ActionType.SPEAK:
            self.said[i].add(_normalised(action.argument))
        return action

    async def ask_fresh(
        self,
        i: int,
        request: ChatRequest,
        parse: Callable[[str], AgentAction],
        repair: Repair | None = None,
    ) -> AgentAction:
        """Agent `i`'s action, `ask`ed with `parse`, refusing once a line it already said word
        for word.

        The model is then re-asked with the reason, once: a repeat is refused only in a first
        answer. It is kept when the re-ask yields nothing usable (its answer repeats too or
        cannot be used, or its every try fails at the endpoint), and a re-ask (after an
        unusable first answer) that repeats a line is kept as well: an agent may really say
        the same thing twice, and a repeat must never fail the episode.
        """
        answers = 0
        repeated: AgentAction | None = None

        def check(text: str) -> AgentAction:
            nonlocal answers, repeated
            answers += 1
            if repeated is not None:
                try:
                    return parse(text)
                except InvalidOutput:
                    return repeated
            action = parse(text)
            if (
                answers == 1
                and action.action_type == ActionType.SPEAK
                and _normalised(action.argument) in self.said[i]
            ):
                repeated = action
                raise InvalidOutput("you said exactly that before; say something new")
            return action

        try:
            return await ask(self.llm, self.infos[i].name, request, check, self.stats, repair)
        except LLMError:
            if repeated is None:
                raise
            return repeated

    def turn_prompt(self, i: int, turn: int) -> dict[str, str]:
        """The next user message of agent `i`'s conversation; its context leads the first."""
        game = self.game
        if game is None:
            text = turn_message(self.unseen[i], turn)
        else:
            seen = [*self.unseen[i], *notices_text(game.notices[self.told[i] :])]
            text = f"{turn_message(seen, turn)} {phase_text(game, i)}"
        if not self.dialogues[i]:
            context = agent_context(self.setup, i, list(ACTION_TYPES))
            if game is not None:
                context += "\n" + rules_text(game.rules, self.names, i)
            text = f"{context}\n\n{text}"
        return {"role": "user", "content": text}

    def record(self, turn: int, chosen: dict[int, AgentAction]) -> None:
        """Extend the conversations of the JSON-action agents that acted in `turn`."""
        for i, action in chosen.items():
            if not self.infos[i].text_actions:
                prompt = self.turn_prompt(i, turn)
                reply = {"role": "assistant", "content": action_json(action)}
                self.dialogues[i] += [prompt, reply]
                self.unseen[i] = []
                self.told[i] = len(self.game.notices) if self.game else 0

    def deliver(self, injections: list[Injection]) -> None:
        """Environment messages of the turn about to start, for the agents they are to."""
        current = self.messages[-1]
        for injection in injections:
            for viewer, name in enumerate(self.names):
                if injection.to and name not in injection.to:
                    continue
                current.append((ENV, name, injection.text))
                self.unseen[viewer].append(f"{ENV}: {injection.text}")
                self.lines[viewer].append(f"{ENV}: {injection.text}")

    def observe(self, turn: int, chosen: dict[int, AgentAction]) -> None:
        """Append the observation of `turn` for every viewer (private actions filtered)."""
        observations: list[Triple] = []
        for viewer, name in enumerate(self.names):
            visible = [
                (self.names[i], a)
                for i, a in chosen.items()
                if not a.to or viewer == i or name in a.to
            ]
            text = turn_observation(turn, visible)
            observations.append((ENV, name, text))
            self.unseen[viewer] += [
                action_line(speaker, action)
                for speaker, action in visible
                if speaker != name and action.action_type != ActionType.NONE
            ]
            for speaker, action in visible:
                if action.action_type == ActionType.SPEAK:
                    self.lines[viewer].append(f'{speaker}: "{action.argument}"')
                elif action.action_type != ActionType.NONE:
                    self.lines[viewer].append(f"{speaker} {action_text(action)}")
        self.messages.append(observations)


def _normalised(text: str) -> str:
    return " ".join(text.casefold().split())


async def _choose(
    episode: _Episode, actors: list[int], turn: int, given: dict[int, AgentAction]
) -> dict[int, AgentAction]:
    """The actions of `turn`: those `given` (kept from an earlier attempt), the rest asked."""
    asked = [i for i in actors if i not in given]
    if len(asked) == 1:
        new = {asked[0]: await episode.act(asked[0], turn)}
    else:
        actions = await gather_or_fail(episode.act(i, turn) for i in asked)
        new = dict(zip(asked, actions, strict=True))
    return {i: given[i] if i in given else new[i] for i in actors}


class HistoryMismatch(EngineError):
    """Kept turns that this setup cannot have produced (another turn order, other agents)."""


def _kept(history: Sequence[Turn], turn: int, actors: list[int]) -> dict[int, AgentAction]:
    given = {
        t.agent_index: AgentAction(action_type=t.action_type, argument=t.argument, to=t.to)
        for t in history
        if t.turn == turn
    }
    if not set(given) <= set(actors):
        raise HistoryMismatch(
            f"turn {turn} was played by seats {sorted(given)}, but seats {actors} act in it"
        )
    return given


async def simulate(
    setup: EpisodeSetup,
    llm: LLMRouter,
    on_turn: OnTurn | None = None,
    history: Sequence[Turn] = (),
    control: Control | None = None,
) -> Transcript:
    """Run one episode; raises EpisodeFailed when an agent cannot produce a valid action.

    `history` holds turns an earlier attempt already played (and stored), a person's included:
    they are replayed into the episode's state without asking a model, and not handed to
    `on_turn` again, so the agents see exactly what they saw then and the episode goes on from
    where it stopped. Raises HistoryMismatch when they cannot belong to this setup.

    Raises EpisodeSuspended, before the turn, when a human seat has to act in it and its action
    is not in the history, or when `control` asks for a pause.

    Cancellation propagates (no cleanup is needed: the episode holds no resources).
    """
    control = control or Uncontrolled()
    played = max((t.turn for t in history), default=-1)
    humans = set(setup.human_seats)
    stand_ins = {tuple(pair) for pair in setup.stand_ins}
    stats = GenerationStats()
    try:
        infos = [llm.resolve(m) for m in setup.agent_models]
    except UnknownModelError as exc:
        raise EpisodeFailed(str(exc), stats) from exc
    episode = _Episode(setup, llm, infos, _game(setup, stats))
    stale = 0
    turn = 0
    termination: list[TerminationKind] = []
    while not termination:
        told = await control.before_turn(turn, replaying=turn <= played)
        if told.pause and turn > played:
            raise _suspended(episode, "paused", turn, [])
        episode.deliver(told.injections)
        actors = episode.actors()
        given = _kept(history, turn, actors)
        awaited = [
            i for i in actors if i in humans and i not in given and (i, turn) not in stand_ins
        ]
        if awaited:
            raise _suspended(episode, "waiting", turn, awaited)
        for i, action in given.items():
            if action.action_type == ActionType.SPEAK:
                episode.said[i].add(_normalised(action.argument))
        chosen = await _choose(episode, actors, turn, given)
        current = episode.messages[-1]
        for i, name in enumerate(episode.names):
            current.append((name, ENV, action_text(chosen.get(i, _NONE))))
        phase = episode.game.phase.name if episode.game else None
        done = [
            Turn(
                turn=turn,
                agent_index=i,
                agent_name=episode.names[i],
                phase=phase,
                **dict(chosen[i]),
            )
            for i in actors
        ]
        for record in done:
            episode.actions.append(record)
            if record.action_type == ActionType.LEAVE:
                episode.active[record.agent_index] = False
        if on_turn is not None:
            for record in done:
                if record.agent_index not in given:
                    usage = dict(episode.stats.usage)
                    await on_turn(TurnEvent(turn=record, messages=list(current), usage=usage))
        stale = stale + 1 if all(a.action_type == ActionType.NONE for a in chosen.values()) else 0
        episode.record(turn, chosen)
        episode.observe(turn, chosen)
        if episode.game is not None:
            for record in done:
                episode.game.advance(record.agent_index, record)
            if episode.game.over:
                termination.append("game_over")
        turn += 1
        if turn >= setup.max_turns:
            termination.append("max_turns")
        if sum(episode.active) < 2:
            termination.append("too_few_agents")
        if stale > setup.max_stale_turns:
            termination.append("stale")
    return Transcript(
        agent_names=episode.names,
        messages=episode.messages,
        actions=episode.actions,
        turns=turn,
        termination=termination,
        termination_reason="".join(_reason(t, episode.game) for t in termination),
        stats=episode.stats,
    )


def _game(setup: EpisodeSetup, stats: GenerationStats) -> GameState | None:
    """The game the scenario holds, at its start; EpisodeFailed when its rules do not fit."""
    try:
        rules = game_rules(setup.scenario.game_metadata)
    except ValueError as exc:
        raise EpisodeFailed(f"the scenario's game rules are invalid: {exc}", stats) from exc
    if rules is None:
        return None
    problems = rules.seat_problems(len(setup.agents))
    if problems:
        where, message = problems[0]
        path = ".".join(map(str, where))
        raise EpisodeFailed(
            f"the scenario's game does not fit its agents: {path}: {message}", stats
        )
    return GameState(rules, [a.name for a in setup.agents])


def _reason(kind: TerminationKind, game: GameState | None) -> str:
    if kind == "game_over" and game is not None and game.ending is not None:
        return f"The game is over: {result_text(game.ending)}; "
    return _REASONS[kind]


def _suspended(
    episode: _Episode, reason: Literal["waiting", "paused"], turn: int, seats: list[int]
) -> EpisodeSuspended:
    state = Suspended(
        reason=reason, turn=turn, seats=seats, messages=episode.messages, stats=episode.stats
    )
    return EpisodeSuspended(state)


@dataclass(frozen=True)
class Played:
    """A whole episode: its conversation, and its evaluation or why the judge gave none."""

    transcript: Transcript
    judged: PanelEvaluation | JudgeFailed

    @property
    def evaluation(self) -> PanelEvaluation | None:
        return self.judged if isinstance(self.judged, PanelEvaluation) else None

    @property
    def runs(self) -> list[JudgeRun]:
        """Every judge run, each with its scores or why it gave none."""
        return self.judged.runs

    @property
    def unjudged(self) -> str | None:
        """Why the judge gave no scores; None when it gave them."""
        return self.judged.reason if isinstance(self.judged, JudgeFailed) else None

    @property
    def stats(self) -> GenerationStats:
        return self.transcript.stats.merge(self.judged.stats)

    def log_parts(self) -> EpisodeLogParts:
        return episode_log_parts(self.transcript, self.evaluation)


OnJudging = Callable[[Transcript], Awaitable[None]]


async def play(
    setup: EpisodeSetup,
    llm: LLMRouter,
    on_turn: OnTurn | None = None,
    on_judging: OnJudging | None = None,
    history: Sequence[Turn] = (),
    control: Control | None = None,
    judged: Sequence[JudgeRun] = (),
    on_runs: OnRuns | None = None,
) -> Played:
    """The conversation, then the judges: the engine's one entry for running an episode.

    `on_turn` sees each new turn as it happens, `on_judging` the transcript before the judges
    start and `on_runs` the panel's progress after each judge run; `history` is what an earlier
    attempt played, `judged` the judge runs it stored, and `control` what is said before each
    turn (see `simulate`, `judge_panel` and EpisodeSuspended). Raises EpisodeFailed when an
    agent cannot produce valid output; judges that give no scores fail nothing: the
    conversation is returned with the reason (`Played.unjudged`), to be judged again later.
    """
    transcript = await simulate(setup, llm, on_turn, history, control)
    if on_judging is not None:
        await on_judging(transcript)
    try:
        evaluation: PanelEvaluation | JudgeFailed = await judge_panel(
            setup, transcript, llm, judged, on_runs
        )
    except JudgeFailed as failed:
        evaluation = failed
    return Played(transcript, evaluation)
