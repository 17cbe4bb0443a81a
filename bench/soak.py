"""Load and soak: websocket subscribers follow episodeUpdates while episodes start at a steady rate.

Run: python -m bench.soak --subscribers 200 --rate 20 --seconds 60
         [--delay 0.2] [--turns 4] [--workers 1] [--concurrency 200] [--drain 120] [--logs DIR]

Loopback only, bounded in count and time. Starts an embedded Redis, the fake LLM in its own
process (answering after --delay), one `parley serve --no-worker` and --workers
`parley worker --concurrency C` processes, and creates a scenario and two agents. It opens
SUBSCRIBERS graphql-transport-ws connections that each follow `episodeUpdates(tag: <run tag>)`
and waits until the API's hub counts all of them. Then it issues `startSimulation` (with the run
tag) RATE times a second for SECONDS seconds, open loop over HTTP: at most RATE * SECONDS starts,
none later than SECONDS + 10 s after the first. It then waits up to --drain seconds for every
started episode to be terminal and for the subscribers to catch up, and stops everything it
started, by pid, before it exits.

Every subscriber connected before the first start, so for every episode it must receive each
status change stored in the episode's history (a QUEUED event, then RUNNING, EVALUATING and
COMPLETED for a normal run), exactly once and in sequence order; the stored history is the
reference the received events are checked against. Request latency runs from a request's
scheduled send time to its response; delivery latency from an event's occurredAt to the
subscriber reading it. Both include this process's own lag (it shares the machine with the
servers). Memory is the resident set size of the API, worker and Redis processes (and of this
one), from psutil; a progress line with it and each process's CPU share goes to stderr every 5 s.

Exit status: 0 when every check passed; 1 when a check failed (lost, duplicated or reordered
events, request errors, failed episodes, a subscriber dropped); 2 when the drain did not finish
in time or the whole run exceeded its time cap.
"""

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import redis.asyncio as redis

from bench.common import bench_redis, cpu_seconds, percentile, rss_mib
from bench.support.fake_llm import fake_llm_process
from bench.support.processes import Process, api_process, parley_env, worker_process
from bench.support.simulation import START, make_world, start_input
from bench.support.subscriber import Subscriber
from parley.graph.cli import event_loop_factory
from parley.storage.embedded import free_port
from parley.storage.episode_store import EpisodeStore
from parley.storage.models import EpisodeLog

SUBSCRIBE = """
subscription($tag: String) {
  episodeUpdates(tag: $tag) { kind episodeId sequence status occurredAt }
}"""
START_GRACE = 10.0
"""No start is issued later than this many seconds past the planned end of the load."""
SETUP_LIMIT = 180.0
"""Seconds allowed for starting the processes and connecting the subscribers."""
CATCH_UP_MIN = 5.0
"""Seconds the subscribers get to catch up after the drain, even if the drain took all its time."""


@dataclass
class Starts:
    """What the startSimulation requests produced."""

    latencies: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)
    ids: list[str] = field(default_factory=list)
    issued: int = 0
    worst_lag: float = 0.0
    """Longest delay between a request's scheduled time and its actual send."""
    seconds: float = 0.0


async def start_one(http: httpx.AsyncClient, body: dict[str, Any], due: float, out: Starts) -> None:
    try:
        response = await http.post("/graphql", json=body)
    except httpx.HTTPError as err:
        out.errors[f"{type(err).__name__}"] += 1
        return
    out.latencies.append(time.perf_counter() - due)
    if response.status_code != 200:
        out.errors[f"HTTP {response.status_code}"] += 1
        return
    data = response.json()
    if data.get("errors"):
        out.errors[f"GraphQL error: {data['errors'][0].get('message', '')[:80]}"] += 1
        return
    payload = data["data"]["startSimulation"]
    if payload["userErrors"]:
        out.errors[f"userError: {payload['userErrors'][0]['message'][:80]}"] += 1
        return
    out.ids.append(payload["episode"]["id"])


async def issue_starts(
    api_url: str, body: dict[str, Any], rate: float, seconds: int, out: Starts
) -> None:
    """Open loop: request i is due at i / rate seconds, whether or not earlier ones answered."""
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
    async with httpx.AsyncClient(base_url=api_url, timeout=30, limits=limits) as http:
        tasks: list[asyncio.Task[None]] = []
        began = time.perf_counter()
        for i in range(int(rate * seconds)):
            due = began + i / rate
            wait = due - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
            now = time.perf_counter()
            if now - began > seconds + START_GRACE:
                break
            out.worst_lag = max(out.worst_lag, now - due)
            tasks.append(asyncio.create_task(start_one(http, body, due, out)))
            out.issued += 1
        await asyncio.gather(*tasks)
        out.seconds = time.perf_counter() - began


@dataclass
class Memory:
    """RSS (MiB) and CPU of the service processes, read every second, with named marks.

    Every 5 s a progress line goes to stderr: per process, RSS and the share of one core used
    since the previous line, and whatever `progress` reports about the load.
    """

    pids: dict[str, int]
    progress: Callable[[], str] = lambda: ""
    peak: dict[str, float] = field(default_factory=dict)
    marks: dict[str, dict[str, float]] = field(default_factory=dict)
    cpu_marks: dict[str, dict[str, float]] = field(default_factory=dict)
    times: dict[str, float] = field(default_factory=dict)

    def read(self) -> dict[str, float]:
        now = {name: rss_mib(pid) for name, pid in self.pids.items()}
        for name, value in now.items():
            self.peak[name] = max(self.peak.get(name, 0.0), value)
        return now

    def cpu(self) -> dict[str, float]:
        return {name: cpu_seconds(pid) for name, pid in self.pids.items()}

    def mark(self, label: str) -> None:
        self.marks[label] = self.read()
        self.cpu_marks[label] = self.cpu()
        self.times[label] = time.monotonic()

    async def run(self) -> None:
        began = time.monotonic()
        last, last_cpu = began, self.cpu()
        while True:
            await asyncio.sleep(1)
            rss = self.read()
            now = time.monotonic()
            if now - last < 5:
                continue
            cpu = self.cpu()
            shares = " ".join(
                f"{name} {rss[name]:.0f}MiB/{(cpu[name] - last_cpu[name]) / (now - last):.0%}"
                for name in self.pids
            )
            print(f"[{now - began:6.1f} s] {shares} {self.progress()}", file=sys.stderr)
            last, last_cpu = now, cpu


async def metrics(api_url: str) -> dict[str, Any]:
    """The API's live counters, or what went wrong asking for them."""
    try:
        async with httpx.AsyncClient(base_url=api_url, timeout=30) as http:
            found: dict[str, Any] = (await http.get("/metrics")).json()
    except httpx.HTTPError as err:
        return {"error": f"{type(err).__name__} {err}"}
    return found


async def wait_for_subscribers(api_url: str, clients: list[Subscriber], timeout: float) -> None:
    """Until every client sent its subscribe and the API's hub holds all of them."""
    deadline = time.monotonic() + timeout
    await asyncio.wait_for(asyncio.gather(*(c.subscribed.wait() for c in clients)), timeout)
    dropped = [c.error for c in clients if c.error]
    if dropped:
        raise RuntimeError(f"{len(dropped)} subscribers failed to connect, first: {dropped[0]}")
    while (await metrics(api_url)).get("subscribers", 0) < len(clients):
        if time.monotonic() > deadline:
            raise RuntimeError("the API's hub never counted every subscriber")
        await asyncio.sleep(0.2)
    await asyncio.sleep(1)  # the hub's first SUBSCRIBE to Redis is sent before it counts


async def index_uses(client: redis.Redis) -> int:
    """Queries served by the episodes' search index, this FT.INFO included."""
    info: Any = await client.execute_command(  # type: ignore[no-untyped-call]
        "FT.INFO", EpisodeLog.Meta.index_name
    )
    fields = info if isinstance(info, dict) else dict(zip(info[::2], info[1::2], strict=True))
    return int(fields.get("number_of_uses", 0))


@dataclass
class Searches:
    """Queries on the episodes' index since the load started, less this script's own.

    During the load only the API's episodeUpdates streams query that index, and only when they
    resync (lifecycle/follow.py `catch_up`); besides them, this script looks episodes up by
    tag and reads the counter (each FT.INFO counts as a use).
    """

    client: redis.Redis
    start: int = 0
    own: int = 0

    async def begin(self) -> None:
        self.start = await index_uses(self.client)

    async def read(self) -> int:
        self.own += 1
        return await index_uses(self.client)

    async def tagged_ids(self, tag: str) -> set[str]:
        """Every episode stored with the run tag (also those whose start request timed out)."""
        before = await self.read()
        found = await EpisodeLog.find(EpisodeLog.tag == tag).all()
        after = await self.read()
        self.own += after - before - 1
        return {str(episode.pk) for episode in found}

    async def others(self) -> int:
        return await self.read() - self.start - self.own


async def drain(
    ids: set[str], clients: list[Subscriber], tag: str, searches: Searches, deadline: float
) -> tuple[Counter[str], bool]:
    """Poll until every episode is terminal (True) or the deadline passes (False).

    `ids` grows with every episode a subscriber has heard of and, once all known ones are
    terminal, with every episode stored under the run tag (a start whose response timed out may
    still have queued one). Returns the count of each final status.
    """
    store = EpisodeStore(searches.client)
    while True:
        ids.update(pk for client in clients for pk in client.sequences)
        states = await store.states(sorted(ids))
        final = Counter("gone" if s is None else s[0].value for s in states)
        if all(s is None or s[0].terminal for s in states):
            more = await searches.tagged_ids(tag) - ids
            if not more:
                return final, True
            ids.update(more)
            continue
        if time.monotonic() > deadline:
            return final, False
        await asyncio.sleep(0.5)


class HealthProbe:
    """GET /healthz every 0.25 s from a thread of its own, so this process's event loop does not
    delay it: how long the API's event loop keeps a request that needs neither GraphQL nor Redis.
    """

    def __init__(self, api_url: str) -> None:
        self.api_url = api_url
        self.latencies: list[float] = []
        self.failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(70)

    def _run(self) -> None:
        with httpx.Client(base_url=self.api_url, timeout=60) as http:
            while not self._stop.is_set():
                began = time.perf_counter()
                try:
                    http.get("/healthz").raise_for_status()
                    self.latencies.append(time.perf_counter() - began)
                except httpx.HTTPError:
                    self.failures += 1
                self._stop.wait(0.25)


async def histories(client: redis.Redis, ids: list[str]) -> dict[str, list[tuple[int, str]]]:
    """Each episode's stored status changes as (sequence, status), in sequence order."""
    found: dict[str, list[tuple[int, str]]] = {}
    for first in range(0, len(ids), 500):
        chunk = ids[first : first + 500]
        async with client.pipeline(transaction=False) as pipe:
            for pk in chunk:
                pipe.execute_command(
                    "JSON.GET", EpisodeLog.make_primary_key(pk), "$.status_history"
                )
            replies: list[Any] = await pipe.execute()
        for pk, raw in zip(chunk, replies, strict=True):
            data = json.loads(raw) if isinstance(raw, str | bytes) else raw
            changes = data[0] if data else []
            found[pk] = sorted((c["sequence"], c["status"]) for c in changes)
    return found


async def catch_up(clients: list[Subscriber], expected: int, deadline: float) -> None:
    while time.monotonic() < deadline:
        if all(c.received >= expected or c.error for c in clients):
            return
        await asyncio.sleep(0.2)


@dataclass
class Delivery:
    expected: int = 0
    lost: int = 0
    duplicated: int = 0
    unexpected: int = 0
    reordered_streams: int = 0
    lost_by_status: Counter[str] = field(default_factory=Counter)
    subscribers_losing: int = 0


def check_delivery(
    clients: list[Subscriber], reference: dict[str, list[tuple[int, str]]]
) -> Delivery:
    result = Delivery()
    for client in clients:
        lost_before = result.lost
        for pk, changes in reference.items():
            got = client.sequences.get(pk, [])
            unique = set(got)
            result.expected += len(changes)
            for sequence, status in changes:
                if sequence not in unique:
                    result.lost += 1
                    result.lost_by_status[status] += 1
            result.duplicated += len(got) - len(unique)
            result.unexpected += len(unique - {s for s, _ in changes})
            if got != sorted(got):
                result.reordered_streams += 1
        result.unexpected += sum(
            len(seqs) for pk, seqs in client.sequences.items() if pk not in reference
        )
        if result.lost > lost_before:
            result.subscribers_losing += 1
    return result


def models_file(path: Path, base_url: str, max_concurrency: int) -> Path:
    model = {"name": "fake", "base_url": base_url, "model": "fake"}
    path.write_text(json.dumps({"models": [{**model, "max_concurrency": max_concurrency}]}))
    return path


def ms(values: list[float], q: float) -> str:
    return f"{percentile(values, q) * 1000:.1f} ms" if values else "-"


def log_tail(process: Process, lines: int = 15) -> str:
    return "\n".join(process.output().splitlines()[-lines:])


@dataclass
class Options:
    subscribers: int
    rate: float
    seconds: int
    delay: float
    turns: int
    workers: int
    concurrency: int
    drain: float
    logs: Path | None


async def soak(opts: Options) -> int:
    tag = f"soak{uuid.uuid4().hex[:10]}"
    async with bench_redis() as (redis_url, tmp, client):
        with (
            fake_llm_process(free_port(), opts.delay) as (base, _),
            contextlib.ExitStack() as stack,
        ):
            limit = 4 * opts.concurrency * opts.workers
            models = models_file(tmp / "models.json", base, limit)
            scenario, agents = await make_world(tag)
            env = parley_env(redis_url, tmp / "data", seed="false", models_file=str(models))
            api = stack.enter_context(api_process(env, tmp / "api.log", "--no-worker"))
            workers = [
                stack.enter_context(
                    worker_process(env, tmp / f"worker{i}.log", concurrency=opts.concurrency)
                )
                for i in range(opts.workers)
            ]
            redis_pid = int((tmp / "redis.pid").read_text())
            pids = {"api": api.pid, "redis": redis_pid}
            pids.update({f"worker{i}": w.pid for i, w in enumerate(workers)})
            pids["soak"] = os.getpid()
            memory = Memory(pids)
            sampler = asyncio.create_task(memory.run())
            ws_url = api.url.replace("http://", "ws://") + "/graphql"
            clients = [
                Subscriber(ws_url, SUBSCRIBE, {"tag": tag}, "episodeUpdates")
                for _ in range(opts.subscribers)
            ]
            tasks = [asyncio.create_task(c.run()) for c in clients]
            try:
                code = await run_load(
                    opts, tag, api.url, clients, tasks, memory, scenario, agents, client
                )
            finally:
                await close(tasks)
                sampler.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await sampler
            if opts.logs is not None:
                opts.logs.mkdir(parents=True, exist_ok=True)
                for process in (api, *workers):
                    shutil.copy(process.log, opts.logs / process.log.name)
            if code:
                for process in (api, *workers):
                    print(f"--- last lines of {process.log.name}\n{log_tail(process)}")
            return code


async def close(tasks: list[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


@dataclass
class Run:
    """Everything one run measured, for the report."""

    opts: Options
    connected: float
    starts: Starts
    ids: set[str]
    final: Counter[str]
    drained: bool
    api_searches: int
    """Episode index queries by the API during the load and drain: its resyncs."""
    drain_seconds: float
    caught_up: float
    expected_each: int
    delivery: Delivery
    clients: list[Subscriber]
    health: HealthProbe
    memory: Memory
    metrics: dict[str, dict[str, Any]]
    load: dict[str, float]


async def run_load(
    opts: Options,
    tag: str,
    api_url: str,
    clients: list[Subscriber],
    tasks: list[asyncio.Task[None]],
    memory: Memory,
    scenario: str,
    agents: list[str],
    client: redis.Redis,
) -> int:
    began = time.monotonic()
    await wait_for_subscribers(api_url, clients, SETUP_LIMIT)
    connected = time.monotonic() - began
    await asyncio.sleep(1)
    counters = {"before load": await metrics(api_url)}
    load = {"load start": os.getloadavg()[0]}
    health = HealthProbe(api_url)
    memory.mark("load start")
    health.start()

    one = start_input(scenario, agents, "fake", maxTurns=opts.turns, tag=tag)
    starts = Starts()

    def progress() -> str:
        counts = [c.received for c in clients]
        return (
            f"| starts {starts.issued} ok {len(starts.ids)} err {sum(starts.errors.values())} "
            f"| events per subscriber min {min(counts)} max {max(counts)} "
            f"| dropped {sum(1 for c in clients if c.error)}"
        )

    memory.progress = progress
    body = {"query": START, "variables": {"input": one}}
    searches = Searches(client)
    await searches.begin()
    try:
        await issue_starts(api_url, body, opts.rate, opts.seconds, starts)
        memory.mark("load end")
        load_ended = time.monotonic()
        deadline = load_ended + opts.drain
        ids = set(starts.ids)
        while True:
            final, drained = await drain(ids, clients, tag, searches, deadline)
            drain_seconds = time.monotonic() - load_ended
            reference = await histories(client, sorted(ids))
            expected_each = sum(len(changes) for changes in reference.values())
            drained_at = time.monotonic()
            await catch_up(clients, expected_each, max(deadline, drained_at + CATCH_UP_MIN))
            caught_up = time.monotonic() - drained_at
            heard = {pk for client in clients for pk in client.sequences} - ids
            if not heard or not drained:
                break
            if time.monotonic() > deadline:
                drained = False  # episodes were still being queued when time ran out
                break
            ids.update(heard)  # episodes queued after the check: drain those too
        api_searches = await searches.others()
        memory.mark("drained")
    finally:
        await asyncio.to_thread(health.stop)
    load["drained"] = os.getloadavg()[0]
    counters["after drain"] = await metrics(api_url)
    delivery = check_delivery(clients, reference)

    await close(tasks)
    await asyncio.sleep(2)
    memory.mark("closed")
    counters["subscribers closed"] = await metrics(api_url)
    run = Run(
        opts,
        connected,
        starts,
        ids,
        final,
        drained,
        api_searches,
        drain_seconds,
        caught_up,
        expected_each,
        delivery,
        clients,
        health,
        memory,
        counters,
        load,
    )
    return report(run)


def report(run: Run) -> int:
    """Print the figures; the exit status."""
    opts, starts, delivery, final = run.opts, run.starts, run.delivery, run.final
    planned = int(opts.rate * opts.seconds)
    print(
        f"{opts.subscribers} subscribers on episodeUpdates(tag), {opts.rate:g} starts/s for "
        f"{opts.seconds} s; fake LLM delay {opts.delay * 1000:.0f} ms, {opts.turns} turns, "
        f"{opts.workers} worker(s) x concurrency {opts.concurrency}"
    )
    print(
        f"machine: {os.cpu_count()} cores, 1-min load average {run.load['load start']:.2f} at "
        f"load start, {run.load['drained']:.2f} when drained"
    )
    print(f"subscribers connected and counted by the API's hub in {run.connected:.1f} s")
    print(
        f"requests made {starts.issued} of {planned} in {starts.seconds:.1f} s, "
        f"errors {sum(starts.errors.values())}"
        + "".join(f"\n  {n} x {kind}" for kind, n in starts.errors.most_common())
    )
    print(
        f"startSimulation latency (from its scheduled time): p50 {ms(starts.latencies, 50)}, "
        f"p99 {ms(starts.latencies, 99)}, max {ms(starts.latencies, 100)}; "
        f"worst send lag {starts.worst_lag * 1000:.1f} ms"
    )
    health = run.health.latencies
    print(
        f"GET /healthz meanwhile, from a separate thread: n={len(health)} p50 {ms(health, 50)}, "
        f"p99 {ms(health, 99)}, max {ms(health, 100)}, failed {run.health.failures}"
    )
    completed, failed = final.get("COMPLETED", 0), final.get("FAILED", 0)
    others = {k: v for k, v in final.items() if k not in ("COMPLETED", "FAILED")}
    print(
        f"episodes {len(run.ids)}: completed {completed}, failed {failed}"
        + (f", other {dict(others)}" if others else "")
        + f"; drain after the last start {'finished' if run.drained else 'DID NOT FINISH'}"
        f" in {run.drain_seconds:.1f} s"
    )
    lost = (
        f" {dict(delivery.lost_by_status)} on {delivery.subscribers_losing} subscribers"
        if delivery.lost
        else ""
    )
    dropped = [c.error for c in run.clients if c.error]
    print(
        f"status events expected {delivery.expected} ({run.expected_each} per subscriber), "
        f"lost {delivery.lost}{lost}, duplicated {delivery.duplicated}, "
        f"unexpected {delivery.unexpected}, out-of-order streams {delivery.reordered_streams}, "
        f"snapshots {sum(c.snapshots for c in run.clients)}, subscribers dropped {len(dropped)}"
    )
    if dropped:
        print(f"  first drop: {dropped[0]}")
    print(
        f"subscribers had every event {run.caught_up:.1f} s after the drain; "
        f"episode index searches by the API during the load and drain (only resyncs search): "
        f"{run.api_searches}"
    )
    latencies = [t for c in run.clients for t in c.latencies]
    print(
        f"event delivery latency (occurredAt to receipt): n={len(latencies)} "
        f"p50 {ms(latencies, 50)}, p99 {ms(latencies, 99)}, max {ms(latencies, 100)}"
    )
    report_memory(run.memory, len(run.ids))
    for label, counters in run.metrics.items():
        print(f"API /metrics {label}: {counters}")

    failures = []
    if starts.errors or starts.issued < planned:
        failures.append("request errors or missing requests")
    if delivery.lost or delivery.duplicated or delivery.unexpected or delivery.reordered_streams:
        failures.append("event delivery")
    if failed or others:
        failures.append("episodes not completed")
    if dropped:
        failures.append("subscribers dropped")
    if not run.drained:
        print("RESULT: FAIL (drain did not finish)")
        return 2
    if failures:
        print(f"RESULT: FAIL ({', '.join(failures)})")
        return 1
    print("RESULT: PASS")
    return 0


def report_memory(memory: Memory, episodes: int) -> None:
    start, end, drained = (memory.marks[k] for k in ("load start", "load end", "drained"))
    cpu_start, cpu_end = memory.cpu_marks["load start"], memory.cpu_marks["drained"]
    wall = memory.times["drained"] - memory.times["load start"]
    used = {name: cpu_end[name] - cpu_start[name] for name in memory.pids}
    print(
        f"CPU from load start to drained ({wall:.0f} s): "
        + ", ".join(f"{name} {used[name]:.0f} s ({used[name] / wall:.0%})" for name in used)
    )
    for name in memory.pids:
        grew = drained[name] - start[name]
        print(
            f"{name} RSS: load start {start[name]:.1f} MiB, load end {end[name]:.1f} MiB, "
            f"drained {drained[name]:.1f} MiB, peak {memory.peak[name]:.1f} MiB "
            f"(+{grew:.1f} MiB, {grew * 1024 / max(episodes, 1):.1f} KiB per episode), "
            f"subscribers closed {memory.marks['closed'][name]:.1f} MiB"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--subscribers", type=int, required=True, help="websocket subscribers M")
    parser.add_argument("--rate", type=float, required=True, help="startSimulation calls/s N")
    parser.add_argument("--seconds", type=int, required=True, help="length of the load T")
    parser.add_argument("--delay", type=float, default=0.2, help="fake LLM answer delay (s)")
    parser.add_argument("--turns", type=int, default=4, help="maxTurns of every episode")
    parser.add_argument("--workers", type=int, default=1, help="worker processes")
    parser.add_argument("--concurrency", type=int, default=200, help="episodes per worker")
    parser.add_argument("--drain", type=float, default=120.0, help="seconds allowed to drain")
    parser.add_argument("--logs", type=Path, help="copy the API and worker logs here")
    args = parser.parse_args()
    opts = Options(
        args.subscribers,
        args.rate,
        args.seconds,
        args.delay,
        args.turns,
        args.workers,
        args.concurrency,
        args.drain,
        args.logs,
    )
    if min(opts.subscribers, opts.seconds, opts.workers, opts.concurrency) < 1 or opts.rate <= 0:
        parser.error("subscribers, rate, seconds, workers and concurrency must be positive")
    cap = SETUP_LIMIT + opts.seconds + START_GRACE + opts.drain + CATCH_UP_MIN + 60

    async def bounded() -> int:
        try:
            async with asyncio.timeout(cap):
                return await soak(opts)
        except TimeoutError:
            print(f"RESULT: FAIL (the run exceeded its {cap:.0f} s cap)")
            return 2

    sys.exit(asyncio.run(bounded(), loop_factory=event_loop_factory()))


if __name__ == "__main__":
    main()
