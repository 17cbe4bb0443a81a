"""Subscriptions that share a document and variables share each event's execution and frame
(graph/fanout.py), over real websockets against a real server and a real Redis."""

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio as redis
import websockets
from starlette.applications import Starlette
from websockets.asyncio.client import ClientConnection

from bench.support.episodes import queued
from bench.support.processes import api_process, parley_env
from parley.graph.context import Context
from parley.graph.errors import client_errors
from parley.graph.fanout import Fanout, Subscribe, next_prefix
from parley.graph.schema import Limits, build_schema, validation_rules
from parley.graph.subscription import event_content, shared_event
from parley.lifecycle.services import Services
from parley.storage.episode_store import EpisodeStore
from parley.storage.models import EpisodeStatus
from tests.support.server import TRANSPORT_WS, init, send, serve_app, socket, ws_url

EVENTS = """subscription($id: ID!) {
  episodeEvents(id: $id) { kind sequence status cursor turn { argument } }
}"""
KINDS = "subscription($id: ID!) { episodeEvents(id: $id) { kind sequence } }"
TURN = {"turn": 0, "agent_index": 0, "agent_name": "A B", "action_type": "speak", "argument": "x"}
WAIT = 10.0


@pytest.fixture(scope="module")
async def app(
    redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[str, Starlette]]:
    async with serve_app(redis_url, tmp_path_factory.mktemp("fanout")) as served:
        yield served


@pytest.fixture
def store(redis_client: redis.Redis) -> EpisodeStore:
    return EpisodeStore(redis_client)


async def metrics(url: str) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=url, timeout=WAIT) as http:
        found: dict[str, Any] = (await http.get("/metrics")).json()
    return found


async def run_to_the_end(store: EpisodeStore, pk: str, turns: int) -> int:
    """RUNNING, `turns` turns, EVALUATING and COMPLETED; how many events that published."""
    await store.transition(pk, EpisodeStatus.RUNNING, fence=0, attempt_mode="restart")
    for turn in range(turns):
        await store.append_turn(
            pk, 1, {**TURN, "turn": turn, "argument": f"line {turn}"}, turn + 1, []
        )
    await store.transition(pk, EpisodeStatus.EVALUATING, fence=1)
    await store.transition(pk, EpisodeStatus.COMPLETED, fence=1)
    return turns + 3


async def subscribed(
    stack: AsyncExitStack, url: str, operation_id: str, query: str, variables: dict[str, Any]
) -> ClientConnection:
    """A socket with one subscription whose SNAPSHOT has arrived (so it follows the hub)."""
    ws = await stack.enter_async_context(socket(url))
    await init(ws)
    payload = {"query": query, "variables": variables}
    await send(ws, {"id": operation_id, "type": "subscribe", "payload": payload})
    snapshot = await frame(ws)
    assert json.loads(snapshot)["payload"]["data"]["episodeEvents"]["kind"] == "SNAPSHOT"
    return ws


async def frame(ws: ClientConnection) -> str:
    async with asyncio.timeout(WAIT):
        raw = await ws.recv()
    assert isinstance(raw, str)
    return raw


async def until_complete(ws: ClientConnection, operation_id: str) -> list[str]:
    """The raw `next` frames up to this operation's `complete`."""
    frames = []
    while (raw := await frame(ws)) != json.dumps(
        {"id": operation_id, "type": "complete"}, separators=(",", ":")
    ):
        frames.append(raw)
    return frames


def payload_of(raw: str, operation_id: str) -> str:
    """The payload of a `next` frame, checked to be exactly the frame this id must get."""
    prefix = next_prefix(operation_id)
    assert raw.startswith(prefix) and raw.endswith("}"), raw
    return raw[len(prefix) : -1]


async def test_subscribers_of_one_document_share_each_execution_and_frame(
    app: tuple[str, Starlette], redis_client: redis.Redis, store: EpisodeStore
) -> None:
    url, _ = app
    pk = await queued(redis_client, store)
    ids = [f"op-{i}" for i in range(5)]
    async with AsyncExitStack() as stack:
        sockets = [await subscribed(stack, url, i, EVENTS, {"id": pk}) for i in ids]
        before = await metrics(url)
        assert before["subscription_groups"] == 1
        published = await run_to_the_end(store, pk, turns=3)
        received = [await until_complete(ws, i) for ws, i in zip(sockets, ids, strict=True)]
    after = await metrics(url)

    payloads = [
        [payload_of(raw, i) for raw in frames] for frames, i in zip(received, ids, strict=True)
    ]
    assert all(p == payloads[0] for p in payloads)  # byte for byte, behind each one's own id
    events = [json.loads(p)["data"]["episodeEvents"] for p in payloads[0]]
    assert [e["sequence"] for e in events] == list(range(2, 2 + published))
    assert [e["cursor"] for e in events] == [str(e["sequence"]) for e in events]
    assert [e["turn"]["argument"] for e in events if e["kind"] == "TURN"] == [
        "line 0",
        "line 1",
        "line 2",
    ]
    assert events[-1]["status"] == "COMPLETED"
    # One execution per live event for all five subscribers.
    assert after["subscription_executions"] - before["subscription_executions"] == published
    assert after["subscription_groups"] == 0


async def test_other_selections_and_variables_get_their_own_execution(
    app: tuple[str, Starlette], redis_client: redis.Redis, store: EpisodeStore
) -> None:
    url, _ = app
    first, second = await queued(redis_client, store), await queued(redis_client, store)
    async with AsyncExitStack() as stack:
        same = [await subscribed(stack, url, f"same-{i}", EVENTS, {"id": first}) for i in range(2)]
        narrow = await subscribed(stack, url, "narrow", KINDS, {"id": first})
        other = await subscribed(stack, url, "other", EVENTS, {"id": second})
        before = await metrics(url)
        assert before["subscription_groups"] == 3
        published = await run_to_the_end(store, first, turns=1)
        published_second = await run_to_the_end(store, second, turns=2)
        same_frames = [await until_complete(ws, f"same-{i}") for i, ws in enumerate(same)]
        narrow_frames = await until_complete(narrow, "narrow")
        other_frames = await until_complete(other, "other")
    after = await metrics(url)

    assert [payload_of(raw, "same-0") for raw in same_frames[0]] == [
        payload_of(raw, "same-1") for raw in same_frames[1]
    ]
    narrow_events = [
        json.loads(payload_of(raw, "narrow"))["data"]["episodeEvents"] for raw in narrow_frames
    ]
    assert narrow_events == [
        {"kind": kind, "sequence": n}
        for n, kind in enumerate(["STATUS", "TURN", "STATUS", "STATUS"], start=2)
    ]
    other_events = [
        json.loads(payload_of(raw, "other"))["data"]["episodeEvents"] for raw in other_frames
    ]
    assert [e["kind"] for e in other_events] == ["STATUS", "TURN", "TURN", "STATUS", "STATUS"]
    executed = after["subscription_executions"] - before["subscription_executions"]
    assert executed == 2 * published + published_second  # the shared group, the narrow, the other


async def test_a_subscriber_leaving_mid_stream_does_not_disturb_the_others(
    app: tuple[str, Starlette], redis_client: redis.Redis, store: EpisodeStore
) -> None:
    url, starlette = app
    hub = starlette.state.services.hub
    pk = await queued(redis_client, store)
    async with AsyncExitStack() as stack:
        leaving = await subscribed(stack, url, "leaving", EVENTS, {"id": pk})
        staying = [await subscribed(stack, url, f"stay-{i}", EVENTS, {"id": pk}) for i in range(3)]
        counted = hub.subscriber_count
        await store.transition(pk, EpisodeStatus.RUNNING, fence=0, attempt_mode="restart")
        assert (
            json.loads(await frame(leaving))["payload"]["data"]["episodeEvents"]["status"]
            == "RUNNING"
        )
        await leaving.close()
        async with asyncio.timeout(WAIT):
            while hub.subscriber_count != counted - 1:  # noqa: ASYNC110 - counted by the hub
                await asyncio.sleep(0.02)
        for turn in range(2):
            await store.append_turn(pk, 1, {**TURN, "turn": turn}, turn + 1, [])
        await store.transition(pk, EpisodeStatus.EVALUATING, fence=1)
        await store.transition(pk, EpisodeStatus.COMPLETED, fence=1)
        received = [await until_complete(ws, f"stay-{i}") for i, ws in enumerate(staying)]
    for frames in received:
        events = [json.loads(raw)["payload"]["data"]["episodeEvents"] for raw in frames]
        assert [e["sequence"] for e in events] == list(range(2, 7))
        assert events[-1]["status"] == "COMPLETED"


async def test_a_slow_subscriber_overflows_resyncs_from_storage_and_misses_nothing(
    redis_client: redis.Redis, store: EpisodeStore, tmp_path: Path
) -> None:
    """Its hub queue overflows while its socket blocks (here: a `send` that waits), as before:
    it re-reads the stored events and gets every one, once, in order, while the subscriber
    beside it in the same group is served at once."""
    from parley.engine.llm import ModelRegistry

    services = Services.over(redis_client, ModelRegistry(None, tmp_path))
    services.hub.queue_size = 4
    await services.hub.start()
    limits = Limits()
    fanout = Fanout(
        build_schema(limits),
        validation_rules(limits),
        limits.max_tokens,
        shared_event,
        event_content,
        client_errors,
    )
    pk = await queued(redis_client, store)
    gate = asyncio.Event()
    frames: dict[str, list[dict[str, Any]]] = {"fast": [], "slow": []}

    def sender(
        name: str, wait: Callable[[], Awaitable[object]] | None
    ) -> Callable[[str], Awaitable[None]]:
        async def send_frame(text: str) -> None:
            if wait is not None and frames[name]:
                await wait()
            frames[name].append(json.loads(text)["payload"]["data"]["episodeEvents"])

        return send_frame

    def serve(name: str, wait: Callable[[], Awaitable[object]] | None) -> asyncio.Task[bool]:
        request = Subscribe(name, EVENTS, {"id": pk})
        context = Context(services=services)
        return asyncio.create_task(
            fanout.serve(request, context, lambda: context, sender(name, wait))
        )

    try:
        fast, slow = serve("fast", None), serve("slow", gate.wait)
        async with asyncio.timeout(WAIT):
            while services.hub.subscriber_count < 2 or not all(frames.values()):  # noqa: ASYNC110
                await asyncio.sleep(0.01)
        published = await run_to_the_end(store, pk, turns=8)  # more than the queue holds
        assert await asyncio.wait_for(fast, WAIT)
        assert len(frames["slow"]) == 1  # the snapshot; it is stuck sending the next one
        gate.set()
        assert await asyncio.wait_for(slow, WAIT)
    finally:
        await services.hub.stop()
    everything = list(range(1, 2 + published))
    assert [e["sequence"] for e in frames["fast"]] == everything
    assert [e["sequence"] for e in frames["slow"]] == everything
    assert frames["slow"] == frames["fast"]
    # What it re-read from storage are new objects of the same content: mostly not executed
    # again (22 executions without that; an event whose stored time differs in its last
    # digits from the published one is executed for it alone).
    assert fanout.executions < 1 + published + published // 2


@pytest.mark.parametrize("deflate", [True, False])
async def test_permessage_deflate_can_be_turned_off(
    deflate: bool, redis_url: str, redis_client: redis.Redis, store: EpisodeStore, tmp_path: Path
) -> None:
    """A real `parley serve` with the setting either way; a websockets client offering
    compression gets it only when it is on, and its subscription works both ways."""
    env = parley_env(redis_url, tmp_path / "data", ws_per_message_deflate=str(deflate).lower())
    pk = await queued(redis_client, store)
    with api_process(env, tmp_path / "api.log", "--no-worker") as api:
        async with websockets.connect(
            ws_url(api.url), subprotocols=[TRANSPORT_WS], compression="deflate", open_timeout=WAIT
        ) as ws:
            assert ws.response is not None
            extensions = ws.response.headers.get("Sec-WebSocket-Extensions", "")
            assert ("permessage-deflate" in extensions) is deflate
            await init(ws)
            payload = {"query": EVENTS, "variables": {"id": pk}}
            await send(ws, {"id": "1", "type": "subscribe", "payload": payload})
            assert (
                json.loads(await frame(ws))["payload"]["data"]["episodeEvents"]["kind"]
                == "SNAPSHOT"
            )
            published = await run_to_the_end(store, pk, turns=1)
            frames = await until_complete(ws, "1")
    assert len(frames) == published


async def test_a_stream_that_raises_ends_with_its_coded_error_then_complete(
    app: tuple[str, Starlette],
) -> None:
    url, _ = app
    async with socket(url) as ws:
        await init(ws)
        payload = {"query": EVENTS, "variables": {"id": "no-such-episode"}}
        await send(ws, {"id": "e", "type": "subscribe", "payload": payload})
        frames = await until_complete(ws, "e")
    assert [json.loads(payload_of(raw, "e")) for raw in frames] == [
        {
            "data": None,
            "errors": [
                {
                    "message": "no episode with id 'no-such-episode'",
                    "extensions": {"code": "BAD_USER_INPUT"},
                }
            ],
        }
    ]


async def test_a_selection_that_reads_storage_is_also_executed_once_per_event(
    app: tuple[str, Starlette], redis_client: redis.Redis, store: EpisodeStore
) -> None:
    """`episode` is read from Redis when asked for: an execution that awaits, shared too."""
    url, _ = app
    query = "subscription($id: ID!) { episodeEvents(id: $id) { kind sequence episode { status } } }"
    pk = await queued(redis_client, store)
    ids = [f"reader-{i}" for i in range(3)]
    async with AsyncExitStack() as stack:
        sockets = [await subscribed(stack, url, i, query, {"id": pk}) for i in ids]
        before = await metrics(url)
        published = await run_to_the_end(store, pk, turns=1)
        received = [await until_complete(ws, i) for ws, i in zip(sockets, ids, strict=True)]
    after = await metrics(url)
    payloads = [
        [payload_of(raw, i) for raw in frames] for frames, i in zip(received, ids, strict=True)
    ]
    assert payloads[1] == payloads[0] and payloads[2] == payloads[0]
    events = [json.loads(p)["data"]["episodeEvents"] for p in payloads[0]]
    assert [e["sequence"] for e in events] == list(range(2, 2 + published))
    assert all(e["episode"]["status"] in {"RUNNING", "EVALUATING", "COMPLETED"} for e in events)
    assert after["subscription_executions"] - before["subscription_executions"] == published


def test_what_the_content_key_leaves_out_is_shown_by_no_field() -> None:
    """graph/subscription.py's `event_content` ignores an event's `tag` and `log_id` (they
    differ between a live event and its re-read copy); a field showing either would make
    streams share a payload they must not."""
    from parley.graph.episode_types import EpisodeEvent

    definition = EpisodeEvent.__strawberry_definition__  # type: ignore[attr-defined]
    shown = {field.python_name for field in definition.fields}
    assert "cursor" in shown and not shown & {"tag", "log_id"}
