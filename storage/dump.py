"""Opening a Redis database dump (`dump.rdb`, as Sotopia publishes its datasets).

The embedded Redis is started on a copy of the dump, kept under the data directory (the
original is only read); Parley's indexes are then built over the records found, and episodes
Sotopia wrote get the two fields Parley lists them by (status and creation time), so they show
up in filtered and sorted lists.
"""

import hashlib
import json
import re
import shutil
from pathlib import Path

import redis.asyncio as redis
from ulid import ULID

from parley.storage.models import EpisodeLog, EpisodeStatus

RDB_MAGIC = b"REDIS"
DUMPS = "dumps"
"""Where, under a data directory, the dumps opened there are kept (each a data directory)."""
LOAD_TIMEOUT = 900.0
"""Seconds the embedded Redis may take to load a dump (a published one holds ~15k records)."""


class DumpError(ValueError):
    """The file cannot be opened as a Redis dump."""


def ulid_time(pk: str) -> float:
    """When a record with a ULID primary key was made (as Sotopia's are); 0 for other ids."""
    try:
        return ULID.from_str(pk).timestamp
    except ValueError:
        return 0.0


def working_copy(dump: Path, data_dir: Path) -> Path:
    """The data directory of the embedded Redis serving `dump`, made with a copy of it on first
    use: `<data_dir>/dumps/<name>-<digest>`. Opening the same dump again reuses it (with what
    was added since)."""
    if not dump.is_file():
        raise DumpError(f"{dump} is not a file")
    with dump.open("rb") as file:
        if file.read(len(RDB_MAGIC)) != RDB_MAGIC:
            raise DumpError(f"{dump} is not a Redis dump (it does not start with 'REDIS')")
        file.seek(0)
        digest = hashlib.file_digest(file, "sha256").hexdigest()[:12]
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", dump.stem)[:40] or "dump"
    home = data_dir / DUMPS / f"{name}-{digest}"
    redis_dir = home / "redis"
    if not (redis_dir / "dump.rdb").exists() and not (redis_dir / "appendonlydir").exists():
        redis_dir.mkdir(parents=True, exist_ok=True)
        partial = redis_dir / "dump.rdb.partial"
        shutil.copyfile(dump, partial)
        partial.replace(redis_dir / "dump.rdb")
    return home


def opened_dumps(data_dir: Path) -> list[Path]:
    """The data directories of the dumps opened in `data_dir` (`working_copy`)."""
    return sorted(path for path in (data_dir / DUMPS).glob("*") if path.is_dir())


async def adopt_episodes(client: redis.Redis, batch: int = 1000) -> int:
    """Give each episode that lacks them a status (COMPLETED: Sotopia stores only finished
    ones) and a creation time (its ULID's); returns how many were changed."""
    prefix = EpisodeLog.make_key("")
    status = json.dumps(EpisodeStatus.COMPLETED.value)
    changed = 0
    keys: list[str] = []

    async def flush() -> int:
        async with client.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.execute_command("JSON.SET", key, "$.status", status, "NX")
                created = ulid_time(key.removeprefix(prefix))
                pipe.execute_command("JSON.SET", key, "$.created_at", json.dumps(created), "NX")
            results = await pipe.execute(raise_on_error=False)
        keys.clear()
        return sum(1 for r in results[::2] if r is True or r == "OK")

    async for key in client.scan_iter(match=f"{prefix}*", count=batch, _type="ReJSON-RL"):
        keys.append(key)
        if len(keys) >= batch:
            changed += await flush()
    if keys:
        changed += await flush()
    return changed
