"""What a process starts and stops: storage, the event hub, the model registry, the worker."""

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from engine.llm import ModelRegistry
from engine.worker import Worker, WorkerConfig
from graph.context import Runtime
from graph.settings import Settings
from resolvers.simulations import Services
from storage.episodes import EpisodeStore
from storage.hub import EventHub
from storage.queue import JobQueue
from storage.runtime import redis_storage

log = logging.getLogger(__name__)


def worker_config(settings: Settings) -> WorkerConfig:
    return WorkerConfig(
        concurrency=settings.concurrency,
        lease_seconds=settings.lease_seconds,
        max_attempts=settings.max_attempts,
    )


@contextlib.asynccontextmanager
async def running_worker(worker: Worker) -> AsyncIterator[Worker]:
    task = asyncio.create_task(worker.run())
    try:
        yield worker
    finally:
        worker.stop()
        await task


@contextlib.asynccontextmanager
async def api_runtime(settings: Settings, *, with_worker: bool) -> AsyncIterator[Runtime]:
    async with contextlib.AsyncExitStack() as stack:
        client = await stack.enter_async_context(
            redis_storage(settings.redis_url, settings.data_dir, seed_if_empty=settings.seed)
        )
        registry = ModelRegistry(settings.models_file, settings.data_dir)
        stack.push_async_callback(registry.aclose)
        queue = JobQueue(client)
        await queue.ensure_group()
        hub = EventHub(client)
        await hub.start()
        stack.push_async_callback(hub.stop)
        if with_worker:
            await stack.enter_async_context(
                running_worker(Worker(client, registry, worker_config(settings)))
            )
        yield Runtime(
            services=Services(
                client=client, store=EpisodeStore(client), queue=queue, models=registry
            ),
            hub=hub,
            registry=registry,
        )


async def run_worker(settings: Settings, stop: asyncio.Event) -> None:
    """`parley worker`: a worker alone, until `stop` is set."""
    async with redis_storage(settings.redis_url, settings.data_dir) as client:
        registry = ModelRegistry(settings.models_file, settings.data_dir)
        try:
            async with running_worker(Worker(client, registry, worker_config(settings))):
                await stop.wait()
        finally:
            await registry.aclose()
