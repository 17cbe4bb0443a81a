"""Saving a draft: every record and pair key, or nothing when one key is taken."""

import uuid

import redis.asyncio as redis

from parley.storage import drafts


def key() -> str:
    return f"parley:test-draft:{uuid.uuid4().hex}"


async def test_documents_and_strings_are_written_together(redis_client: redis.Redis) -> None:
    document, plain = (
        f"parley:test-draft:{uuid.uuid4().hex}",
        f"parley:test-draft:{uuid.uuid4().hex}",
    )
    assert await drafts.save_all(redis_client, [(document, {"a": [1]}), (plain, "x")]) == 0
    assert await redis_client.json().get(document) == {"a": [1]}
    assert await redis_client.get(plain) == "x"
    await redis_client.delete(document, plain)


async def test_a_taken_key_writes_nothing_and_is_named(redis_client: redis.Redis) -> None:
    new, taken = key(), key()
    await redis_client.set(taken, "before")
    assert await drafts.save_all(redis_client, [(new, {"a": 1}), (taken, "after")]) == 2
    assert await redis_client.exists(new) == 0
    assert await redis_client.get(taken) == "before"
    await redis_client.delete(taken)
