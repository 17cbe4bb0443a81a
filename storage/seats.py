"""The writes of a person's seat: claiming it, acting in it, and a turn past its deadline, each
one script that checks the episode still waits for that seat (storage/lua/act.lua,
expire_seats.lua, claim_seat.lua); the keys its credential is found by, and its deadline."""

import json
from typing import Any, NamedTuple

import redis.asyncio as redis

from parley.storage import keys
from parley.storage.episode_store import LOG, EpisodeKeys, EpisodeStore
from parley.storage.models import EpisodeLog
from parley.storage.scripts import Script
from parley.storage.vocabulary import ActRefusal


class ActArgs(NamedTuple):
    seat: int
    turn: int
    token_hash: str
    now: str
    minid: str
    body: str
    triple: str
    job: str


class ExpireArgs(NamedTuple):
    turn: int
    now: str
    minid: str
    reason: str
    episode_id: str
    job: str


class ClaimKeys(NamedTuple):
    episode: str
    seat_token: str


class ClaimArgs(NamedTuple):
    seat: int
    token_hash: str
    entry: str


HUMAN = (*LOG, "human_turn")
ACT = Script("act", EpisodeKeys, ActArgs, HUMAN, acknowledged=True)
EXPIRE = Script("expire_seats", EpisodeKeys, ExpireArgs, HUMAN)
CLAIM = Script("claim_seat", ClaimKeys, ClaimArgs, ("json",), acknowledged=True)


async def act(
    store: EpisodeStore,
    episode_id: str,
    seat: int,
    turn: int,
    token_hash: str,
    now: float,
    body: str,
    triple: str,
) -> tuple[int | None, ActRefusal | None, str]:
    """Store a person's turn `turn` (`body`, its JSON numbered 0) for `seat`: (its sequence,
    None, ""), or (None, why not, the episode's status when it is not waiting)."""
    reply: list[Any] = await ACT(
        store.client,
        store.episode_keys(episode_id),
        ActArgs(seat, turn, token_hash, repr(now), store.log_floor(), body, triple,
                store.requeue(episode_id)),
    )  # fmt: skip
    if int(reply[0]) == 1:
        return int(reply[1]), None, ""
    return None, ActRefusal(reply[1]), str(reply[2]) if len(reply) > 2 else ""


async def expire(
    store: EpisodeStore,
    episode_id: str,
    turn: int,
    now: float,
    reason: str,
    left: list[tuple[int, str, str]],
) -> bool:
    """Apply the timeout policy to waiting turn `turn`, with each seat `left` as (seat, its
    leaving turn's JSON numbered 0, its message); False when the episode no longer waits."""
    args = ExpireArgs(turn, repr(now), store.log_floor(), reason, episode_id,
                      store.requeue(episode_id))  # fmt: skip
    more = [part for seat in left for part in seat]
    return bool(await EXPIRE(store.client, store.episode_keys(episode_id), args, more_args=more))


def seat_entry(episode_id: str, seat: int) -> str:
    """The value of a seat's `keys.seat_token` key (the creation script writes the same)."""
    return json.dumps([episode_id, seat])


async def claim(client: redis.Redis, episode_id: str, seat: int, token_hash: str) -> int:
    """Give an open seat its token's hash: 1, 0 when claimed already, -1 when the episode is
    gone, -2 when it has no such human seat."""
    done = await CLAIM(
        client,
        ClaimKeys(EpisodeLog.make_primary_key(episode_id), keys.seat_token(token_hash)),
        ClaimArgs(seat, token_hash, seat_entry(episode_id, seat)),
    )
    return int(done)


async def index_tokens(client: redis.Redis, batch: int = 1000) -> int:
    """Key the claimed seats of episodes stored before seat credentials were found by key
    (once per database, `keys.SEAT_TOKENS_INDEXED`); how many seats were keyed."""
    if await client.exists(keys.SEAT_TOKENS_INDEXED):
        return 0
    indexed = 0
    pending: list[str] = []

    async def flush() -> int:
        async with client.pipeline(transaction=False) as pipe:
            for key in pending:
                pipe.json().get(key, "$.human_seats")
            found = await pipe.execute(raise_on_error=False)
        entries: dict[str, str] = {}
        for key, seats in zip(pending, found, strict=True):
            for seat in seats[0] if isinstance(seats, list) and seats else []:
                if seat.get("token_hash"):
                    pk = key.removeprefix(EpisodeLog.make_primary_key(""))
                    entries[keys.seat_token(seat["token_hash"])] = seat_entry(pk, seat["seat"])
        if entries:
            await client.mset(entries)
        pending.clear()
        return len(entries)

    pattern = EpisodeLog.make_primary_key("*")
    async for key in client.scan_iter(match=pattern, count=batch, _type="ReJSON-RL"):
        pending.append(key)
        if len(pending) >= batch:
            indexed += await flush()
    if pending:
        indexed += await flush()
    await client.set(keys.SEAT_TOKENS_INDEXED, 1)
    return indexed


async def forget_deadline(client: redis.Redis, episode_id: str) -> None:
    """Drop the episode's turn deadline (`keys.DEADLINES`): it no longer waits for a person."""
    await client.zrem(keys.DEADLINES, episode_id)
