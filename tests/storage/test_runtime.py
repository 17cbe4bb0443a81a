"""Bringing storage up and down: an embedded Redis started and stopped with it, or a configured
one used as it is, with a warning when it does not sync each write as `always` asks."""

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis.asyncio as redis
from redis.exceptions import ConnectionError as RedisConnectionError

from parley.storage.models import MODELS
from parley.storage.runtime import redis_storage


@pytest.fixture(autouse=True)
def models_kept_on_the_session_redis() -> Iterator[None]:
    """`redis_storage` points every model at the Redis it opens (storage.connection.prepare);
    after each test they point at the session's again, so the records later modules save and
    find reach it, not a Redis stopped here."""
    bound = [(model, model._meta.database) for model in MODELS]
    yield
    for model, database in bound:
        model._meta.database = database


def files_in(folder: Path) -> list[Path]:
    return list(folder.iterdir())


async def test_an_embedded_redis_runs_while_storage_is_up(tmp_path: Path) -> None:
    async with redis_storage(None, tmp_path, fsync="always") as client:
        assert await client.ping()
        config = await client.config_get("append*")
        assert (config["appendonly"], config["appendfsync"]) == ("yes", "always")
        url = client.connection_pool.connection_kwargs
    assert files_in(tmp_path), "the embedded Redis keeps its data in the data directory"
    stopped = redis.Redis(host=url["host"], port=url["port"], password=url.get("password"))
    with pytest.raises(RedisConnectionError):
        await stopped.ping()
    await stopped.aclose()


async def test_a_configured_redis_not_syncing_each_write_is_warned_about(
    redis_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with redis_storage(redis_url, tmp_path, fsync="always") as client:
        synced = await client.config_get("appendfsync")
        assert synced["appendfsync"] != "always"
    [warning] = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "PARLEY_REDIS_FSYNC=always, but the Redis at" in warning.getMessage()
    assert files_in(tmp_path) == [], "no embedded Redis was started in the data directory"


async def test_a_configured_redis_under_the_default_is_not_warned_about(
    redis_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with redis_storage(redis_url, tmp_path) as client:
        assert await client.ping()
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
