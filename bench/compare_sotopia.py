"""Parley and Sotopia 0.1.5 side by side: the same workload, data, Redis, fake LLM and client.

Run: python -m bench.compare_sotopia [--quick] [--only tokens,episodes,throughput,start,reads]
     [--repeats 3] [--sotopia-venv DIR]

Sotopia 0.1.5 (its FastAPI server and `rq worker default`) runs from its own virtual
environment, made on first use under --sotopia-venv (default ~/.cache/parley-bench/sotopia-0.1.5)
and reused afterwards; bench/sotopia_side.py is what runs there, with the one workaround the
Redis mode of 0.1.5 needs (see its docstring). Each system gets its own fresh embedded Redis
(RedisJSON + RediSearch) per group of rows, holding the same scenario and two agents written in
Sotopia's record format at Sotopia's keys; both reach the same fake OpenAI-compatible LLM (its own
process, bench/support/fake_llm.py) under the same model name, `custom/structured@<url>`, and both
are driven over HTTP by httpx. Repeats alternate which system goes first; figures are medians.

Rows (the --only names):
- tokens: one episode each; its chat requests from the fake's log, counted by
  bench/bench_tokens.py (cl100k_base).
- episodes: N episodes x 6 turns, LLM 200 ms, one worker process at its default settings
  (Parley: `parley worker`, 8 episodes at once; Sotopia: rq's worker, one job at a time, each in
  a forked work horse); wall time from the first start request to the last finished episode,
  and the worker's CPU time (its own and its children's, psutil) per episode.
- throughput: the same with 200 episodes.
- start: start requests from 16 clients with no worker running (Sotopia `POST /simulate`,
  Parley `startSimulation` on `parley serve --no-worker`); latency, requests/s, API CPU each.
- reads: 1,000 stored episodes (Sotopia's format): Sotopia's one `GET /episodes` against
  Parley's pages of 50, and of 100 (its largest), with every stored field (no joined objects:
  Sotopia returns ids); Parley's first page of 50 with only id, status and tag (Sotopia has no
  projection); and how much of each read is the client's own decoding of the JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import redis.asyncio as redis
from ulid import ULID

from bench.bench_tokens import episode_token_figures
from bench.common import cpu_seconds, percentile
from bench.support.fake_llm import fake_llm_process
from bench.support.processes import Process, parley_env
from bench.support.simulation import START, start_input
from parley.lifecycle.settings import RunSettings
from parley.resolvers.pagination import MAX_PAGE_SIZE
from parley.storage.embedded import EmbeddedRedis, free_port
from parley.storage.models import AgentProfile, EnvironmentProfile, EpisodeLog

SIDE = Path(__file__).with_name("sotopia_side.py")
SOTOPIA_REQUIREMENTS = (
    "sotopia==0.1.5",
    "redis-om==0.3.2",
    "redis==5.1.1",
    "fastapi==0.115.2",
    "rq==1.16.2",
    "uvicorn==0.54.0",
    "litellm==1.80.0",
)
"""Sotopia's release with the versions of its lock file where pip can honour them, and what pip
resolved for the rest (litellm 1.80.11 of the lock needs openai 2, which sotopia 0.1.5 excludes).
Its `api` extra would also pull Streamlit and Modal, which the API server does not need."""
ROWS = ("tokens", "episodes", "throughput", "start", "reads")
TURNS = 6
DELAY = 0.2
CLIENTS = 16
PAGE = 50
READY_TIMEOUT = 120.0
HTTP_TIMEOUT = 120.0

READ_ALL = """
query($first: Int!, $after: String) {
  episodes(first: $first, after: $after) {
    pageInfo { hasNextPage endCursor }
    nodes {
      id status attempt sequence scenarioId agentIds agentModels judgeModel turnOrder
      evaluationDimensionListId tag messages reasoning error terminationReason generationStats
      createdAt startedAt finishedAt progress { turn maxTurns }
      statusHistory { status at sequence attempt reason resumedFromTurn }
      turns { turn agentIndex speaker actionType argument to sequence at }
      rewards { agentIndex overall dimensions { dimension score } }
    }
  }
}"""
READ_FEW = "query { episodes(first: 50) { nodes { id status tag } } }"


# --- Sotopia's environment -------------------------------------------------------------------


def default_venv() -> Path:
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "parley-bench" / "sotopia-0.1.5"


def base_python(given: str | None) -> str:
    if given:
        return given
    if sys.version_info < (3, 13):
        return sys.executable
    found = shutil.which("python3.12")
    if found is None:
        raise SystemExit("Sotopia 0.1.5 needs Python < 3.13: pass --sotopia-python")
    return found


def ensure_sotopia_venv(venv: Path, python: str) -> Path:
    """The venv's interpreter, after creating the venv and installing Sotopia if needed."""
    marker = venv / "parley-bench.json"
    interpreter = venv / "bin" / "python"
    wanted = {"requirements": list(SOTOPIA_REQUIREMENTS)}
    if interpreter.exists() and marker.exists() and json.loads(marker.read_text()) == wanted:
        return interpreter
    if venv.exists():
        shutil.rmtree(venv)
    venv.parent.mkdir(parents=True, exist_ok=True)
    log = venv.parent / f"{venv.name}-install.log"
    print(f"installing Sotopia 0.1.5 into {venv} (once; log: {log})", flush=True)
    steps = [
        [python, "-m", "venv", str(venv)],
        [str(interpreter), "-m", "pip", "install", "-q", *SOTOPIA_REQUIREMENTS],
    ]
    with log.open("w") as out:
        for step in steps:
            try:
                code = subprocess.run(step, stdout=out, stderr=subprocess.STDOUT, timeout=1800)
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise SystemExit(f"cannot make Sotopia's venv ({' '.join(step)}): {exc}") from exc
            if code.returncode != 0:
                tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
                raise SystemExit(f"cannot make Sotopia's venv: {' '.join(step)} failed:\n{tail}")
    freeze = subprocess.run(
        [str(interpreter), "-m", "pip", "freeze"], capture_output=True, text=True, timeout=120
    )
    (venv / "parley-bench-freeze.txt").write_text(freeze.stdout)
    marker.write_text(json.dumps(wanted))
    return interpreter


def sotopia_versions(venv: Path) -> str:
    freeze = (venv / "parley-bench-freeze.txt").read_text().splitlines()
    names = ("sotopia", "redis-om", "redis", "rq", "fastapi", "litellm", "pydantic")
    pins = {line.split("==")[0].lower(): line for line in freeze if "==" in line}
    return ", ".join(pins[n] for n in names if n in pins)


# --- processes -------------------------------------------------------------------------------


class GroupProcess:
    """A Sotopia process in a process group of its own, stopped with everything it forked."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.log = log
        with log.open("wb") as out:
            self.popen = subprocess.Popen(
                args, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )

    @property
    def pid(self) -> int:
        return self.popen.pid

    def check(self) -> None:
        if self.popen.poll() is not None:
            raise RuntimeError(f"{self.log.name}: exited {self.popen.returncode}\n{self.tail()}")

    def tail(self, lines: int = 25) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def stop(self, grace: float = 10.0) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, sig)
            try:
                self.popen.wait(grace)
            except subprocess.TimeoutExpired:
                continue
            if sig == signal.SIGTERM:  # the leader is gone; its forks go with the group
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.pid, signal.SIGKILL)
            return


# --- the shared world ------------------------------------------------------------------------


@dataclass(frozen=True)
class World:
    scenario: str
    agents: list[str]
    names: list[str]


def new_world() -> World:
    return World(str(ULID()), [str(ULID()), str(ULID())], ["Ava Bench", "Noor Bench"])


def world_documents(world: World) -> dict[str, dict[str, Any]]:
    """The scenario and agents as Sotopia 0.1.5 stores them (every field, Sotopia's keys)."""
    docs: dict[str, dict[str, Any]] = {}
    for i, (pk, name) in enumerate(zip(world.agents, world.names, strict=True)):
        first, last = name.split()
        docs[AgentProfile.make_primary_key(pk)] = {
            "pk": pk,
            "first_name": first,
            "last_name": last,
            "age": 30 + i,
            "occupation": "Tester",
            "gender": "Woman",
            "gender_pronoun": "she/her",
            "public_info": "Works on the quality team.",
            "big_five": "",
            "moral_values": [],
            "schwartz_personal_values": [],
            "personality_and_values": "Careful and friendly.",
            "decision_making_style": "",
            "secret": "Is looking for another job",
            "model_id": "",
            "mbti": "",
            "tag": "bench",
        }
    docs[EnvironmentProfile.make_primary_key(world.scenario)] = {
        "pk": world.scenario,
        "codename": "bench_lunch",
        "source": "",
        "scenario": "Colleagues decide where to have lunch.",
        "agent_goals": [f"Pick a place you like (seat {i})" for i in range(2)],
        "relationship": 2,
        "age_constraint": None,
        "occupation_constraint": None,
        "agent_constraint": None,
        "game_metadata": None,
        "tag": "bench",
    }
    return docs


def stored_episode(world: World, model: str, index: int) -> dict[str, Any]:
    """A finished episode of TURNS turns in Sotopia's EpisodeLog format."""
    a, b = world.names
    background = (
        "\nHere is the context of this interaction:\nScenario: Colleagues decide where to have "
        f"lunch.\nParticipants: {a} and {b}\n{a}'s background: {a} is a 30-year-old female "
        "tester. She/her pronouns. Works on the quality team.\n"
        f"{b}'s background: Unknown\n{a}'s goal: Pick a place you like (seat 0)\n"
        f"{b}'s goal: Unknown\nConversation Starts:\n"
    )
    messages: list[list[list[str]]] = [
        [["Environment", a, background], ["Environment", b, background]]
    ]
    for turn in range(TURNS):
        speaker, other = (a, b) if turn % 2 == 0 else (b, a)
        line = f' said: "Shall we try the noodle place? ({index}, {turn})"'
        messages[-1] += [[speaker, "Environment", line], [other, "Environment", " did nothing"]]
        obs = f"Turn #{turn}: {speaker} {line}\n"
        messages.append([["Environment", a, obs], ["Environment", b, obs]])
    dims = {
        "believability": 8.0,
        "relationship": 2.0,
        "knowledge": 3.0,
        "secret": 0.0,
        "social_rules": 0.0,
        "financial_and_material_benefits": 0.0,
        "goal": 7.0,
    }
    overall = sum(dims.values()) / len(dims)
    return {
        "pk": str(ULID()),
        "environment": world.scenario,
        "agents": world.agents,
        "tag": "bench-reads",
        "models": [model, model, model],
        "messages": messages,
        "reasoning": "Environment comments: terminated: The conversation is too long; \n",
        "rewards": [[overall, {**dims, "overall_score": overall}]] * 2,
        "rewards_prompt": "",
    }


async def read_json(client: redis.Redis, key: str) -> Any:
    raw = await client.execute_command("JSON.GET", key)  # type: ignore[no-untyped-call]
    return json.loads(raw)


async def write_json(client: redis.Redis, docs: dict[str, dict[str, Any]]) -> None:
    pipe = client.pipeline(transaction=False)
    for key, doc in docs.items():
        pipe.execute_command("JSON.SET", key, "$", json.dumps(doc))
    await pipe.execute()


# --- the two systems -------------------------------------------------------------------------


@dataclass
class System:
    """One side of the comparison, up and holding the shared world."""

    name: str
    redis: redis.Redis
    api_url: str
    api_pid: int
    world: World
    model: str
    worker_pid: int | None = None
    check_worker: Callable[[], None] = field(default=lambda: None)

    async def start(self, http: httpx.AsyncClient, tag: str) -> str:
        raise NotImplementedError

    async def finished(self, ids: list[str]) -> int:
        raise NotImplementedError

    async def describe_episode(self, episode_id: str) -> str:
        raise NotImplementedError


class Sotopia(System):
    async def start(self, http: httpx.AsyncClient, tag: str) -> str:
        body = {
            "env_id": self.world.scenario,
            "agent_ids": self.world.agents,
            "models": [self.model] * 3,
            "max_turns": TURNS,
            "tag": tag,
        }
        response = await http.post(f"{self.api_url}/simulate", json=body)
        if response.status_code != 202 or not response.text:
            raise RuntimeError(f"POST /simulate: {response.status_code} {response.text[:300]}")
        return response.text

    async def finished(self, ids: list[str]) -> int:
        if await self.redis.zcard("rq:failed:default"):
            raise RuntimeError("a Sotopia job failed (rq's failed registry is not empty)")
        self.check_worker()
        return int(await self.redis.exists(*(EpisodeLog.make_primary_key(i) for i in ids)))

    async def describe_episode(self, episode_id: str) -> str:
        doc = await read_json(self.redis, EpisodeLog.make_primary_key(episode_id))
        spoken = sum(
            1 for turn in doc["messages"] for m in turn if "said:" in m[2] and m[1] == "Environment"
        )
        return f"{spoken} spoken turns, rewards {doc['rewards']}"


class Parley(System):
    async def start(self, http: httpx.AsyncClient, tag: str) -> str:
        variables = {
            "input": start_input(
                self.world.scenario, self.world.agents, self.model, maxTurns=TURNS, tag=tag
            )
        }
        response = await http.post(
            f"{self.api_url}/graphql", json={"query": START, "variables": variables}
        )
        payload = response.json()
        if (
            response.status_code != 200
            or "errors" in payload
            or payload["data"]["startSimulation"]["userErrors"]
        ):
            raise RuntimeError(f"startSimulation: {response.status_code} {response.text[:300]}")
        return str(payload["data"]["startSimulation"]["episode"]["id"])

    async def finished(self, ids: list[str]) -> int:
        self.check_worker()
        keys = [EpisodeLog.make_primary_key(i) for i in ids]
        statuses = await self.redis.execute_command(  # type: ignore[no-untyped-call]
            "JSON.MGET", *keys, "$.status"
        )
        done = 0
        for raw in statuses:
            status = json.loads(raw)[0] if raw else None
            if status in ("FAILED", "CANCELLED"):
                raise RuntimeError(f"a Parley episode ended {status}")
            done += status == "COMPLETED"
        return done

    async def describe_episode(self, episode_id: str) -> str:
        doc = await read_json(self.redis, EpisodeLog.make_primary_key(episode_id))
        rewards = [r[0] if isinstance(r, list) else r for r in doc["rewards"]]
        return f"{len(doc['turns'])} spoken turns, overall rewards {rewards}"


@contextlib.asynccontextmanager
async def fresh_redis(tmp: Path) -> AsyncIterator[tuple[str, redis.Redis]]:
    server = EmbeddedRedis(tmp)
    try:
        url = await server.start()
        client = redis.Redis.from_url(url, decode_responses=True)
    except BaseException:
        await server.stop()
        raise
    try:
        yield url, client
    finally:
        await client.aclose()
        await server.stop()


def wait_until(
    ready: Callable[[], bool], what: str, timeout: float, check: Callable[[], None]
) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        check()
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not ready after {timeout:.0f} s")
        time.sleep(0.2)


def answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@contextlib.asynccontextmanager
async def sotopia_system(
    python: Path, tmp: Path, world: World, model: str, worker: bool
) -> AsyncIterator[Sotopia]:
    async with (
        fresh_redis(tmp / "sotopia") as (redis_url, client),
        contextlib.AsyncExitStack() as stack,
    ):
        await write_json(client, world_documents(world))
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")
        }
        env.update(
            REDIS_OM_URL=redis_url,
            SOTOPIA_STORAGE_BACKEND="redis",
            CUSTOM_API_KEY="EMPTY",
            LITELLM_LOCAL_MODEL_COST_MAP="True",
            PYTHONUNBUFFERED="1",
        )
        port = free_port()
        api = GroupProcess(
            [str(python), str(SIDE), "api", "--port", str(port)], env, tmp / "sotopia-api.log"
        )
        stack.callback(api.stop)
        api_url = f"http://127.0.0.1:{port}"
        await asyncio.to_thread(
            wait_until,
            lambda: answers(f"{api_url}/health"),
            "Sotopia API",
            READY_TIMEOUT,
            api.check,
        )
        system = Sotopia("Sotopia 0.1.5", client, api_url, api.pid, world, model)
        if worker:
            rq = GroupProcess([str(python), str(SIDE), "worker"], env, tmp / "sotopia-worker.log")
            stack.callback(rq.stop)
            deadline = time.monotonic() + READY_TIMEOUT
            while not await client.scard("rq:workers"):
                rq.check()
                if time.monotonic() > deadline:
                    raise RuntimeError(f"Sotopia's rq worker did not register:\n{rq.tail()}")
                await asyncio.sleep(0.2)
            system.worker_pid, system.check_worker = rq.pid, rq.check
        yield system


@contextlib.asynccontextmanager
async def parley_system(tmp: Path, world: World, model: str, worker: bool) -> AsyncIterator[Parley]:
    async with (
        fresh_redis(tmp / "parley") as (redis_url, client),
        contextlib.AsyncExitStack() as stack,
    ):
        await write_json(client, world_documents(world))
        env = parley_env(redis_url, tmp / "parley-data", seed="false")
        port = free_port()
        args = ["serve", "--port", str(port), "--no-seed", "--no-worker"]
        api = Process(args, env, tmp / "parley-api.log")
        stack.callback(api.stop)
        api_url = f"http://127.0.0.1:{port}"

        def api_alive() -> None:
            if api.popen.poll() is not None:
                raise RuntimeError(f"Parley API exited:\n{api.output()[-2000:]}")

        ready = f"{api_url}/readyz"
        await asyncio.to_thread(
            wait_until, lambda: answers(ready), "Parley API", READY_TIMEOUT, api_alive
        )
        system = Parley("Parley", client, api_url, api.pid, world, model)
        if worker:
            concurrency = RunSettings.model_fields["concurrency"].default
            process = Process(
                ["worker", "--concurrency", str(concurrency)], env, tmp / "parley-worker.log"
            )
            stack.callback(process.stop)

            def check() -> None:
                if process.popen.poll() is not None:
                    raise RuntimeError(f"Parley worker exited:\n{process.output()[-2000:]}")

            system.worker_pid, system.check_worker = process.pid, check
        yield system


@contextlib.asynccontextmanager
async def both(
    python: Path, tmp: Path, model: str, worker: bool
) -> AsyncIterator[tuple[Sotopia, Parley]]:
    world = new_world()
    async with (
        sotopia_system(python, tmp, world, model, worker) as sotopia,
        parley_system(tmp, world, model, worker) as parley,
    ):
        yield sotopia, parley


# --- measurements ----------------------------------------------------------------------------


def order(systems: tuple[System, System], repeat: int) -> tuple[System, System]:
    return systems if repeat % 2 == 0 else (systems[1], systems[0])


async def run_episodes(system: System, n: int, tag: str) -> tuple[float, float, list[str]]:
    """Seconds from the first start request until all n episodes finished, and the worker's
    CPU seconds meanwhile."""
    assert system.worker_pid is not None
    cpu_before = cpu_seconds(system.worker_pid, descendants=True)
    gate = asyncio.Semaphore(CLIENTS)
    began = time.perf_counter()
    async with httpx.AsyncClient(timeout=HTTP_TIMEOUT) as http:

        async def one() -> str:
            async with gate:
                return await system.start(http, tag)

        ids = await asyncio.gather(*(one() for _ in range(n)))
    deadline = time.monotonic() + 120 + 15 * n
    while await system.finished(ids) < n:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{system.name}: {n} episodes not finished in time")
        await asyncio.sleep(0.05)
    wall = time.perf_counter() - began
    return wall, cpu_seconds(system.worker_pid, descendants=True) - cpu_before, ids


async def fake_requests(base: str) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(timeout=HTTP_TIMEOUT) as http:
        response = await http.get(base.removesuffix("/v1") + "/_fake/requests")
    recorded: list[dict[str, Any]] = response.json()
    return sorted(recorded, key=lambda r: float(r["received"]))


async def reset_fake(base: str) -> None:
    async with httpx.AsyncClient(timeout=HTTP_TIMEOUT) as http:
        await http.post(base.removesuffix("/v1") + "/_fake/reset")


@dataclass
class Table:
    rows: dict[str, tuple[str, str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add(self, path: str, sotopia: str, parley: str) -> None:
        self.rows[path] = (sotopia, parley)
        print(f"  {path}: Sotopia {sotopia} | Parley {parley}", flush=True)

    def render(self) -> str:
        lines = ["| path | Sotopia 0.1.5 | Parley |", "|---|---|---|"]
        lines += [f"| {p} | {s} | {q} |" for p, (s, q) in self.rows.items()]
        return "\n".join(lines)


def med(values: list[float]) -> float:
    return statistics.median(values)


async def tokens_and_warmup(systems: tuple[Sotopia, Parley], fake: str, table: Table) -> None:
    """One episode each, alone on the fake (also warms both workers up)."""
    figures: list[tuple[int, int, int]] = []
    for system in systems:
        await reset_fake(fake)
        _, _, ids = await run_episodes(system, 1, "bench-tokens")
        bodies = [r["body"] for r in await fake_requests(fake)]
        total, uncached = await asyncio.to_thread(episode_token_figures, bodies)
        figures.append((len(bodies), total, uncached))
        described = await system.describe_episode(ids[0])
        table.notes.append(f"{system.name} episode: {described}, {len(bodies)} LLM requests")
    cells = [f"{t:,} / {u:,} ({n} requests)" for n, t, u in figures]
    table.add(
        "prompt + schema tokens per episode (cl100k) / uncached under an ideal prefix cache", *cells
    )


async def episodes_rows(
    systems: tuple[Sotopia, Parley], n: int, repeats: int, table: Table, label: str, cpu: bool
) -> None:
    walls: dict[str, list[float]] = {s.name: [] for s in systems}
    cpus: dict[str, list[float]] = {s.name: [] for s in systems}
    for repeat in range(repeats):
        for system in order(systems, repeat):
            wall, seconds, _ = await run_episodes(system, n, f"bench-{n}-{repeat}")
            walls[system.name].append(wall)
            cpus[system.name].append(seconds / n)
            print(
                f"    {system.name}: {n} episodes {wall:.2f} s, worker CPU {seconds:.2f} s",
                flush=True,
            )
    s, p = (s.name for s in systems)
    table.add(label, f"{med(walls[s]):.1f} s", f"{med(walls[p]):.1f} s")
    if cpu:
        table.add(
            "worker CPU per episode (worker process CPU time / episodes; psutil)",
            f"{med(cpus[s]) * 1000:.0f} ms",
            f"{med(cpus[p]) * 1000:.0f} ms",
        )


async def timed_starts(
    system: System, clients: list[httpx.AsyncClient], per_client: int
) -> list[float]:
    async def one_client(http: httpx.AsyncClient) -> list[float]:
        latencies: list[float] = []
        for _ in range(per_client):
            began = time.perf_counter()
            await system.start(http, "bench-start")
            latencies.append(time.perf_counter() - began)
        return latencies

    runs = await asyncio.wait_for(asyncio.gather(*(one_client(c) for c in clients)), 600)
    return [t for run in runs for t in run]


async def start_rows(
    systems: tuple[Sotopia, Parley], requests: int, repeats: int, table: Table
) -> None:
    per_client = max(1, requests // CLIENTS)
    results: dict[str, list[tuple[float, float, float, float]]] = {s.name: [] for s in systems}
    clients = [httpx.AsyncClient(timeout=HTTP_TIMEOUT) for _ in range(CLIENTS)]
    try:
        for warm in systems:  # connections, first parse, first imports
            await timed_starts(warm, clients, 2)
        for repeat in range(repeats):
            for system in order(systems, repeat):
                cpu_before = cpu_seconds(system.api_pid, descendants=True)
                began = time.perf_counter()
                latencies = await timed_starts(system, clients, per_client)
                wall = time.perf_counter() - began
                cpu = (cpu_seconds(system.api_pid, descendants=True) - cpu_before) / len(latencies)
                p50, p99 = percentile(latencies, 50), percentile(latencies, 99)
                results[system.name].append((p50, p99, len(latencies) / wall, cpu))
                print(
                    f"    {system.name}: p50 {p50 * 1000:.1f} ms p99 {p99 * 1000:.1f} ms "
                    f"{len(latencies) / wall:.0f}/s CPU {cpu * 1000:.2f} ms",
                    flush=True,
                )
    finally:
        for c in clients:
            await c.aclose()

    def cell(name: str) -> tuple[str, str]:
        runs = results[name]
        p50, p99, rate, cpu = (med([r[i] for r in runs]) for i in range(4))
        return (
            f"{p50 * 1000:.1f} ms / {p99 * 1000:.1f} ms / {rate:.0f} per s",
            f"{cpu * 1000:.2f} ms",
        )

    (s_lat, s_cpu), (p_lat, p_cpu) = (cell(s.name) for s in systems)
    table.add(f"start request, {CLIENTS} clients: p50 / p99 / requests per s", s_lat, p_lat)
    table.add("API CPU per start request", s_cpu, p_cpu)


Read = Callable[[], Awaitable[tuple[int, int]]]
"""One read of the episodes: how many came back, in how many response bytes."""


async def read_all_sotopia(http: httpx.AsyncClient, system: System) -> tuple[int, int]:
    response = await http.get(f"{system.api_url}/episodes")
    if response.status_code != 200:
        raise RuntimeError(f"GET /episodes: {response.status_code} {response.text[:300]}")
    return len(response.json()), len(response.content)


async def read_all_parley(
    http: httpx.AsyncClient,
    system: System,
    page_size: int = PAGE,
    bodies: list[bytes] | None = None,
) -> tuple[int, int]:
    """Every episode in pages of `page_size`; each response's bytes go to `bodies` if given."""
    after: str | None = None
    count = size = 0
    while True:
        body = {"query": READ_ALL, "variables": {"first": page_size, "after": after}}
        response = await http.post(f"{system.api_url}/graphql", json=body)
        payload = response.json()
        if response.status_code != 200 or "errors" in payload:
            raise RuntimeError(f"episodes page: {response.status_code} {response.text[:300]}")
        page = payload["data"]["episodes"]
        count += len(page["nodes"])
        size += len(response.content)
        if bodies is not None:
            bodies.append(response.content)
        if not page["pageInfo"]["hasNextPage"]:
            return count, size
        after = page["pageInfo"]["endCursor"]


def decoding_seconds(bodies: list[bytes], repeats: int = 5) -> float:
    """The client's own share of a read: json.loads of its responses (median of `repeats`)."""
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        for body in bodies:
            json.loads(body)
        times.append(time.perf_counter() - began)
    return med(times)


async def read_few_parley(http: httpx.AsyncClient, system: System) -> tuple[int, int]:
    response = await http.post(f"{system.api_url}/graphql", json={"query": READ_FEW})
    payload = response.json()
    if response.status_code != 200 or "errors" in payload:
        raise RuntimeError(f"episodes: {response.status_code} {response.text[:300]}")
    return len(payload["data"]["episodes"]["nodes"]), len(response.content)


async def timed(read: Read, expected: int) -> float:
    began = time.perf_counter()
    got, _ = await asyncio.wait_for(read(), HTTP_TIMEOUT)
    elapsed = time.perf_counter() - began
    if got != expected:
        raise RuntimeError(f"read {got} episodes, expected {expected}")
    return elapsed


async def reads_rows(
    systems: tuple[Sotopia, Parley], stored: int, repeats: int, table: Table
) -> None:
    sotopia, parley = systems
    docs = [stored_episode(sotopia.world, sotopia.model, i) for i in range(stored)]
    for system in systems:
        await write_json(system.redis, {EpisodeLog.make_primary_key(d["pk"]): d for d in docs})
    async with httpx.AsyncClient(timeout=HTTP_TIMEOUT) as http:
        reads: dict[str, Read] = {
            "sotopia": lambda: read_all_sotopia(http, sotopia),
            "parley": lambda: read_all_parley(http, parley),
            "parley_max": lambda: read_all_parley(http, parley, MAX_PAGE_SIZE),
            "few": lambda: read_few_parley(http, parley),
        }
        deadline = time.monotonic() + READY_TIMEOUT  # until both indexes hold every document
        sizes: dict[str, int] = {}
        for name, read in reads.items():
            want = PAGE if name == "few" else stored
            while (got := await read())[0] != want:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{name}: the stored episodes never all showed up")
                await asyncio.sleep(0.2)
            sizes[name] = got[1]
        times: dict[str, list[float]] = {name: [] for name in reads}
        for repeat in range(repeats):
            names = list(reads) if repeat % 2 == 0 else list(reversed(reads))
            for name in names:
                times[name].append(await timed(reads[name], PAGE if name == "few" else stored))
        bodies: list[bytes] = []
        await read_all_parley(http, parley, MAX_PAGE_SIZE, bodies)
        sotopia_body = (await http.get(f"{sotopia.api_url}/episodes")).content
    s, p, p_max, f = (med(times[n]) * 1000 for n in ("sotopia", "parley", "parley_max", "few"))
    table.add(
        f"{stored:,} stored episodes, every field: Sotopia's one GET /episodes "
        f"vs Parley's pages of {PAGE} (total)",
        f"{s:.0f} ms",
        f"{p:.0f} ms ({-(-stored // PAGE)} pages)",
    )
    table.add(
        f"the same, Parley's pages of {MAX_PAGE_SIZE} (its largest)",
        f"{s:.0f} ms",
        f"{p_max:.0f} ms ({-(-stored // MAX_PAGE_SIZE)} pages)",
    )
    table.add(
        f"first {PAGE} episodes, only id, status and tag",
        f"\u2013 (no projection; GET /episodes of all {stored:,}: {s:.0f} ms)",
        f"{f:.1f} ms",
    )
    table.notes.append(
        "of which the client's json.loads of the responses alone: Sotopia's "
        f"{decoding_seconds([sotopia_body]) * 1000:.0f} ms, Parley's pages of {MAX_PAGE_SIZE} "
        f"{decoding_seconds(bodies) * 1000:.0f} ms"
    )
    mib = {name: size / 2**20 for name, size in sizes.items()}
    table.notes.append(
        f"response bytes: Sotopia's GET /episodes {mib['sotopia']:.2f} MiB, Parley's pages "
        f"{mib['parley']:.2f} MiB in all, Parley's projected page {sizes['few'] / 1024:.1f} KiB"
    )


# --- the run ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Counts:
    episodes: int
    throughput: int
    start_requests: int
    stored: int


FULL = Counts(episodes=20, throughput=200, start_requests=1600, stored=1000)
QUICK = Counts(episodes=4, throughput=20, start_requests=320, stored=200)


@contextlib.contextmanager
def run_dir(logs: Path | None) -> Iterator[Path]:
    """Where the Redis data and the process logs go: kept in `logs` if given."""
    if logs is not None:
        logs.mkdir(parents=True, exist_ok=True)
        yield logs
        return
    with tempfile.TemporaryDirectory(prefix="parley-compare-") as name:
        yield Path(name)


async def run(args: argparse.Namespace, python: Path, venv: Path) -> Table:
    counts = QUICK if args.quick else FULL
    only = set(args.only)
    table = Table()
    load_before = os.getloadavg()[0]
    with (
        run_dir(args.logs) as tmp,
        fake_llm_process(free_port(), DELAY) as (fake, _),
    ):
        model = f"custom/structured@{fake}"
        if only & {"tokens", "episodes", "throughput"}:
            print("episodes (workers running)", flush=True)
            async with both(python, tmp / "episodes", model, worker=True) as systems:
                await tokens_and_warmup(systems, fake, table)
                runs = {  # section: episodes, repeats, row label, whether CPU is measured
                    "episodes": (
                        counts.episodes,
                        args.repeats,
                        f"{counts.episodes} episodes x {TURNS} turns, LLM 200 ms, "
                        "one worker process: wall time",
                        True,
                    ),
                    "throughput": (
                        counts.throughput,
                        args.throughput_repeats,
                        f"{counts.throughput} episodes, LLM 200 ms, one worker, "
                        "default settings: wall time",
                        False,
                    ),
                }
                for section, (count, repeats, label, cpu) in runs.items():
                    if section in only:
                        await episodes_rows(systems, count, repeats, table, label, cpu=cpu)
            if "tokens" not in only:
                table.rows.pop(next(iter(table.rows)))
        if "start" in only:
            print("start requests (no worker)", flush=True)
            async with both(python, tmp / "start", model, worker=False) as systems:
                await start_rows(systems, counts.start_requests, args.repeats, table)
        if "reads" in only:
            print("reads", flush=True)
            async with both(python, tmp / "reads", model, worker=False) as systems:
                await reads_rows(systems, counts.stored, args.repeats, table)
    table.notes.append(f"Sotopia environment: {sotopia_versions(venv)}")
    cores = os.cpu_count()
    table.notes.append(
        f"machine: {cores} cores, load average {load_before:.1f} before, "
        f"{os.getloadavg()[0]:.1f} after"
    )
    return table


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--only",
        type=lambda s: s.split(","),
        default=list(ROWS),
        help=f"rows to run: {','.join(ROWS)}",
    )
    parser.add_argument("--quick", action="store_true", help="smaller counts, one repeat")
    parser.add_argument(
        "--repeats", type=int, default=None, help="repeats per row (default 3; 1 with --quick)"
    )
    parser.add_argument(
        "--throughput-repeats",
        type=int,
        default=1,
        help="repeats of the 200-episode row (default 1: Sotopia runs one episode at a time, "
        "about 8 minutes per repeat)",
    )
    parser.add_argument("--sotopia-venv", type=Path, default=default_venv())
    parser.add_argument("--logs", type=Path, help="keep process logs and Redis data here")
    parser.add_argument("--sotopia-python", help="Python < 3.13 to make Sotopia's venv with")
    args = parser.parse_args()
    unknown = set(args.only) - set(ROWS)
    if unknown:
        parser.error(f"unknown rows {sorted(unknown)}; choose from {','.join(ROWS)}")
    if args.repeats is None:
        args.repeats = 1 if args.quick else 3
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind: stop every process
    python = ensure_sotopia_venv(args.sotopia_venv, base_python(args.sotopia_python))
    table = asyncio.run(run(args, python, args.sotopia_venv))
    print()
    print(table.render())
    for note in table.notes:
        print(f"- {note}")


if __name__ == "__main__":
    main()
