"""Relationships as stored: one per pair of stored agents, deleted with their pair lock, and an
agent deleted with its relationships at once."""

import uuid

import redis.asyncio as redis

from parley.core.errors import ErrorCode, UserError
from parley.storage import keys, relationships
from parley.storage.models import AgentProfile, RelationshipProfile, RelationshipType
from parley.storage.vocabulary import RelationshipRefusal

TAG = "storage-relationships"


async def agents(count: int) -> list[str]:
    made = [
        AgentProfile(first_name=f"Rel{i}", last_name=uuid.uuid4().hex, tag=TAG)
        for i in range(count)
    ]
    for agent in made:
        await agent.save()
    return [str(agent.pk) for agent in made]


def between(first: str, second: str) -> RelationshipProfile:
    return RelationshipProfile(
        agent_1_id=first, agent_2_id=second, relationship=RelationshipType.FRIEND, tag=TAG
    )


async def test_one_relationship_per_pair_of_stored_agents(redis_client: redis.Redis) -> None:
    a, b, c = await agents(3)
    first = between(a, b)
    assert await relationships.write_new(redis_client, first) == (RelationshipRefusal.OK, "")
    assert await relationships.write_new(redis_client, between(b, a)) == (
        RelationshipRefusal.PAIR,
        str(first.pk),
    )
    gone = uuid.uuid4().hex
    assert await relationships.write_new(redis_client, between(a, gone)) == (
        RelationshipRefusal.AGENT,
        gone,
    )
    again = between(a, c)  # a free pair, under a taken id
    again.pk = first.pk
    assert (await relationships.write_new(redis_client, again))[0] == RelationshipRefusal.ID


async def test_a_deleted_relationship_frees_its_pair(redis_client: redis.Redis) -> None:
    a, b = await agents(2)
    first = between(a, b)
    await relationships.write_new(redis_client, first)
    await relationships.delete(redis_client, [first])
    assert not await redis_client.exists(RelationshipProfile.make_primary_key(str(first.pk)))
    assert not await redis_client.exists(keys.relationship_pair(a, b))
    assert await relationships.write_new(redis_client, between(a, b)) == (
        RelationshipRefusal.OK,
        "",
    )


async def test_an_agent_goes_with_the_relationships_it_is_given(redis_client: redis.Redis) -> None:
    a, b, c = await agents(3)
    ab, ac = between(a, b), between(a, c)
    for record in (ab, ac):
        await relationships.write_new(redis_client, record)

    async def linked() -> tuple[list[RelationshipProfile], list[UserError]]:
        return [ab, ac], []

    deleted, errors = await relationships.delete_agent(redis_client, a, linked)
    assert errors == [] and sorted(deleted) == sorted([str(ab.pk), str(ac.pk)])
    gone = [
        AgentProfile.make_primary_key(a),
        keys.relationships_made(a),
        RelationshipProfile.make_primary_key(str(ab.pk)),
        keys.relationship_pair(a, c),
    ]
    assert await redis_client.exists(*gone) == 0
    assert await redis_client.exists(AgentProfile.make_primary_key(b)) == 1
    _, errors = await relationships.delete_agent(redis_client, a, linked)
    assert [e.code for e in errors] == [ErrorCode.NOT_FOUND]


async def test_a_refused_deletion_deletes_nothing(redis_client: redis.Redis) -> None:
    (a,) = await agents(1)
    refusal = UserError(["input", "id"], "in use", ErrorCode.IN_USE)

    async def refused() -> tuple[list[RelationshipProfile], list[UserError]]:
        return [], [refusal]

    assert await relationships.delete_agent(redis_client, a, refused) == ([], [refusal])
    assert await redis_client.exists(AgentProfile.make_primary_key(a)) == 1


async def test_a_relationship_made_during_the_search_makes_it_search_again(
    redis_client: redis.Redis,
) -> None:
    a, b = await agents(2)
    late = between(a, b)
    searches: list[int] = []

    async def linked() -> tuple[list[RelationshipProfile], list[UserError]]:
        searches.append(1)
        if len(searches) == 1:  # made after the WATCH: EXEC fails, the search is made again
            await relationships.write_new(redis_client, late)
            return [], []
        return [late], []

    deleted, errors = await relationships.delete_agent(redis_client, a, linked)
    assert (deleted, errors, len(searches)) == ([str(late.pk)], [], 2)
    assert not await redis_client.exists(RelationshipProfile.make_primary_key(str(late.pk)))
