"""A Redis failover under load, through real processes: what the Sentinel test checks and the
failover benchmark measures.

A primary, a replica and three Sentinels (bench/support/sentinels.py); `parley serve --no-worker`
and two `parley worker` processes reach them through the Sentinel URL, with acknowledged writes
waiting for the replica (PARLEY_REPLICAS_ACKED=1), and play against the fake model server. Starters
start episodes, each with an idempotency key, retrying a start that failed with the same key
until it is acknowledged; midway the primary is killed (SIGKILL) and the starters go on through
the failover. Then every acknowledged start is sent once more (it must name the same episode),
and every episode is waited for and read back.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import httpx

from bench.support.fake_llm import FakeLLM
from bench.support.processes import ApiProcess, Process, parley_env
from bench.support.sentinels import SentinelCluster
from bench.support.simulation import start_input

START = """
mutation($input: StartSimulationInput!) {
  startSimulation(input: $input) { episode { id status } userErrors { field message code } }
}"""
CREATE_AGENT = """
mutation($input: CreateAgentInput!) { createAgent(input: $input) { agent { id } } }"""
CREATE_SCENARIO = """
mutation($input: CreateScenarioInput!) { createScenario(input: $input) { scenario { id } } }"""
READ = """
query($id: ID!) { episode(id: $id) { id status attempt turns { turn agentIndex sequence } } }"""
COUNT = """
query($tag: String!, $status: EpisodeStatus!) {
  episodes(filter: {tag: $tag, status: $status}, first: 1) { totalCount }
}"""
UNFINISHED = ("QUEUED", "RUNNING", "WAITING", "PAUSED", "EVALUATING")
TERMINAL = ("COMPLETED", "FAILED", "CANCELLED")
TAG = "failover"


@dataclass(frozen=True)
class Plan:
    starters: int = 2
    """Tasks starting episodes at once."""
    pause: float = 0.1
    """Seconds each starter waits between two new episodes."""
    before_kill: float = 3.0
    """Seconds of starts before the primary is killed."""
    after_promotion: float = 3.0
    """Seconds of starts after the replica is promoted."""
    down_after_promotion: float = 1.0
    """Seconds the killed primary stays down after the promotion before it rejoins as a
    replica: until then no replica can acknowledge a write."""
    model_delay: float = 0.2
    """Seconds the fake model takes to answer, so that episodes are in flight at the kill."""
    max_turns: int = 3
    retry_for: float = 30.0
    """Seconds a starter retries one start before it gives up on it."""
    drain: float = 90.0
    """Seconds to wait for every episode to end."""
    lease_seconds: float = 10.0


@dataclass
class Report:
    acknowledged: dict[str, str] = field(default_factory=dict)
    """Idempotency key -> the episode its acknowledged start named."""
    given_up: list[str] = field(default_factory=list)
    """Keys whose start was never acknowledged within `retry_for`."""
    failures: list[tuple[float, str]] = field(default_factory=list)
    """(seconds since the kill, what the client saw) of every start that failed."""
    start_seconds: list[float] = field(default_factory=list)
    """How long each acknowledged start took, retries included."""
    repeated: dict[str, str] = field(default_factory=dict)
    """Key -> the episode a second start with it named, after the failover."""
    episodes: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    """Every acknowledged episode as read at the end (None: not found)."""
    unfinished: dict[str, int] = field(default_factory=dict)
    """Episodes of the run's tag per unfinished status at the end."""
    promoted_after: float = 0.0
    """Seconds from the kill until the Sentinels named the replica and it answered as primary."""
    rejoined_after: float = 0.0
    """Seconds the killed primary took to start again as a replica and sync."""
    old_port: int = 0
    new_port: int = 0
    processes_alive: bool = False
    """The API and both workers still ran at the end (none was restarted)."""

    @property
    def window(self) -> float:
        """Seconds from the first failed start to the last one (0 when none failed)."""
        if not self.failures:
            return 0.0
        return self.failures[-1][0] - self.failures[0][0]

    def duplicate_turns(self) -> dict[str, list[int]]:
        """Episodes whose turns are not numbered strictly upwards, with their numbers."""
        found = {}
        for episode_id, read in self.episodes.items():
            if read is None:
                continue
            numbers = [turn["turn"] for turn in read["turns"]]
            if any(later <= earlier for earlier, later in pairwise(numbers)):
                found[episode_id] = numbers
        return found


async def _post(http: httpx.AsyncClient, query: str, variables: dict[str, Any]) -> Any:
    response = await http.post("/graphql", json={"query": query, "variables": variables})
    body = response.json()
    if body.get("errors"):
        codes = {(e.get("extensions") or {}).get("code", "?") for e in body["errors"]}
        raise StartFailed(",".join(sorted(codes)), body["errors"][0]["message"])
    return body["data"]


class StartFailed(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


async def make_world(http: httpx.AsyncClient) -> tuple[str, list[str]]:
    agents = []
    for first in ("Ada", "Bo"):
        made = await _post(http, CREATE_AGENT, {"input": {"firstName": first, "lastName": TAG}})
        agents.append(made["createAgent"]["agent"]["id"])
    scenario = await _post(
        http,
        CREATE_SCENARIO,
        {"input": {"scenario": "Two meet.", "agentGoals": ["Greet", "Leave"]}},
    )
    return scenario["createScenario"]["scenario"]["id"], agents


class Starters:
    """Tasks that start episodes until told to stop, each start retried with its key."""

    def __init__(
        self, http: httpx.AsyncClient, plan: Plan, payload: dict[str, Any], report: Report
    ) -> None:
        self.http = http
        self.plan = plan
        self.payload = payload
        self.report = report
        self.killed_at: float | None = None
        self.stop = asyncio.Event()
        self._next = 0

    def since_kill(self) -> float:
        return time.monotonic() - self.killed_at if self.killed_at is not None else float("-inf")

    async def start_once(self, key: str) -> str:
        variables = {"input": {**self.payload, "idempotencyKey": key}}
        data = await _post(self.http, START, variables)
        payload = data["startSimulation"]
        if payload["userErrors"]:
            raise StartFailed("USER_ERROR", str(payload["userErrors"]))
        return str(payload["episode"]["id"])

    async def start(self, key: str) -> None:
        began = time.monotonic()
        while time.monotonic() - began < self.plan.retry_for:
            try:
                episode_id = await self.start_once(key)
            except StartFailed as err:
                self.report.failures.append((self.since_kill(), err.code))
            except httpx.HTTPError as err:
                self.report.failures.append((self.since_kill(), type(err).__name__))
            else:
                self.report.acknowledged[key] = episode_id
                self.report.start_seconds.append(time.monotonic() - began)
                return
            await asyncio.sleep(0.1)
        self.report.given_up.append(key)

    async def run_one(self) -> None:
        while not self.stop.is_set():
            key = f"{TAG}-{self._next}"
            self._next += 1
            await self.start(key)
            await asyncio.sleep(self.plan.pause)

    async def run(self) -> None:
        await asyncio.gather(*(self.run_one() for _ in range(self.plan.starters)))


async def _unfinished(http: httpx.AsyncClient) -> dict[str, int]:
    counts = {}
    for status in UNFINISHED:
        data = await _post(http, COUNT, {"tag": TAG, "status": status})
        counts[status] = int(data["episodes"]["totalCount"])
    return counts


async def _drain(http: httpx.AsyncClient, report: Report, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            report.unfinished = await _unfinished(http)
        except (StartFailed, httpx.HTTPError):
            report.unfinished = {"unknown": -1}
        if not any(report.unfinished.values()) or time.monotonic() > deadline:
            return
        await asyncio.sleep(0.5)


async def _started(worker: Process, timeout: float = 60.0) -> None:
    """Wait until a worker says it has started (it reached Redis and joined the queue)."""
    deadline = time.monotonic() + timeout
    while "worker started" not in worker.output():
        if worker.popen.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the worker did not start:\n{worker.output()[-2000:]}")
        await asyncio.sleep(0.1)


async def run_failover(root: Path, plan: Plan | None = None) -> Report:
    """Run the whole scenario under `root` (its servers' and processes' files); every process
    started is stopped by pid before this returns."""
    plan = plan or Plan()
    report = Report()
    with SentinelCluster(root / "redis") as cluster, FakeLLM(delay=plan.model_delay) as fake:
        report.old_port = cluster.primary.port
        env = parley_env(
            cluster.url,
            root / "data",
            replicas_acked="1",
            lease_seconds=str(plan.lease_seconds),
            seed="false",
        )
        processes: list[Process] = []
        try:
            api = ApiProcess(env, root / "api.log", "--no-worker")
            processes.append(api)
            for number in range(2):
                worker = Process(
                    ["worker", "--concurrency", "64"], env, root / f"worker{number}.log"
                )
                processes.append(worker)
            for worker in processes[1:]:
                await _started(worker)
            async with httpx.AsyncClient(base_url=api.url, timeout=30) as http:
                scenario, agents = await make_world(http)
                payload = start_input(
                    scenario, agents, fake.model_name(), maxTurns=plan.max_turns, tag=TAG
                )
                await _under_failover(cluster, http, plan, payload, report)
                again = Starters(http, plan, payload, Report())
                for key in report.acknowledged:
                    report.repeated[key] = await again.start_once(key)
                await _drain(http, report, plan.drain)
                for episode_id in report.acknowledged.values():
                    data = await _post(http, READ, {"id": episode_id})
                    report.episodes[episode_id] = data["episode"]
            report.processes_alive = all(p.popen.poll() is None for p in processes)
        finally:
            for process in reversed(processes):
                process.stop()
    return report


async def _under_failover(
    cluster: SentinelCluster,
    http: httpx.AsyncClient,
    plan: Plan,
    payload: dict[str, Any],
    report: Report,
) -> None:
    starters = Starters(http, plan, payload, report)
    load = asyncio.create_task(starters.run())
    try:
        await asyncio.sleep(plan.before_kill)
        starters.killed_at = time.monotonic()
        await asyncio.to_thread(cluster.kill_primary)
        report.promoted_after = await asyncio.to_thread(cluster.wait_promoted)
        report.new_port = cluster.replica.port
        await asyncio.sleep(plan.down_after_promotion)
        report.rejoined_after = await asyncio.to_thread(cluster.rejoin_as_replica)
        await asyncio.sleep(plan.after_promotion)
        starters.stop.set()
        await load
    finally:
        starters.stop.set()
        if not load.done():
            load.cancel()
