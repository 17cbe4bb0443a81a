"""Following an experiment: its progress each time one of its episodes changes status.

Built on the process's event hub (one pub/sub connection): the stream listens to the status
events of every episode, keeps those of the experiment's episodes (and QUEUED ones with its tag,
which may be new slot fillers), lets a burst of them arrive, then measures the progress once.
"""

import asyncio
from collections.abc import AsyncGenerator

from lifecycle.experiments import Progress, get_experiment, measure
from lifecycle.services import Services
from lifecycle.transitions import EpisodeEvent
from storage import keys
from storage.models import EpisodeStatus

BURST = 0.05
"""Seconds to let further events arrive before measuring again."""


class UnknownExperiment(LookupError):
    """A stream was asked for an experiment that is not stored."""


def concerns(event: EpisodeEvent | None, tag: str, episodes: set[str]) -> bool:
    if event is None:
        return True  # events may have been lost: measure again
    if event.episode_id in episodes:
        return True
    return event.status == EpisodeStatus.QUEUED and (event.tag or "") == tag


async def follow_experiment(services: Services, pk: str) -> AsyncGenerator[Progress]:
    """The progress now, then each change of it; ends once every slot's episode has ended."""
    async with services.hub.subscribe(keys.EPISODES_CHANNEL) as subscriber:
        experiment = await get_experiment(services, pk)
        if experiment is None:
            raise UnknownExperiment(pk)
        current, episodes = await measure(services, experiment)
        yield current
        while not current.finished:
            event = await subscriber.next()
            if not concerns(event, experiment.tag, episodes):
                continue
            await asyncio.sleep(BURST)
            while not subscriber.queue.empty():
                subscriber.queue.get_nowait()
            experiment = await get_experiment(services, pk) or experiment
            measured, episodes = await measure(services, experiment)
            if measured != current:
                current = measured
                yield current
