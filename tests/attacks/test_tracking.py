"""storage/tracking.py: every document a read holds is one Redis tracks, so a write to any of
them by any client is pushed, naming its key (Redis's own invalidation messages, not assumed)."""

import json

import pytest
import redis.asyncio as redis

from bench.support.polling import until
from parley.storage.models import EpisodeLog
from parley.storage.tracking import TrackedDocuments

PATHS = [["$"], ["$.reasoning"], ["$.pk", "$.reasoning", "$.tag"]]
"""Whole documents, one path, several paths: each way a list reads what it holds."""


class Recording(TrackedDocuments):
    """Remembers every key Redis's invalidation pushes name, in the order they came."""

    def __init__(self, client: redis.Redis, prefixes: list[str]) -> None:
        super().__init__(client, prefixes)
        self.pushed: list[str] = []

    async def on_invalidation(self, keys: list[str] | None) -> None:
        self.pushed += keys if keys is not None else ["<everything>"]
        await super().on_invalidation(keys)


@pytest.mark.parametrize("paths", PATHS, ids=["whole", "one-path", "paths"])
async def test_a_write_to_each_key_a_read_holds_is_pushed_naming_that_key(
    redis_client: redis.Redis, other_writer: redis.Redis, paths: list[str]
) -> None:
    keys = [EpisodeLog.make_primary_key(f"attack-tracked-{i}") for i in range(12)]
    for i, key in enumerate(keys):
        doc = {"pk": f"attack-tracked-{i}", "reasoning": "before", "tag": "attack-tracked"}
        await other_writer.execute_command("JSON.SET", key, "$", json.dumps(doc))  # type: ignore[no-untyped-call]
    documents = Recording(redis_client, [EpisodeLog.make_key("")])
    async with documents.running():
        await until(lambda: documents.active)
        for round in range(2):
            assert await documents.read(keys, paths) is not None
            await documents.ask("PING")
            assert documents.pushed == []
            for key in keys:
                text = json.dumps(f"changed in round {round}")
                await other_writer.execute_command("JSON.SET", key, "$.reasoning", text)  # type: ignore[no-untyped-call]
            await documents.ask("PING")  # its reply comes after every push of those writes
            assert sorted(documents.pushed) == sorted(keys), "every key read is tracked"
            documents.pushed.clear()
    await other_writer.delete(*keys)
