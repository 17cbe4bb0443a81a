"""The experiment store's reads of its episodes' states, on a client fresh from the pool."""

import json
import uuid

from parley.storage.connection import open_client
from parley.storage.experiments import EpisodeState, ExperimentStore
from parley.storage.models import EpisodeLog, EpisodeStatus


async def test_statuses_are_read_on_a_client_that_has_run_no_json_command(redis_url: str) -> None:
    """A raw JSON.MGET answers text on a client whose JSON replies were never parsed before;
    the store must read statuses whatever the client ran earlier."""
    client = open_client(redis_url)
    pk = f"store-{uuid.uuid4().hex[:8]}"
    key = EpisodeLog.make_primary_key(pk)
    try:
        document = {"pk": pk, "status": "COMPLETED", "finished_at": 12.5, "progress": 4}
        await client.execute_command("JSON.SET", key, "$", json.dumps(document))  # type: ignore[no-untyped-call]
        found = await ExperimentStore(client).statuses([pk, f"{pk}-gone"])
        assert found == [EpisodeState(EpisodeStatus.COMPLETED, 12.5, False, 4), None]
    finally:
        await client.delete(key)
        await client.aclose()
