"""Re-judging stored episodes: whether a re-judging exists (storage/evaluations.py writes it)."""

import redis.asyncio as redis

from parley.core.errors import BadArgument
from parley.storage import keys
from parley.storage.records import storable


async def check_exists(client: redis.Redis, rejudging_id: str | None) -> None:
    """Refuse results of a re-judging that does not exist (None: the original rewards)."""
    if rejudging_id is None:
        return
    if not storable(rejudging_id) or not await client.exists(keys.rejudging(rejudging_id)):
        raise BadArgument(f"no re-judging with id {rejudging_id!r}")
