"""What deleting an agent relies on (resolvers/agents.py): RediSearch indexes a JSON record in
the write that stores it, a script's included, so a search sent after that write has answered
finds it. Checked on the real server, many times over."""

import uuid

import redis.asyncio as redis

from parley.resolvers.relationships import relationships_of, write_relationship
from parley.storage.models import AgentProfile, RelationshipProfile, RelationshipType

ROUNDS = 200


async def test_a_relationship_written_is_found_by_the_next_search(
    redis_client: redis.Redis,
) -> None:
    tag = f"search-after-{uuid.uuid4().hex[:8]}"
    agent = AgentProfile(first_name="Found", last_name=tag)
    await agent.save()
    missed = []
    for n in range(ROUNDS):
        other = AgentProfile(first_name=f"Other{n}", last_name=tag)
        await other.save()
        record = RelationshipProfile(
            agent_1_id=str(agent.pk),
            agent_2_id=str(other.pk),
            relationship=RelationshipType.FRIEND,
            tag=tag,
        )
        assert await write_relationship(redis_client, record) is None
        found = len(await relationships_of(str(agent.pk)))
        if found != n + 1:
            missed.append((n, found))
    assert missed == []
