"""An episode's model calls, a page at a time, their messages read back from their hashes.

The ledger is a Stream (storage/ledger.py): a call's cursor names its entry id, and the page
after it is the entries after that id, whatever was appended meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import redis.asyncio as redis

from parley.core.errors import BadArgument
from parley.engine.ledger import CallPurpose
from parley.resolvers.keyset import Keyset, SortKey, SortOrder
from parley.resolvers.pagination import Page, page_size
from parley.storage import keys
from parley.storage.events_log import log_position
from parley.storage.ledger import CALL_FIELD, StoredCall, read_bodies

CALLS = Keyset("model-calls", (SortKey("id", str, required=True),), SortOrder.ASCENDING)
"""An episode's calls, in the order they ended, each named by its ledger entry id."""


@dataclass(frozen=True)
class ResolvedCall:
    """One call of the ledger with the bodies it refers to."""

    id: str
    call: StoredCall
    bodies: dict[str, Any]

    @property
    def messages(self) -> list[Any]:
        """The messages as sent (None for a body no longer stored)."""
        return [self.bodies.get(h) for h in self.call.messages]

    @property
    def response_format(self) -> Any:
        return None if self.call.schema_hash is None else self.bodies.get(self.call.schema_hash)


def _after(cursor: str | None) -> str:
    if cursor is None:
        return "-"
    (entry_id,) = CALLS.position(cursor)
    try:
        log_position(str(entry_id))
    except ValueError:
        raise BadArgument(f"malformed cursor {cursor!r}") from None
    return f"({entry_id}"


def _matches(call: StoredCall, turn: int | None, purpose: CallPurpose | None) -> bool:
    return (turn is None or call.turn == turn) and (purpose is None or call.purpose == purpose)


async def entries(client: redis.Redis, episode_id: str, start: str = "-") -> list[tuple[str, str]]:
    """Every ledger entry of the episode from `start` on: (id, the call's JSON)."""
    raw: Any = await client.xrange(keys.model_calls(episode_id), min=start)
    return [(str(entry_id), fields[CALL_FIELD]) for entry_id, fields in raw]


async def model_calls(
    client: redis.Redis,
    episode_id: str,
    first: int | None = None,
    after: str | None = None,
    turn: int | None = None,
    purpose: CallPurpose | None = None,
) -> Page[ResolvedCall]:
    """A page of the episode's calls (those of `turn` and `purpose` when given) after the one
    `after` names, with the total of those matching."""
    limit = page_size(first)
    start = _after(after)
    if turn is not None and turn < 0:
        raise BadArgument(f"turn counts from 0, got {turn}")
    key = keys.model_calls(episode_id)
    if turn is None and purpose is None:
        async with client.pipeline(transaction=False) as pipe:
            pipe.xlen(key)
            pipe.xrange(key, min=start, count=limit + 1)
            total, raw = await pipe.execute()
        found = [(str(i), StoredCall.model_validate_json(f[CALL_FIELD])) for i, f in raw]
    else:
        every = [
            (i, StoredCall.model_validate_json(text))
            for i, text in await entries(client, episode_id)
        ]
        matching = [(i, c) for i, c in every if _matches(c, turn, purpose)]
        total = len(matching)
        if after is not None:
            mark = log_position(start[1:])
            matching = [(i, c) for i, c in matching if log_position(i) > mark]
        found = matching[: limit + 1]
    page = found[:limit]
    bodies = await read_bodies(client, [h for _, call in page for h in call.hashes()])
    items = [ResolvedCall(i, call, bodies) for i, call in page]
    positions = [(i,) for i, _ in page]
    return Page(items, list(positions), CALLS, int(total), len(found) > limit, after is not None)
