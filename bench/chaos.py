"""Chaos: APIs, workers, Redis and a faulty model together, killed on a schedule; then checks.

Run: python -m bench.chaos [--episodes 300] [--seconds 60] [--subscribers 40] [--faults F]

Everything runs on loopback and is stopped by pid before the script exits: an embedded Redis
(append-only file on), a fake OpenAI-compatible model that answers 8% HTTP 500, 3% 429, 4%
garbage and 1% never (`--faults` sets other chances, e.g. with "repeat=0.2": an agent's turn
answered with a line it says every time), two `parley serve --no-worker` and three `parley
worker` processes.
During the load (EPISODES starts spread over SECONDS, each with its own idempotency key, sent
again until one is answered):
- a worker is SIGKILLed every 10 s (and a new one started),
- Redis is SIGKILLed once and started again on its data,
- one API is SIGKILLed and started again.
SUBSCRIBERS follow `episodeUpdates(tag)` over websockets, spread over both APIs; a subscriber
whose connection breaks connects again (to either API) with the cursor of the last event it had.

Checks, after every episode has ended: every episode terminal; one episode per idempotency key
and every answer for a key the same episode; no turn stored twice; every subscriber received
every episode's terminal status, and no event twice; no HTTP 5xx; the APIs' memory flat; no
episode failed for a repeated line. Prints the attempts spent by cause, the model calls resuming
saved and the failed episodes by reason. Exit status 0 when every check passed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import re
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil
import websockets

from bench.common import rss_mib
from bench.support.fake_llm import fake_llm_process
from bench.support.processes import ApiProcess, Process, parley_env
from bench.support.simulation import make_world, start_input
from parley.storage.connection import open_client, prepare
from parley.storage.embedded import EmbeddedRedis, free_port
from parley.storage.models import EpisodeLog

FAULTS = "500=0.08,429=0.03,garbage=0.04,hang=0.01"
START = """
mutation($input: StartSimulationInput!) {
  startSimulation(input: $input) { episode { id } userErrors { message } }
}"""
UPDATES = """
subscription($tag: String, $after: String) {
  episodeUpdates(tag: $tag, after: $after) { kind cursor episodeId sequence status }
}"""
TERMINAL = {"COMPLETED", "FAILED", "CANCELLED"}


@dataclass
class Starts:
    ids: dict[str, set[str]] = field(default_factory=dict)
    """Per idempotency key, every episode id an answer named."""
    sends: int = 0
    retries: int = 0
    statuses: Counter[int] = field(default_factory=Counter)
    unavailable: int = 0


async def start_one(urls: list[str], one: dict[str, Any], key: str, starts: Starts) -> None:
    """Send the start until it is answered, to the APIs in turn, with the same key each time."""
    body = {"query": START, "variables": {"input": {**one, "idempotencyKey": key}}}
    deadline = time.monotonic() + 120
    attempt = 0
    async with httpx.AsyncClient(timeout=10) as http:
        while time.monotonic() < deadline:
            url = urls[(hash(key) + attempt) % len(urls)]
            attempt += 1
            starts.sends += 1
            try:
                response = await http.post(f"{url}/graphql", json=body)
            except httpx.HTTPError:
                starts.retries += 1
                await asyncio.sleep(0.5)
                continue
            starts.statuses[response.status_code] += 1
            result = response.json()
            if result.get("errors"):
                starts.unavailable += 1
                starts.retries += 1
                await asyncio.sleep(1)
                continue
            episode = result["data"]["startSimulation"]["episode"]
            starts.ids.setdefault(key, set()).add(episode["id"])
            return
    raise RuntimeError(f"start {key} never answered")


@dataclass(eq=False)
class Dashboard:
    """One episodeUpdates subscriber that resumes from its cursor after any break."""

    urls: list[str]
    tag: str
    first: int
    seen: dict[str, list[int]] = field(default_factory=dict)
    finals: dict[str, str] = field(default_factory=dict)
    cursor: str | None = None
    reconnects: int = 0
    expired: int = 0
    subscribed: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self) -> None:
        index = self.first
        while True:
            url = self.urls[index % len(self.urls)].replace("http://", "ws://") + "/graphql"
            try:
                await self._follow(url)
            except (OSError, websockets.WebSocketException, RuntimeError, TimeoutError):
                self.reconnects += 1
                index += 1
                await asyncio.sleep(0.5)

    async def _follow(self, url: str) -> None:
        async with websockets.connect(
            url, subprotocols=[websockets.Subprotocol("graphql-transport-ws")], open_timeout=5
        ) as ws:
            await ws.send(json.dumps({"type": "connection_init"}))
            async with asyncio.timeout(5):
                await ws.recv()
            variables = {"tag": self.tag, "after": self.cursor}
            payload = {"query": UPDATES, "variables": variables}
            await ws.send(json.dumps({"type": "subscribe", "id": "1", "payload": payload}))
            self.subscribed.set()
            async for raw in ws:
                message = json.loads(raw)
                if message["type"] == "ping":
                    await ws.send(json.dumps({"type": "pong"}))
                    continue
                if message["type"] != "next" or "errors" in message["payload"]:
                    raise RuntimeError(f"subscription ended: {message}")
                self.record(message["payload"]["data"]["episodeUpdates"])

    def record(self, event: dict[str, Any]) -> None:
        self.cursor = event["cursor"]
        if event["kind"] == "CURSOR_EXPIRED":
            self.expired += 1
            return
        if event["kind"] == "SNAPSHOT":
            return
        self.seen.setdefault(event["episodeId"], []).append(event["sequence"])
        if event["status"] in TERMINAL:
            self.finals[event["episodeId"]] = event["status"]


@dataclass
class Cluster:
    """The processes under test, by role, each restartable."""

    tmp: Path
    redis: EmbeddedRedis
    env: dict[str, str]
    apis: list[ApiProcess] = field(default_factory=list)
    workers: list[Process] = field(default_factory=list)
    incarnations: int = 0

    def log(self, name: str) -> Path:
        self.incarnations += 1
        return self.tmp / f"{name}-{self.incarnations}.log"

    def start_worker(self) -> None:
        self.workers.append(
            Process(["worker", "--concurrency", "50"], self.env, self.log("worker"))
        )

    def kill_worker(self, index: int) -> None:
        self.workers.pop(index % len(self.workers)).kill()

    def restart_api(self, index: int) -> None:
        old = self.apis[index]
        old.kill()
        self.apis[index] = ApiProcess(self.env, self.log("api"), "--no-worker", port=old.port)

    async def kill_redis(self, down: float) -> None:
        assert self.redis.process is not None
        self.redis.process.kill()
        self.redis.process.wait()
        self.redis.process = None
        await asyncio.sleep(down)
        await self.redis.start(timeout=60)

    def stop(self) -> None:
        for process in [*self.apis, *self.workers]:
            process.stop()


async def schedule(cluster: Cluster, seconds: float, events: list[str]) -> None:
    began = time.monotonic()
    plan = [(10.0 * k, "worker") for k in range(1, int(seconds // 10) + 1)]
    plan += [(seconds * 0.45, "redis"), (seconds * 0.65, "api")]
    for at, what in sorted(plan):
        await asyncio.sleep(max(0.0, began + at - time.monotonic()))
        if what == "worker":
            cluster.kill_worker(random.randrange(len(cluster.workers)))
            cluster.start_worker()
        elif what == "redis":
            await cluster.kill_redis(down=1.0)
        else:
            await asyncio.to_thread(cluster.restart_api, 1)
        events.append(f"{time.monotonic() - began:5.1f} s: killed {what}")


async def load(urls: list[str], inputs: list[dict[str, Any]], seconds: float) -> Starts:
    starts = Starts()
    gap = seconds / len(inputs)
    tasks = []
    for i, one in enumerate(inputs):
        tasks.append(asyncio.create_task(start_one(urls, one, f"chaos-{i}", starts)))
        await asyncio.sleep(gap)
    await asyncio.gather(*tasks)
    return starts


async def all_ended(tag: str, count: int, timeout: float) -> list[EpisodeLog]:
    deadline = time.monotonic() + timeout
    while True:
        episodes = await EpisodeLog.find(EpisodeLog.tag == tag).all()
        if len(episodes) >= count and all(e.status.terminal for e in episodes):
            return list(episodes)
        if time.monotonic() > deadline:
            return list(episodes)
        await asyncio.sleep(1)


def causes(episodes: list[EpisodeLog]) -> tuple[Counter[str], int]:
    """Attempts by why they began, and the turns resumed attempts kept (model calls saved)."""
    found: Counter[str] = Counter()
    kept = 0
    for episode in episodes:
        for change in episode.status_history:
            if change.status != "RUNNING" or (change.attempt == 1 and change.reason is None):
                if change.status == "RUNNING":
                    found["first start"] += 1
                continue
            reason = change.reason or ""
            if "handed back" in reason:
                found["handed back by a stopping worker"] += 1
            elif "lease" in reason:
                found["worker lost (lease lapsed)"] += 1
            else:
                found[reason or "other"] += 1
            kept += change.resumed_from or 0
    return found, kept


REPEAT_REFUSED = "you said exactly that before"
"""What the re-ask of a repeated line says: an episode that failed with it failed for a repeat."""


def failures(episodes: list[EpisodeLog]) -> Counter[str]:
    """Failed episodes by reason, with the parts that differ between episodes (names, turn
    numbers, the model's answer) left out."""
    found: Counter[str] = Counter()
    for episode in episodes:
        if episode.status == "FAILED":
            reason = re.sub(r"answer was .*", "answer was ...", episode.error or "(none)")
            reason = re.sub(r"^.*? \(faulty\) produced", "<agent> produced", reason)
            found[re.sub(r"turn \d+", "turn N", reason)] += 1
    return found


async def chaos(episodes: int, seconds: float, subscribers: int, faults: str) -> bool:
    with tempfile.TemporaryDirectory(prefix="parley-chaos-") as name:
        tmp = Path(name)
        redis_server = EmbeddedRedis(tmp, port=free_port())
        url = await redis_server.start()
        client = open_client(url)
        await prepare(client)
        with fake_llm_process(free_port(), 0.2, faults) as (base, _):
            models = tmp / "models.json"
            entry = {"name": "faulty", "base_url": base, "model": "fake", "timeout": 2.0}
            models.write_text(json.dumps({"models": [{**entry, "max_concurrency": 200}]}))
            tag = f"chaos{uuid.uuid4().hex[:8]}"
            scenario, agents = await make_world(tag)
            env = parley_env(
                url, tmp / "data", seed="false", models_file=str(models), lease_seconds="5"
            )
            cluster = Cluster(tmp, redis_server, env)
            cluster.apis = [ApiProcess(env, cluster.log("api"), "--no-worker") for _ in range(2)]
            for _ in range(3):
                cluster.start_worker()
            urls = [api.url for api in cluster.apis]
            dashboards = [Dashboard(urls, tag, i) for i in range(subscribers)]
            following = [asyncio.create_task(d.run()) for d in dashboards]
            try:
                await asyncio.wait_for(
                    asyncio.gather(*(d.subscribed.wait() for d in dashboards)), 60
                )
                memory_before = [rss_mib(api.pid) for api in cluster.apis]
                one = start_input(scenario, agents, "faulty", maxTurns=6, tag=tag)
                events: list[str] = []
                chaos_task = asyncio.create_task(schedule(cluster, seconds, events))
                starts = await load(urls, [one] * episodes, seconds)
                await chaos_task
                stored = await all_ended(tag, episodes, timeout=300)
                await asyncio.sleep(5)  # the dashboards' last events
                memory_after = [rss_mib(api.pid) for api in cluster.apis]
            finally:
                for task in following:
                    task.cancel()
                cluster.stop()
                await client.aclose()
                await redis_server.stop()
    return report(episodes, starts, stored, dashboards, events, memory_before, memory_after)


def report(
    expected: int,
    starts: Starts,
    stored: list[EpisodeLog],
    dashboards: list[Dashboard],
    events: list[str],
    memory_before: list[float],
    memory_after: list[float],
) -> bool:
    by_status = Counter(str(e.status) for e in stored)
    keys_one_id = all(len(ids) == 1 for ids in starts.ids.values())
    terminal = all(e.status.terminal for e in stored)
    doubled = sum(len(e.turns) - len({(t.turn, t.agent_index) for t in e.turns}) for e in stored)
    ids = {str(e.pk) for e in stored}
    missing = [d for d in dashboards if {k for k in d.finals} != ids]
    repeated = sum(len(seqs) - len(set(seqs)) for d in dashboards for seqs in d.seen.values())
    server_errors = sum(n for code, n in starts.statuses.items() if code >= 500)
    found, kept = causes(stored)
    failed = failures(stored)
    for_a_repeat = sum(n for reason, n in failed.items() if REPEAT_REFUSED in reason)
    print("\n".join(events))
    print(
        f"starts: {expected} keys, {starts.sends} requests ({starts.retries} retried), "
        f"answers by HTTP status {dict(starts.statuses)}, UNAVAILABLE {starts.unavailable}"
    )
    print(
        f"episodes stored {len(stored)} (expected {expected}): {dict(by_status)}; all terminal: "
        f"{terminal}; one episode per key, the same on every retry: {keys_one_id}"
    )
    print(f"turns stored twice: {doubled}")
    print(
        f"attempts by cause: {dict(found)}; turns kept by resumed attempts (model calls "
        f"saved): {kept}"
    )
    print(
        f"dashboards: {len(dashboards)}, reconnects {sum(d.reconnects for d in dashboards)}, "
        f"expired cursors {sum(d.expired for d in dashboards)}, missing a terminal status "
        f"{len(missing)}, events received twice {repeated}"
    )
    print(f"API RSS MiB before {memory_before} after {memory_after}; HTTP 5xx {server_errors}")
    unjudged = sum(1 for e in stored if e.status == "COMPLETED" and e.judge_error)
    print(f"completed without scores (their judge failed): {unjudged}")
    print(f"failed episodes by reason ({sum(failed.values())}, for a repeat {for_a_repeat}):")
    for reason, n in failed.most_common():
        print(f"  {n} x {reason}")
    passed = (
        len(stored) == expected
        and terminal
        and keys_one_id
        and len(starts.ids) == expected
        and doubled == 0
        and not missing
        and repeated == 0
        and server_errors == 0
        and for_a_repeat == 0
    )
    print("RESULT: PASS" if passed else "RESULT: FAIL")
    return passed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--subscribers", type=int, default=40)
    parser.add_argument("--faults", default=FAULTS, help=f"the fake model's (default {FAULTS})")
    args = parser.parse_args()
    psutil.cpu_percent()
    with contextlib.suppress(KeyboardInterrupt):
        ok = asyncio.run(chaos(args.episodes, args.seconds, args.subscribers, args.faults))
        raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
