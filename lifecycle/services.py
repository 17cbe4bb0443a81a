"""Redis, reached one way: the object a process builds once in its lifespan and hands around.

`open_services` starts what the process needs (the embedded Redis when no URL is set, the
redis-om binding and indexes, the event hub, the model registry) and stops it again; the API puts
the result in Starlette's state and Strawberry's context, a worker takes it in its constructor.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from functools import cached_property

import redis.asyncio as redis

from parley.engine.llm import ModelRegistry
from parley.lifecycle.control import RunControl
from parley.lifecycle.follow import EventHub
from parley.lifecycle.kept_figures import KeptFigures
from parley.lifecycle.raters import Raters
from parley.lifecycle.seats import Seats
from parley.lifecycle.settings import RunSettings
from parley.lifecycle.studies import Studies
from parley.storage import seats as seat_writes
from parley.storage.episode_store import DEFAULT_RETENTION, EpisodeStore
from parley.storage.events_log import EventsLog
from parley.storage.jobs import JobQueue
from parley.storage.ledger import Ledger
from parley.storage.models import LISTED
from parley.storage.provider_limits import RedisAllowance
from parley.storage.runtime import redis_storage
from parley.storage.tracking import TrackedDocuments


@dataclass(frozen=True)
class Services:
    client: redis.Redis
    store: EpisodeStore
    jobs: JobQueue
    hub: EventHub
    log: EventsLog
    models: ModelRegistry
    ledger: Ledger | None = None
    """Where the models' calls in an episode's scope are recorded (none: not recorded)."""

    def __post_init__(self) -> None:
        if self.ledger is not None:
            self.models.record_calls(self.ledger)

    @cached_property
    def seats(self) -> Seats:
        """People's actions, seat claims and the deadline sweep (its scripts registered once)."""
        return Seats(self.client, self.store)

    @cached_property
    def figures(self) -> KeptFigures:
        """Agreement figures, kept while what they were computed from is unchanged."""
        return KeptFigures()

    @cached_property
    def studies(self) -> Studies:
        """Rating studies: making them, and what their researcher reads and does."""
        return Studies(self.client, self.figures)

    @cached_property
    def raters(self) -> Raters:
        """What a rater reads and writes through their link."""
        return Raters(self.studies)

    @cached_property
    def documents(self) -> TrackedDocuments:
        """The listed records' stored JSON, held while Redis says it is unchanged (storage/
        tracking.py); tracking only while a process runs it (the API does, a worker need not)."""
        return TrackedDocuments(self.client, [model.make_key("") for model in LISTED])

    @cached_property
    def control(self) -> RunControl:
        """Pause, step, resume and injections, and what a worker's engine is told each turn."""
        return RunControl(self.client, self.store)

    @classmethod
    def over(
        cls,
        client: redis.Redis,
        models: ModelRegistry,
        retention: float = DEFAULT_RETENTION,
        ledger_days: float = 0.0,
    ) -> Services:
        """The services over a prepared client (the hub is not started); with `ledger_days`,
        model calls are recorded and kept that many days."""
        jobs = JobQueue(client)
        store = EpisodeStore(client, retention, jobs.stream)
        ledger = Ledger(client, ledger_days) if ledger_days > 0 else None
        return cls(client, store, jobs, EventHub(client), EventsLog(client), models, ledger)


@contextlib.asynccontextmanager
async def open_services(settings: RunSettings, *, seed_if_empty: bool) -> AsyncIterator[Services]:
    async with contextlib.AsyncExitStack() as stack:
        client = await stack.enter_async_context(
            redis_storage(
                settings.redis_url,
                settings.data_dir,
                seed_if_empty=seed_if_empty,
                fsync=settings.redis_fsync,
                acks=settings.replica_acks(),
            )
        )
        registry = ModelRegistry(
            settings.models_file, settings.data_dir, allowance=RedisAllowance(client)
        )
        stack.push_async_callback(registry.aclose)
        services = Services.over(
            client,
            registry,
            settings.event_retention_seconds,
            settings.model_call_retention_days,
        )
        await services.jobs.ensure_group()
        await seat_writes.index_tokens(client)
        await services.hub.start()
        stack.push_async_callback(services.hub.stop)
        yield services
