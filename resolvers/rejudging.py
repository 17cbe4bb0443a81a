"""Re-judging stored episodes: the record of a re-judging, and its evaluations' progress."""

import redis.asyncio as redis

from resolvers.errors import BadArgument
from storage import keys


async def check_exists(client: redis.Redis, rejudging_id: str | None) -> None:
    """Refuse results of a re-judging that does not exist (None: the original rewards)."""
    if rejudging_id is not None and not await client.exists(keys.rejudging(rejudging_id)):
        raise BadArgument(f"no re-judging with id {rejudging_id!r}")
