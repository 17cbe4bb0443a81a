"""The worker: takes episode jobs from the queue, runs them, and stores every step.

Many workers, in one process or on many machines, share one queue. A worker renews a lease on
the jobs it runs; a worker that dies stops renewing, and another one's sweep takes its jobs over
and restarts those episodes (attempt + 1) until the attempt cap, after which the episode fails.
Every write carries the worker's attempt number, so a worker that lost its job cannot overwrite
the new owner's work: it notices, stops, and leaves the job alone.

`run(burst=True)` works until nothing is left that this worker could take, then returns (as
arq's burst mode), which is how tests drive a worker inside their own event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import redis.asyncio as redis

from parley.core import metrics, tracing
from parley.core.backoff import Backoff
from parley.engine.episode import HistoryMismatch, Played, play
from parley.engine.errors import EpisodeFailed, EpisodeSuspended
from parley.engine.ledger import AnswerSource, recording
from parley.engine.limiter import INITIAL
from parley.engine.panel import PanelProgress
from parley.engine.stats import GenerationStats
from parley.engine.types import (
    EpisodeSetup,
    Suspended,
    Transcript,
    TurnEvent,
)
from parley.engine.usage import Usage, merged
from parley.lifecycle import logs
from parley.lifecycle.control import StoredControl
from parley.lifecycle.drafts import Drafter
from parley.lifecycle.experiment_arms import fork_arms
from parley.lifecycle.experiments import top_up, top_up_all
from parley.lifecycle.jobs import crash_reason
from parley.lifecycle.rejudge import Rejudger
from parley.lifecycle.replay import checked
from parley.lifecycle.services import Services, open_services
from parley.lifecycle.settings import RunSettings
from parley.lifecycle.usage import stored_usage, usage_fields
from parley.resolvers.episode_setup import SetupError, load_setup
from parley.storage.answers import CacheSource, replay_source
from parley.storage.episode_store import Fenced, TransitionResult
from parley.storage.events import NOT_JUDGED
from parley.storage.jobs import Job, JobKind
from parley.storage.models import (
    EpisodeLog,
    EpisodeStatus,
    Redelivery,
    StoredTurn,
    Waiting,
)
from parley.storage.outages import is_outage
from parley.storage.records import get_or_none

log = logging.getLogger(__name__)
Status = EpisodeStatus
ACTIVE = (Status.RUNNING, Status.EVALUATING)


MAX_EPISODES_AT_ONCE = 512
"""Default cap on a worker's episodes at once: about 60 MiB of episode state (bench/RESULTS.md);
Redis connections do not grow with it (the client's pool is bounded and waits)."""
EPISODE_HEADROOM = 8
ROOM_POLL = 0.02
"""Seconds between looks at the models' limits while a worker is full (they grow meanwhile: in
slow start with each answer)."""


@dataclass(frozen=True)
class WorkerConfig:
    concurrency: int = MAX_EPISODES_AT_ONCE
    """Most episodes at once; below it the models' adaptive limits decide (`episode_limit`)."""
    lease_seconds: float = 30.0
    """A job whose lease is not renewed for this long is taken over by another worker."""
    max_attempts: int = 3
    """Starts allowed per episode; a job whose worker died this often ends FAILED."""
    poll_seconds: float = 1.0
    """How often running episodes are checked for cancellation."""
    consumer: str = field(default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}")

    @classmethod
    def from_settings(cls, settings: RunSettings) -> WorkerConfig:
        return cls(
            concurrency=settings.concurrency,
            lease_seconds=settings.lease_seconds,
            max_attempts=settings.max_attempts,
        )


RETRYABLE = (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError)
"""Redis errors an outage or a restart causes, which a write may outlast."""
WRITE_RETRY = Backoff(base=0.05, cap=2.0)


class LeaseLost(Exception):
    """Redis stayed unreachable longer than the lease: the job may be another worker's now."""


@dataclass(frozen=True)
class AttemptStart:
    """How this delivery starts its attempt, and why."""

    mode: Literal["restart", "resume"]
    reason: str | None = None
    losses: int = 0
    """Workers lost in a row without storing a turn that this start keeps (the cap's count)."""

    @classmethod
    def of(cls, episode: EpisodeLog, consumer: str) -> AttemptStart:
        """A first start, or the next one after the previous worker handed it back or was lost.
        A loss counts toward the cap only when the lost attempt stored no turn that this one
        keeps: an episode that crashes its workers still stops, one that moves on between
        losses (a worker carries many episodes, and each loss takes them all) finishes."""
        if episode.status not in ACTIVE:
            # Queued again after waiting or a pause: its turns are kept (a person's among them).
            return cls("resume" if episode.turns else "restart", losses=episode.losses)
        keep = episode.redelivery == Redelivery.RESUME or bool(episode.human_seats)
        mode: Literal["restart", "resume"] = "resume" if keep else "restart"
        previous = episode.owner or "a worker"
        if episode.handed_back is not None and episode.handed_back == episode.owner:
            return cls(mode, f"handed back by {previous} when it stopped", episode.losses)
        losses = 0 if keep and stored_turns_since_start(episode) else episode.losses + 1
        return cls(mode, f"{previous} stopped renewing its lease", losses)


def stored_turns_since_start(episode: EpisodeLog) -> bool:
    """Whether the current attempt stored a turn (after the RUNNING change that began it)."""
    began = next(
        (
            change.sequence
            for change in reversed(episode.status_history)
            if change.status == Status.RUNNING and change.attempt == episode.attempt
        ),
        None,
    )
    return began is not None and any(turn.sequence > began for turn in episode.turns)


@dataclass(frozen=True)
class Handler:
    """How the worker runs one kind of job (as arq's worker keeps its functions by name)."""

    run: Callable[[Job], Awaitable[bool]]
    """Run one delivery; True when the job needs no further delivery."""
    ended: Callable[[Job], Awaitable[bool]]
    """After its run was cancelled or fenced: True when the job needs no further delivery."""
    fail: Callable[[Job, str], Awaitable[bool]]
    """After its run crashed: store why; False when it could not (left for redelivery)."""
    subject: str
    """The log field that names what the job is about."""


async def _done(job: Job, reason: str = "") -> bool:
    """A job that ends with its run, whatever happened: its own run stores how it went (an
    evaluation's, a draft part's outcome), or queues it again (a draft part handed back)."""
    return True


@dataclass
class Running:
    job: Job
    attempt: int
    task: asyncio.Task[None]
    settled: bool = False
    """The run is over and only its acknowledgement is left: nothing to stop any more."""


class Worker:
    def __init__(self, services: Services, config: WorkerConfig | None = None) -> None:
        self.config = config or WorkerConfig()
        self.services = services
        self.llm = services.models
        self.jobs = services.jobs
        self.client = services.client
        self.store = services.store
        self.ledger = services.ledger
        self.rejudger = Rejudger(services.client, services.models, self.config.max_attempts)
        self.seats = services.seats
        self.control = services.control
        self.drafter = Drafter(
            services.client, services.models, services.jobs, self.config.max_attempts
        )
        self.handlers: dict[JobKind, Handler] = {
            JobKind.EPISODE: Handler(self._run, self._ended, self._fail_job, "episode"),
            JobKind.EVALUATION: Handler(self._evaluate, _done, _done, "episode"),
            JobKind.DRAFT: Handler(self._draft, _done, _done, "draft_job"),
        }
        """What runs each kind of job."""
        self.running: dict[str, Running] = {}
        self.controls: dict[str, StoredControl] = {}
        """What each running attempt's engine is told before a turn, by episode."""
        self._room = asyncio.Event()
        """Set when an episode ends: its place is free."""
        self._stopping = asyncio.Event()
        self._burst = False
        self._renewed_at = time.monotonic()
        """When the lease on every running job was last renewed: writes retry until it lapses."""

    async def run(self, *, burst: bool = False) -> None:
        """Work until `stop()` (or, in burst mode, until there is nothing left to take);
        unfinished jobs are then handed back for redelivery."""
        self._burst = burst
        await self.jobs.ensure_group()
        log.info("worker started", extra={"worker": self.config.consumer})
        try:
            async with asyncio.TaskGroup() as group:
                group.create_task(self._every(self.config.lease_seconds / 3, self._renew))
                group.create_task(self._every(self.config.lease_seconds / 4, self._sweep))
                group.create_task(self._every(self.config.poll_seconds, self._watch))
                group.create_task(self._every(self.config.poll_seconds, self._expire_seats))
                if self.ledger is not None:
                    group.create_task(self._every(LEDGER_SWEEP_SECONDS, self.ledger.sweep))
                group.create_task(self._every(PACE_SECONDS, self._top_up_all))
                group.create_task(self._read_loop())
                await self._stopping.wait()
                raise _Stop
        except* _Stop:
            pass
        finally:
            await self._hand_back()

    def stop(self) -> None:
        self._stopping.set()

    async def _every(self, seconds: float, action: Callable[[], Awaitable[object]]) -> None:
        while True:
            await asyncio.sleep(seconds)
            try:
                await action()
            except redis.RedisError as err:
                log.warning("worker housekeeping failed: %s", err)
            except Exception:  # a bug here must not stop the episodes that run
                log.exception("worker housekeeping crashed")

    async def _read_loop(self) -> None:
        while True:
            free = await self._wait_for_room()
            block_ms = 100 if self._burst else 1000
            try:
                jobs = await self.jobs.read(self.config.consumer, free, block_ms=block_ms)
            except redis.RedisError as err:
                log.warning("reading jobs failed: %s", err)
                await asyncio.sleep(1)
                continue
            for job in jobs:
                await self._launch(job)
            if self._burst and not jobs and await self._drained():
                self.stop()
                return

    async def _drained(self) -> bool:
        """Burst mode's end, after a read found nothing new: nothing running, nothing whose
        lease lapsed to take over, and no seat past its deadline."""
        if not self.running:
            await self._sweep()
            if await self._expire_seats():
                return False
        return not self.running

    async def _expire_seats(self) -> int:
        """Apply the timeout policy of seats past their deadline (any worker may: each is
        applied once); the episodes it queues again come back as jobs."""
        return await self.seats.expire_due()

    def episode_limit(self) -> int:
        """Episodes mostly wait on their model, so a worker runs about twice as many as its
        models take calls at once (their adaptive limits, added up): each free call has an
        episode ready to make it, and a slow or rate-limited model draws no more jobs than it
        serves, which leaves them to other workers. A limit in slow start counts as what it
        reaches a round trip from now (twice itself), so that the episodes to fill it are
        running when it does: a batch of short episodes is not run in waves. Before any model
        is called, each counts as a new endpoint's. Never more than `concurrency`."""
        calls = self.llm.reach() or 2 * INITIAL
        return min(self.config.concurrency, 2 * calls + EPISODE_HEADROOM)

    async def _wait_for_room(self) -> int:
        """The number of episodes this worker may start now, once it is at least one."""
        while (free := self.episode_limit() - len(self.running)) <= 0:
            self._room.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(ROOM_POLL):
                    await self._room.wait()
        return free

    async def _sweep(self) -> None:
        free = self.episode_limit() - len(self.running)
        if free <= 0:
            return
        idle_ms = int(self.config.lease_seconds * 1000)
        for job in await self.jobs.reclaim(self.config.consumer, idle_ms, free):
            if job.entry_id not in self.running:
                metrics.took_over()
                await self._launch(job)

    async def _renew(self) -> None:
        began = time.monotonic()
        await self.jobs.renew(self.config.consumer, list(self.running))
        self._renewed_at = began

    async def _durably[T](self, operation: Callable[[], Awaitable[T]]) -> T:
        """Run a Redis operation, retrying through an outage for as long as this worker's lease
        holds: a Redis restart shorter than the lease costs an episode nothing. Past the lease
        another worker may own the job, so it raises LeaseLost (its writes would be fenced)."""
        for delay in WRITE_RETRY.delays():
            try:
                return await operation()
            except RETRYABLE as err:
                deadline = self._renewed_at + self.config.lease_seconds
                if time.monotonic() + delay > deadline:
                    raise LeaseLost(f"Redis unreachable past the lease: {err}") from err
                log.warning("Redis unreachable (%s); retrying in %.2f s", err, delay)
                await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    async def _watch(self) -> None:
        """Stop episodes that were cancelled or deleted, or that another worker now owns; tell
        the running ones that a pause or an injection waits (read before a turn only then)."""
        started = [
            i for i in self.running.values() if i.attempt and not i.settled and not i.task.done()
        ]
        states = await self.store.states([i.job.subject for i in started])
        controls = list(self.controls.items())
        asked = await self.control.requested([episode_id for episode_id, _ in controls])
        for (_, control), due in zip(controls, asked, strict=True):
            control.due = control.due or due
        for item, state in zip(started, states, strict=True):
            if item.settled or item.task.done():
                continue  # it finished while the states were read
            if state is None or state[0] not in ACTIVE or state[1] != item.attempt:
                item.task.cancel()
                log.info(
                    "stopping: the episode ended or moved on without this worker",
                    extra={
                        "episode": item.job.subject,
                        "attempt": item.attempt,
                        "worker": self.config.consumer,
                    },
                )

    async def _launch(self, job: Job) -> None:
        await self._wait_for_room()
        task = asyncio.create_task(self._run_job(job))
        self.running[job.entry_id] = Running(job=job, attempt=0, task=task)
        task.add_done_callback(lambda _: self._finished(job))

    def _finished(self, job: Job) -> None:
        self.running.pop(job.entry_id, None)
        self._room.set()

    async def _hand_back(self) -> None:
        """Cancel what runs and make its entries reclaimable at once (not acked: redelivered),
        each episode marked as handed back, so its next start is not counted as a loss."""
        items = list(self.running.values())
        for item in items:
            item.task.cancel()
        await asyncio.gather(*(item.task for item in items), return_exceptions=True)
        idle_ms = int(self.config.lease_seconds * 1000) + 1
        with contextlib.suppress(redis.RedisError):
            for item in items:
                if item.attempt and not item.settled:
                    await self.store.mark(
                        item.job.subject, item.attempt, {"handed_back": self.config.consumer}
                    )
            await self.jobs.release(self.config.consumer, [i.job.entry_id for i in items], idle_ms)

    async def _run_job(self, job: Job) -> None:
        handler = self.handlers[job.kind]
        with logs.about(**{handler.subject: job.subject}, worker=self.config.consumer):
            await self._deliver(job, handler)

    async def _deliver(self, job: Job, handler: Handler) -> None:
        done = False
        try:
            done = await handler.run(job)
        except asyncio.CancelledError:
            done = await handler.ended(job)
            if not done:
                raise
        except Fenced:
            done = await handler.ended(job)
        except (LeaseLost, redis.RedisError) as err:
            if isinstance(err, LeaseLost) or is_outage(err):
                # Not acked: the job is redelivered once its lease lapses and the episode resumes.
                log.warning("left the episode for redelivery: %s", err)
            else:  # Redis refused what was sent: another attempt would send the same
                log.error("Redis refused a write of the episode: %s", err)
                done = await handler.fail(job, f"Redis refused to store the episode: {err}")
        except Exception as err:
            log.exception("episode crashed")
            done = await handler.fail(job, crash_reason(err))
        finally:
            if done:
                if job.entry_id in self.running:
                    self.running[job.entry_id].settled = True
                with contextlib.suppress(redis.RedisError):
                    await self.jobs.ack(job.entry_id)

    async def _fail_job(self, job: Job, reason: str) -> bool:
        """End the episode FAILED with `reason`, if this worker's attempt still owns it; False
        when Redis could not be asked (the job is then left for redelivery, so the episode is
        not left RUNNING with no job)."""
        attempt = self.running[job.entry_id].attempt if job.entry_id in self.running else None
        try:
            await self.store.transition(
                job.subject,
                Status.FAILED,
                fence=attempt,
                reason=reason,
                fields={"error": reason, "finished_at": time.time()},
            )
        except redis.RedisError as err:
            log.warning("could not store the failure (%s); left for redelivery", err)
            return False
        return True

    async def _ended(self, job: Job) -> bool:
        """True when the episode ended without us (cancelled, deleted): the job is done."""
        state = await self.store.state(job.subject)
        return state is None or state[0].terminal

    async def _evaluate(self, job: Job) -> bool:
        await self.rejudger.run(job.subject, job.detail)
        return True

    async def _draft(self, job: Job) -> bool:
        await self.drafter.run(job.subject, int(job.detail))
        return True

    async def _run(self, job: Job) -> bool:
        """Run one delivery of an episode's job; True when it needs no further delivery."""
        episode_id = job.subject
        episode = await self._durably(lambda: get_or_none(EpisodeLog, episode_id))
        if episode is None or episode.status.terminal or episode.status.parked:
            return True  # a parked episode gets a new job when it goes on
        if episode.job is not None and episode.job != job.entry_id:
            return True  # an older job of an episode queued again since
        start = AttemptStart.of(episode, self.config.consumer)
        with tracing.attempt(
            episode.traceparent,
            episode_id,
            episode.attempt + 1,
            start.mode,
            start.reason,
            self.config.consumer,
        ):
            return await self._start(job, episode, start)

    async def _start(self, job: Job, episode: EpisodeLog, start: AttemptStart) -> bool:
        """Begin this delivery's attempt (or give the episode up), then play it."""
        episode_id = str(episode.pk)
        if start.losses >= self.config.max_attempts:
            given_up = await self._durably(lambda: self._give_up(episode, start.losses))
            if given_up.ok and given_up.status == Status.COMPLETED:
                await self._fork_arms(job, episode)
            elif given_up.ok:
                await self._top_up(episode)
            return True
        started = await self._durably(lambda: self._begin(episode_id, episode.attempt, start))
        if not started.ok:
            return started.status is None or started.status.terminal or started.status.parked
        mine = episode.attempt + 1
        self.running[job.entry_id].attempt = mine
        with logs.about(attempt=mine):
            return await self._attempt(job, episode, start, mine)

    async def _attempt(self, job: Job, episode: EpisodeLog, start: AttemptStart, mine: int) -> bool:
        episode_id = str(episode.pk)
        kept = len(episode.turns) if start.mode == "resume" else 0
        log.info(
            "attempt started%s", f": {start.reason}, {kept} turns kept" if start.reason else ""
        )
        spent = stored_usage(episode)  # earlier attempts' tokens: every attempt's calls count
        try:
            setup = await self._durably(lambda: load_setup(episode))
        except SetupError as err:
            await self._fail(episode, mine, str(err), GenerationStats(), spent)
            return True
        history = episode.turns if start.mode == "resume" else []
        try:
            played = await self._play(episode, mine, setup, history, spent)
        except HistoryMismatch as err:
            restart = AttemptStart(
                "restart", f"kept turns do not fit the episode ({err}); restarted"
            )
            restarted = await self._durably(lambda: self._begin(episode_id, mine, restart))
            if not restarted.ok:
                raise Fenced from err
            mine += 1
            self.running[job.entry_id].attempt = mine
            log.warning("restarted as attempt %d: %s", mine, err)
            played = await self._play(episode, mine, setup, [], spent)
        except EpisodeFailed as failed:
            await self._fail(episode, mine, failed.reason, failed.stats, spent)
            return True
        if played is None:
            return True
        parts = played.log_parts()
        unjudged = played.unjudged
        # A panel resumed with every run that scored kept: the prompt its progress stored.
        prompt = parts.rewards_prompt or ("" if unjudged else episode.rewards_prompt)
        fields = {
            "messages": parts.messages,
            "rewards": parts.rewards,
            "reasoning": parts.reasoning,
            "rewards_prompt": prompt,
            "judge_runs": [run.model_dump(mode="json") for run in played.runs],
            "judge_error": unjudged,
            "generation_stats": played.stats.model_dump(),
            **self._usage(spent, played.stats.usage),
            "finished_at": time.time(),
        }
        fields |= await self._durably(lambda: checked(episode, Status.COMPLETED, fields))
        finished = await self._transition(
            episode_id,
            Status.COMPLETED,
            mine,
            reason=None if unjudged is None else NOT_JUDGED + unjudged,
            fields=fields,
        )
        if not finished.ok:
            raise Fenced
        if unjudged is None:
            log.info("episode completed")
        else:
            log.warning("episode completed without scores: %s", unjudged)
        await self._fork_arms(job, episode)
        return True

    async def _fork_arms(self, job: Job, episode: EpisodeLog) -> None:
        """Fork the arms of an experiment's control episode that has just COMPLETED (its run is
        settled first: `_watch` stops no ended episode's task midway). What fails here is left
        to the experiment's next start, which forks what is due."""
        if job.entry_id in self.running:
            self.running[job.entry_id].settled = True
        try:
            await fork_arms(self.services, episode)
        except Exception:
            log.exception("forking the episode's experiment arms failed")
        await self._top_up(episode)

    async def _top_up_all(self) -> None:
        await top_up_all(self.services)

    async def _top_up(self, episode: EpisodeLog) -> None:
        """Queue what the ended episode's experiment lets through now, if it is paced (a budget
        or a precision: lifecycle/pacing.py). What fails here is left to its next start."""
        if not episode.experiment_id:
            return
        try:
            await top_up(self.services, episode.experiment_id)
        except Exception:
            log.exception("queuing more of the episode's experiment failed")

    async def _give_up(self, episode: EpisodeLog, losses: int) -> TransitionResult:
        """End an episode whose workers were lost `losses` times in a row without progress:
        FAILED, or, when its conversation was whole and only its judge was left, COMPLETED
        without scores (so it can be judged again)."""
        lost = f"worker lost {losses} times"
        fields: dict[str, Any] = {"finished_at": time.time(), "losses": losses}
        if episode.status == Status.EVALUATING:
            unjudged = f"{lost} while judging"
            rewards = [0.0] * len(episode.agents)
            return await self.store.transition(
                str(episode.pk),
                Status.COMPLETED,
                fence=episode.attempt,
                reason=NOT_JUDGED + unjudged,
                fields={**fields, "judge_error": unjudged, "rewards": rewards, "reasoning": ""},
            )
        return await self.store.transition(
            str(episode.pk),
            Status.FAILED,
            fence=episode.attempt,
            reason=lost,
            fields={**fields, "error": lost},
        )

    async def _begin(self, episode_id: str, attempt: int, start: AttemptStart) -> TransitionResult:
        return await self.store.transition(
            episode_id,
            Status.RUNNING,
            fence=attempt,
            attempt_mode=start.mode,
            owner=self.config.consumer,
            reason=start.reason,
            fields={
                "started_at": time.time(),
                "error": None,
                "handed_back": None,
                "losses": start.losses,
            },
        )

    async def _transition(
        self,
        episode_id: str,
        status: Status,
        attempt: int,
        *,
        fields: dict[str, Any],
        reason: str | None = None,
        waiting: Waiting | None = None,
    ) -> TransitionResult:
        """Move an episode this worker plays as `attempt` to `status`, through a Redis outage
        (`_durably`); fenced when another attempt has taken it over."""
        return await self._durably(
            lambda: self.store.transition(
                episode_id,
                status,
                fence=attempt,
                owner=self.config.consumer,
                reason=reason,
                waiting=waiting,
                fields=fields,
            )
        )

    def _usage(self, spent: Usage, attempt: Usage) -> dict[str, Any]:
        return usage_fields(merged(spent, attempt), self.llm.prices)

    async def _park(
        self, episode: EpisodeLog, attempt: int, suspended: Suspended, spent: Usage
    ) -> None:
        """Store a suspended episode WAITING for its human seats (until their deadline) or
        PAUSED; its job ends here, and it holds nothing of this worker's any more."""
        paused = suspended.reason == "paused"
        fields = {"messages": suspended.messages, **self._usage(spent, suspended.stats.usage)}
        if paused:
            fields["pause_at"] = None  # a step's pause is kept while it waits on a person
        deadline = time.time() + episode.seat_deadline_seconds
        waiting = (
            None
            if paused
            else Waiting(turn=suspended.turn, seats=suspended.seats, deadline=deadline)
        )
        moved = await self._transition(
            str(episode.pk),
            Status.PAUSED if paused else Status.WAITING,
            attempt,
            reason="paused" if paused else None,
            waiting=waiting,
            fields=fields,
        )
        if not moved.ok:
            raise Fenced
        log.info("parked %s at turn %d", moved.status, suspended.turn)

    async def _play(
        self,
        episode: EpisodeLog,
        attempt: int,
        setup: EpisodeSetup,
        history: list[StoredTurn],
        spent: Usage,
    ) -> Played | None:
        """Play the episode, storing each new turn (with the tokens spent so far), the move
        to EVALUATING and each judge run as it goes; None when it failed (and was stored as
        FAILED) or was parked (WAITING for a person, or PAUSED). A resumed episode keeps the
        judge runs its earlier attempt stored (a restarted one has none)."""
        episode_id = str(episode.pk)
        control = self.control.of_attempt(episode, attempt)
        self.controls[episode_id] = control
        judged = episode.judge_runs if history else []
        conversation = GenerationStats()
        turns = metrics.TurnClock()

        async def on_turn(event: TurnEvent) -> None:
            turns.lap(event.turn.turn)
            turn = event.turn.model_dump(mode="json", exclude_none=True)  # no phase: no game
            progress = event.turn.turn + 1
            usage = self._usage(spent, event.usage)
            stored = await self._durably(
                lambda: self.store.append_turn(
                    episode_id, attempt, turn, progress, event.messages, usage
                )
            )
            if stored is None:
                raise Fenced

        async def on_judging(transcript: Transcript) -> None:
            nonlocal conversation
            conversation = transcript.stats
            moved = await self._transition(
                episode_id,
                Status.EVALUATING,
                attempt,
                fields={
                    "messages": transcript.messages,
                    "progress": transcript.turns,
                    "termination_reason": transcript.termination_reason,
                    **self._usage(spent, transcript.stats.usage),
                },
            )
            if not moved.ok:
                raise Fenced

        async def on_runs(progress: PanelProgress) -> None:
            fields = {
                "judge_runs": [run.model_dump(mode="json") for run in progress.runs],
                **self._usage(spent, merged(conversation.usage, progress.stats.usage)),
            }
            if progress.rewards_prompt:
                fields["rewards_prompt"] = progress.rewards_prompt
            if not await self._durably(lambda: self.store.mark(episode_id, attempt, fields)):
                raise Fenced

        source: AnswerSource | None = None
        if episode.replay_of is not None:
            replayed = episode.replay_of
            source = await self._durably(lambda: replay_source(self.client, replayed))
        elif episode.cache:
            source = CacheSource(self.client)
        try:
            with recording(episode_id, attempt, source):
                return await play(
                    setup, self.llm, on_turn, on_judging, history, control, judged, on_runs
                )
        except EpisodeSuspended as suspended:
            await self._park(episode, attempt, suspended.state, spent)
            return None
        except EpisodeFailed as failed:
            await self._fail(episode, attempt, failed.reason, failed.stats, spent)
            return None
        finally:
            if self.controls.get(episode_id) is control:
                del self.controls[episode_id]

    async def _fail(
        self, episode: EpisodeLog, attempt: int, reason: str, stats: GenerationStats, spent: Usage
    ) -> None:
        log.info("episode failed: %s", reason)
        fields = {
            "error": reason,
            "generation_stats": stats.model_dump(),
            **self._usage(spent, stats.usage),
            "finished_at": time.time(),
        }
        fields |= await self._durably(lambda: checked(episode, Status.FAILED, fields))
        await self._transition(
            str(episode.pk), Status.FAILED, attempt, reason=reason, fields=fields
        )
        await self._top_up(episode)


PACE_SECONDS = 5.0
"""How often a worker tops up every running paced experiment (lifecycle/pacing.py), in case
one of its episodes ended where no worker did it (a worker that died, a cancel by hand)."""
LEDGER_SWEEP_SECONDS = 60.0
"""How often a worker deletes a batch of ledgers past the retention window."""


class _Stop(Exception):
    pass


@contextlib.asynccontextmanager
async def running_worker(worker: Worker) -> AsyncIterator[Worker]:
    """The worker running in the background for the duration of the block."""
    task = asyncio.create_task(worker.run())
    try:
        yield worker
    finally:
        worker.stop()
        await task


async def serve_worker(settings: RunSettings, stop: asyncio.Event) -> None:
    """`parley worker`: a worker alone, until `stop` is set."""
    async with (
        open_services(settings, seed_if_empty=False) as services,
        running_worker(Worker(services, WorkerConfig.from_settings(settings))),
    ):
        await stop.wait()
