"""The events log: every status event, kept for a retention window, that a stream resuming from
a cursor reads what it missed from."""

import re
from typing import Any

import redis.asyncio as redis

from parley.storage import keys
from parley.storage.events import EpisodeEvent, parse_event

ENTRY_FIELD = "event"
"""The field of an events-log entry that holds its event's JSON."""

LOG_ID = re.compile(r"([0-9]+)(?:-([0-9]+))?")
LAST_ID_PART = 2**64 - 1
"""Each part of a stream id is an unsigned 64-bit number."""


def log_position(log_id: str) -> tuple[int, int]:
    """An events-log id ("<ms>-<n>", or "<ms>" for "<ms>-0") as a comparable pair. ValueError
    for anything else, as Redis would refuse it (other digits than 0-9, spaces, a part past 64
    bits) or for the last id there can be, after which nothing can be read."""
    match = LOG_ID.fullmatch(log_id)
    if match is None:
        raise ValueError(f"not a stream id: {log_id!r}")
    position = int(match[1]), int(match[2] or 0)
    if max(position) > LAST_ID_PART or position == (LAST_ID_PART, LAST_ID_PART):
        raise ValueError(f"not a stream id that entries can follow: {log_id!r}")
    return position


class EventsLog:
    """Reads the events log: what a stream resuming from a cursor missed."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    async def head(self) -> str:
        """The id of the newest entry ("0-0" when the log is empty)."""
        newest: Any = await self.client.xrevrange(keys.EVENTS_LOG, count=1)
        return str(newest[0][0]) if newest else "0-0"

    async def expired(self, after: str) -> bool:
        """Whether entries newer than `after` may have been trimmed away.

        Trimming removes the oldest entries; `after` came from the log, so if the oldest entry
        left is newer than it, `after` and what followed it may be gone.
        """
        try:
            info: Any = await self.client.xinfo_stream(keys.EVENTS_LOG)
        except redis.ResponseError:
            return False  # no log yet: nothing was ever trimmed
        if int(info["entries-added"]) == int(info["length"]):
            return False
        first = info.get("first-entry")
        oldest = str(first[0]) if first else str(info["last-generated-id"])
        return log_position(oldest) > log_position(after)

    async def since(self, after: str, page: int = 500) -> list[EpisodeEvent]:
        """Every logged status event after `after`, oldest first."""
        found: list[EpisodeEvent] = []
        start = f"({after}"
        while True:
            entries: Any = await self.client.xrange(keys.EVENTS_LOG, min=start, count=page)
            for entry_id, fields in entries:
                event = parse_event(fields[ENTRY_FIELD])
                found.append(event.model_copy(update={"log_id": str(entry_id)}))
            if len(entries) < page:
                return found
            start = f"({entries[-1][0]}"
