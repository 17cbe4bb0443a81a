"""Model call lines sent to /import: a good one is written at its entry id and skipped when sent
again; hostile ones (a body that is not what its hash says, a hash that is not one, a body the
call does not name, a call of an episode not stored, a body neither given nor stored, a bad
entry id, an unknown field, a request hash that is not its body's, a call placed before its
ledger's last) are invalid lines with their reasons, and write nothing."""

import json
import uuid
from typing import Any

import httpx
import redis.asyncio as redis

from parley.engine.ledger import CallPurpose, CallScope, ModelCall
from parley.engine.usage import TokenCount
from parley.resolvers.model_calls import entries
from parley.storage import keys
from parley.storage.ledger import stored_call
from parley.storage.models import EpisodeLog, EpisodeStatus

JSON_LINES = {"content-type": "application/x-ndjson"}


async def stored_episode(client: redis.Redis) -> str:
    episode = EpisodeLog(environment="s", agents=["a", "b"], status=EpisodeStatus.COMPLETED)
    await client.json().set(
        EpisodeLog.make_primary_key(str(episode.pk)), "$", episode.model_dump(mode="json")
    )
    return str(episode.pk)


def call_line(episode_id: str, entry_id: str, text: str) -> dict[str, Any]:
    messages = [{"role": "system", "content": "shared"}, {"role": "user", "content": text}]
    call = ModelCall(
        scope=CallScope(episode_id, 1, CallPurpose.TURN, seat=0, turn=0),
        model="m",
        request={"model": "m", "messages": messages, "temperature": 0.7},
        answer="an answer",
        tokens=TokenCount(prompt_tokens=3, completion_tokens=2),
        latency_ms=1.5,
        attempts=1,
    )
    entry, bodies = stored_call(call, 1_700_000_000.0)
    given = {h: json.loads(t) for h, t in bodies.items()}
    return {
        "model_call_of": episode_id,
        "call_id": entry_id,
        **entry.model_dump(mode="json"),
        "bodies": given,
    }


async def send(api_url: str, lines: list[dict[str, Any]]) -> dict[str, Any]:
    body = "".join(json.dumps(line) + "\n" for line in lines)
    async with httpx.AsyncClient(base_url=api_url, timeout=30) as http:
        response = await http.post("/import", content=body, headers=JSON_LINES)
    assert response.status_code == 200, response.text
    report: dict[str, Any] = response.json()
    return report


async def test_call_lines_are_checked_whole_and_written_once(
    api_url: str, redis_client: redis.Redis
) -> None:
    pk = await stored_episode(redis_client)
    good = call_line(pk, "5-1", f"ask {uuid.uuid4().hex}")
    tampered = call_line(pk, "6-0", "tampered")
    first = next(iter(tampered["bodies"]))
    tampered["bodies"][first] = {"role": "system", "content": "something else"}
    stranger = call_line(pk, "6-1", "stranger")
    stranger["bodies"]["0" * 64] = {"role": "user", "content": "not named"}
    not_hex = call_line(pk, "6-2", "not hex")
    not_hex["messages"][0] = "xyz"
    orphan = call_line(f"missing-{uuid.uuid4().hex}", "1-0", "orphan")
    ungiven = call_line(pk, "7-0", f"ungiven {uuid.uuid4().hex}")
    ungiven["bodies"] = {}
    bad_id = call_line(pk, "8-0", "bad id")
    bad_id["call_id"] = "later"
    extra = {**call_line(pk, "8-1", "extra"), "surprise": 1}
    report = await send(
        api_url, [good, tampered, stranger, not_hex, orphan, ungiven, bad_id, extra]
    )
    reasons = {p["line"]: p["reason"] for p in report["problems"]}
    assert report["created"] == {"model_calls": 1} and report["invalid"] == 7, report
    assert {p["code"] for p in report["problems"]} == {"INVALID"}
    assert "does not match its hash" in reasons[2]
    assert "is not one the call refers to" in reasons[3]
    assert "is not a SHA-256" in reasons[4]
    assert "which is not stored" in reasons[5]
    assert "neither this line nor an earlier one gives" in reasons[6]
    assert "not a stream id" in reasons[7]
    assert "surprise" in reasons[8]
    written = await entries(redis_client, pk)
    assert [entry_id for entry_id, _ in written] == ["5-1"]
    assert not await redis_client.exists(keys.model_calls(orphan["model_call_of"]))
    again = await send(api_url, [good])
    assert again["skipped"] == {"model_calls": 1} and again["created"] == {}
    assert await redis_client.hget(keys.CALL_BODY_REFS, good["messages"][1]) == "1"


async def test_a_request_hash_that_is_not_the_bodys_cannot_plant_an_answer(
    api_url: str, redis_client: redis.Redis
) -> None:
    pk = await stored_episode(redis_client)
    real = call_line(pk, "3-0", f"a real question {uuid.uuid4().hex}")
    forged = call_line(pk, "3-1", f"another question {uuid.uuid4().hex}")
    forged["request"] = real["request"]  # what the cache and a replay find answers by
    forged["answer"] = "a planted answer"
    report = await send(api_url, [forged])
    assert report["invalid"] == 1 and report["created"] == {}, report
    assert "is not the hash of the body" in report["problems"][0]["reason"]
    assert await redis_client.hget(keys.CALL_ANSWERS, real["request"]) is None
    assert await entries(redis_client, pk) == []
    stored_bodies = call_line(pk, "3-2", stored_text := f"stored {uuid.uuid4().hex}")
    assert (await send(api_url, [stored_bodies]))["created"] == {"model_calls": 1}
    again = call_line(pk, "3-3", stored_text)  # its bodies stored already, none given
    again["bodies"], again["request"] = {}, real["request"]
    report = await send(api_url, [again])
    assert (
        report["invalid"] == 1 and "is not the hash of the body" in report["problems"][0]["reason"]
    )


async def test_a_call_placed_before_its_ledgers_last_is_refused_not_skipped(
    api_url: str, redis_client: redis.Redis
) -> None:
    pk = await stored_episode(redis_client)
    later = call_line(pk, "9-0", f"later {uuid.uuid4().hex}")
    earlier = call_line(pk, "4-0", f"earlier {uuid.uuid4().hex}")
    report = await send(api_url, [later, earlier, later])
    assert report["created"] == {"model_calls": 1} and report["skipped"] == {"model_calls": 1}
    assert report["invalid"] == 1, report
    (problem,) = report["problems"]
    assert problem["line"] == 2 and "comes before the last one" in problem["reason"]
    assert [entry_id for entry_id, _ in await entries(redis_client, pk)] == ["9-0"]
