"""Records written whole: inserted never over a stored one, saved together, removed."""

import redis.asyncio as redis

from parley.core.errors import ErrorCode
from parley.storage.models import AgentProfile, EnvironmentProfile, Record
from parley.storage.records import exist, insert, insert_new, remove, save_all

TAG = "storage-records"


def scenario(text: str) -> EnvironmentProfile:
    return EnvironmentProfile(scenario=text, agent_goals=["g1", "g2"], tag=TAG)


async def test_a_taken_key_is_never_overwritten(redis_client: redis.Redis) -> None:
    stored, new = scenario("first"), scenario("new")
    assert await insert(stored) == []
    taken = scenario("second")
    taken.pk = stored.pk
    assert [e.code for e in await insert(taken)] == [ErrorCode.CONFLICT]
    assert await insert_new(redis_client, [taken, new]) == [False, True]
    assert (await EnvironmentProfile.get(stored.pk)).scenario == "first"
    assert (await EnvironmentProfile.get(new.pk)).scenario == "new"


async def test_records_saved_together_are_removed_together(redis_client: redis.Redis) -> None:
    people = [AgentProfile(first_name=f"Rec{i}", last_name="Ord", tag=TAG) for i in range(3)]
    await save_all(AgentProfile, people)
    refs: list[tuple[type[Record], str]] = [(AgentProfile, str(p.pk)) for p in people]
    assert await exist(redis_client, refs) == [True, True, True]
    await remove(AgentProfile, str(people[0].pk), str(people[2].pk))
    assert await exist(redis_client, refs) == [False, True, False]
    await remove(AgentProfile)  # nothing named: nothing removed
    assert await exist(redis_client, refs[1:2]) == [True]
