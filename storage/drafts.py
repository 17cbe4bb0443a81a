"""Saving a draft: its records and its relationships' pair keys, all or nothing
(storage/lua/save_draft.lua)."""

import json
from collections.abc import Sequence
from typing import Any, NamedTuple

import redis.asyncio as redis

from parley.storage.scripts import NoKeys, Script


class SaveArgs(NamedTuple):
    documents: str
    """Which values are JSON documents (a JSON list of booleans); the others are strings."""


SAVE_DRAFT = Script("save_draft", NoKeys, SaveArgs)


async def save_all(client: redis.Redis, writes: Sequence[tuple[str, str | dict[str, Any]]]) -> int:
    """Write each (key, JSON document or string) unless some key exists already: 0, or the
    1-based position of the first key that exists (then nothing is written)."""
    documents = [not isinstance(value, str) for _, value in writes]
    values = [value if isinstance(value, str) else json.dumps(value) for _, value in writes]
    taken = await SAVE_DRAFT(
        client,
        NoKeys(),
        SaveArgs(json.dumps(documents)),
        more_keys=[key for key, _ in writes],
        more_args=values,
    )
    return int(taken)
