"""The writes of run control: a pause asked of a running episode, an environment message
injected, and the injections a turn delivers (storage/lua/request_pause.lua, inject.lua,
deliver_injections.lua)."""

import json
from typing import Any, NamedTuple

import redis.asyncio as redis

from parley.storage import keys
from parley.storage.episode_store import OneEpisode, TurnKeys, numbered
from parley.storage.models import EpisodeLog, StoredInjection
from parley.storage.scripts import Script
from parley.storage.vocabulary import PauseMode


class PauseArgs(NamedTuple):
    mode: str


class InjectArgs(NamedTuple):
    injection: str


class DeliverArgs(NamedTuple):
    attempt: int
    turn: int


REQUEST_PAUSE = Script("request_pause", OneEpisode, PauseArgs)
INJECT = Script("inject", TurnKeys, InjectArgs, ("json",))
DELIVER = Script("deliver_injections", OneEpisode, DeliverArgs, ("json",))


async def request_pause(client: redis.Redis, episode_id: str, mode: PauseMode) -> str:
    """Ask a running episode's worker to pause it; the episode's status ("" when gone)."""
    status = await REQUEST_PAUSE(
        client, OneEpisode(EpisodeLog.make_primary_key(episode_id)), PauseArgs(mode)
    )
    return str(status or "")


async def inject(
    client: redis.Redis, episode_id: str, injection: StoredInjection
) -> tuple[int | None, str]:
    """Store and publish an injection not yet given a turn: (its sequence, ""), or (None, the
    episode's status: "" when it is gone)."""
    data = injection.model_dump(mode="json", exclude={"sequence"})
    done, value = await INJECT(
        client,
        TurnKeys(EpisodeLog.make_primary_key(episode_id), keys.episode_channel(episode_id)),
        InjectArgs(numbered(data)),
    )
    return (int(value), "") if done else (None, str(value))


async def deliver(
    client: redis.Redis, episode_id: str, attempt: int, turn: int
) -> tuple[int, list[dict[str, Any]]] | None:
    """Number the injections not delivered yet with `turn`: (the pause turn, -1 for none, and
    the turn's injections); None when `attempt` no longer runs the episode."""
    reply: list[Any] = await DELIVER(
        client, OneEpisode(EpisodeLog.make_primary_key(episode_id)), DeliverArgs(attempt, turn)
    )
    if not int(reply[0]):
        return None
    return int(reply[1]), [json.loads(raw)[0] for raw in reply[2:]]
