"""A graphql-transport-ws subscriber that records what it receives, for tests and benchmarks."""

import asyncio
import json
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import websockets


@dataclass(eq=False)
class Subscriber:
    """Follows one subscription over its own websocket until it completes, fails or is cancelled.

    `query` must select `kind`, `sequence` and `occurredAt` (and `episodeId` and `status` to have
    them recorded); `root` is the subscription field's name.
    """

    url: str
    query: str
    variables: dict[str, Any]
    root: str
    sequences: dict[str, list[int]] = field(default_factory=dict)
    """Per episode, the sequence numbers received, in arrival order (snapshots included)."""
    statuses: list[str] = field(default_factory=list)
    """Statuses of the events after the snapshot."""
    latencies: list[float] = field(default_factory=list)
    """Seconds from each event's time to its arrival (snapshots left out)."""
    received: int = 0
    snapshots: int = 0
    completed: bool = False
    error: str | None = None
    subscribed: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once the subscribe message is sent (or the connection failed)."""
    first_snapshot: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self) -> None:
        try:
            await self._run()
        except asyncio.CancelledError:
            raise
        except Exception as err:
            self.error = f"{type(err).__name__}: {err}"
        finally:
            self.subscribed.set()

    async def _run(self) -> None:
        async with websockets.connect(
            self.url,
            subprotocols=[websockets.Subprotocol("graphql-transport-ws")],
            max_queue=None,
            open_timeout=60,
            ping_interval=None,
        ) as ws:
            await ws.send(json.dumps({"type": "connection_init"}))
            ack = json.loads(await ws.recv())
            if ack.get("type") != "connection_ack":
                raise RuntimeError(f"no connection_ack: {ack}")
            payload = {"query": self.query, "variables": self.variables}
            await ws.send(json.dumps({"type": "subscribe", "id": "1", "payload": payload}))
            self.subscribed.set()
            async for raw in ws:
                arrived = time.time()
                message = json.loads(raw)
                if message["type"] == "ping":
                    await ws.send(json.dumps({"type": "pong"}))
                    continue
                if message["type"] == "complete":
                    self.completed = True
                    return
                if message["type"] != "next" or "errors" in message["payload"]:
                    raise RuntimeError(f"subscription ended: {message}")
                self.record(message["payload"]["data"][self.root], arrived)
            raise RuntimeError("connection closed by the server")

    def record(self, event: dict[str, Any], arrived: float) -> None:
        self.received += 1
        episode = str(event.get("episodeId", ""))
        self.sequences.setdefault(episode, []).append(event["sequence"])
        if event["kind"] == "SNAPSHOT":
            self.snapshots += 1
            self.first_snapshot.set()
            return
        if "status" in event:
            self.statuses.append(event["status"])
        sent = datetime.fromisoformat(event["occurredAt"]).timestamp()
        self.latencies.append(arrived - sent)
