"""What one JSON write to an episode costs Redis: each re-indexes the whole episode in every index
over it (Parley's episode index and the results index).

Run: python -m bench.bench_reindex [--writes 2000]

Writes a small field of a stored episode `--writes` times, then of a copy of it under a key no
index covers, then merges five fields at once into each, and prints Redis's own time per call
(INFO commandstats: the time inside the command, not the round trip).
"""

import json
from collections.abc import Callable
from typing import Annotated

import redis.asyncio as redis

from bench.common import bench_redis, run_main
from bench.support.episodes import queued_episode
from parley.storage import keys
from parley.storage.episode_store import EpisodeStore
from parley.storage.models import EpisodeLog

PLAIN = "bench:episode-copy"
FIELDS = {"finished_at": 1.0, "error": "x", "progress": 3, "rewards_prompt": "p", "reasoning": "r"}


async def per_call(
    client: redis.Redis, command: str, key: str, args: Callable[[int], list[str]], writes: int
) -> float:
    """Microseconds inside Redis per call of `command` on `key` (with `args(n)`, the nth)."""
    await client.config_resetstat()
    for n in range(writes):
        await client.execute_command(command, key, *args(n))  # type: ignore[no-untyped-call]
    stats = await client.info("commandstats")
    return float(stats[f"cmdstat_{command.lower()}"]["usec_per_call"])


async def main(writes: Annotated[int, "writes of each kind"] = 2000) -> None:
    async with bench_redis() as (_, _, client):
        episode = queued_episode("reindex")
        await EpisodeStore(client).create([episode], keys.JOBS)
        key = EpisodeLog.make_primary_key(str(episode.pk))
        await client.execute_command("JSON.SET", PLAIN, "$", episode.model_dump_json())  # type: ignore[no-untyped-call]
        merge = json.dumps(FIELDS)
        for name, target in (("indexed episode", key), ("plain copy", PLAIN)):
            one = await per_call(
                client, "JSON.SET", target, lambda n: ["$.finished_at", str(n)], writes
            )
            five = await per_call(client, "JSON.MERGE", target, lambda n: ["$", merge], writes)
            print(f"{name}: JSON.SET of one field {one:.0f} µs, JSON.MERGE of five {five:.0f} µs")


if __name__ == "__main__":
    run_main(main, __doc__)
