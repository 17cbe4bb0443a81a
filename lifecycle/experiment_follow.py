"""Following an experiment: its progress each time one of its episodes changes status.

Built on the process's event hub (one pub/sub connection): the stream listens to the status
events of every episode and keeps its tally of the experiment's episodes current from those of
its own; an event with the experiment's tag from an episode it does not know yet (a slot filled by
a start), or a possible loss of events, makes it read the whole state again. It lets a burst of
events arrive before it sends the progress once.
"""

import asyncio
import time
from collections.abc import AsyncGenerator
from functools import partial

from parley.lifecycle.experiments import Progress, Tally, get_experiment, tally
from parley.lifecycle.follow import Subscriber, patiently
from parley.lifecycle.services import Services
from parley.storage import keys
from parley.storage.events import NOT_JUDGED, EpisodeEvent, EventKind
from parley.storage.models import EpisodeStatus, Experiment

BURST = 0.05
"""Seconds to let further events arrive before sending the progress again."""
PACED_WAIT = 1.0


class UnknownExperiment(LookupError):
    """A stream was asked for an experiment that is not stored."""


def apply(event: EpisodeEvent | None, state: Tally, experiment_id: str) -> bool | None:
    """Update the tally from one event: True when it changed, None when the state must be read
    again, False when the event is not the experiment's."""
    if event is None:
        return None  # events may have been lost
    if event.type != EventKind.STATUS or event.status is None:
        return False
    if event.status.terminal and (state.paced or event.episode_id in state.controls):
        if state.paced and event.experiment_id != experiment_id:
            return False
        # what its arms wait for may have changed (lifecycle/experiment_arms.py), or what a
        # paced experiment queues, or whether it stopped (lifecycle/pacing.py)
        return None
    if event.episode_id in state.states:
        reason = event.reason or ""
        unjudged = event.status == EpisodeStatus.COMPLETED and reason.startswith(NOT_JUDGED)
        state.saw(event.episode_id, event.status, event.at, unjudged)
        return True
    return None if event.experiment_id == experiment_id else False


async def next_event(subscriber: Subscriber, state: Tally) -> EpisodeEvent | None:
    """The next event; for a paced experiment with nothing in flight, None after PACED_WAIT
    without one (read the state again: the worker that ended its last episode may have queued
    more, or stopped it, after the stream last read)."""
    idle = state.paced and not any(not s.terminal for s, _ in state.states.values())
    if not idle:
        return await subscriber.next()
    try:
        return await asyncio.wait_for(subscriber.next(), PACED_WAIT)
    except TimeoutError:
        return None


async def reread(services: Services, pk: str, known: Experiment) -> tuple[Experiment, Tally]:
    experiment = await get_experiment(services, pk) or known
    return experiment, await tally(services, experiment)


async def follow_experiment(services: Services, pk: str) -> AsyncGenerator[Progress]:
    """The progress now, then each change of it; ends once every slot's episode has ended."""
    async with services.hub.subscribe(keys.EPISODES_CHANNEL) as subscriber:
        found = await get_experiment(services, pk)
        if found is None:
            raise UnknownExperiment(pk)
        experiment = found
        state = await tally(services, experiment)
        current = state.progress(time.time())
        yield current
        while True:
            if current.finished:
                # the tally says so: make sure the stored state does too before ending
                experiment, state = await reread(services, pk, experiment)
                current = state.progress(time.time())
                if current.finished:
                    return
                yield current
            outcome = apply(await next_event(subscriber, state), state, pk)
            if outcome is False:
                continue
            await asyncio.sleep(BURST)
            while outcome is not None and not subscriber.queue.empty() and not subscriber.resync:
                outcome = apply(subscriber.queue.get_nowait(), state, pk)
            if outcome is None:
                while not subscriber.queue.empty():
                    subscriber.queue.get_nowait()
                subscriber.resync = False
                experiment, state = await patiently(partial(reread, services, pk, experiment))
            measured = state.progress(time.time())
            if measured != current:
                current = measured
                yield current
