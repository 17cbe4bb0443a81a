"""Default settings, side by side: many short episodes against one, as an outside harness runs
them.

Run: python -m bench.bench_defaults [--episodes 200] [--turns 5] [--delay 0.2] [--repeat 3]
         [--start batch|each] [--wait store|poll|subscribe] [--model custom|openai]

Each repeat starts an embedded Redis, the fake LLM in its own process, an API without a worker
and one `parley worker` with no flags and no models file, so every limit is a default. It runs
one episode as a warm-up, then one episode alone (timed), then the batch at once (timed), and
prints the ratio. An episode is `--turns` turns of 2 agents and the judge (one call per agent, at
once): turns + 2 calls, turns + 1 of them one after another.

How the batch is started and followed is what an outside harness may do differently from
`bench/bench_adaptive.py`:

- `--start batch`: one `startSimulations` of every episode; `each`: one `startSimulation` per
  episode, all sent at once over one HTTP client.
- `--wait store`: count the ended episodes in Redis (bench_adaptive reads them); `poll`: ask
  the API for that count (each every 0.05 s); `subscribe`: one `episodeStatus` subscription
  per episode, over its own websocket, until it completes.
- `--model custom`: `custom/fake@<url>`; `openai`: an OpenAI model name with OPENAI_BASE_URL
  and OPENAI_API_KEY pointing at the fake.

`--workers N` starts N workers instead of one (to see what one process's CPU costs).

Besides the times it prints each process's CPU seconds over the batch (worker, API, Redis, fake),
the calls the fake served and the requests it had in flight over time.
"""

import asyncio
import json
import os
import signal
import statistics
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Annotated, Any

import httpx
import redis.asyncio as redis
import websockets

from bench.common import bench_redis, cpu_seconds, run_main
from bench.support.fake_llm import fake_llm_process
from bench.support.polling import eventually
from bench.support.processes import api_process, parley_env, worker_process
from bench.support.simulation import make_world
from parley.storage.embedded import free_port
from parley.storage.models import EpisodeLog, EpisodeStatus

START_ONE = """
mutation($input: StartSimulationInput!) {
  startSimulation(input: $input) { episode { id } userErrors { message } }
}"""
START_MANY = """
mutation($inputs: [StartSimulationInput!]!) {
  startSimulations(inputs: $inputs) { episodes { id } userErrors { message } }
}"""
ENDED_COUNT = """
query($tag: String!) {
  completed: episodes(filter: {tag: $tag, status: COMPLETED}, first: 0) { totalCount }
  failed: episodes(filter: {tag: $tag, status: FAILED}, first: 0) { totalCount }
}"""
FOLLOW = """subscription($id: ID!) { episodeStatus(id: $id) { kind status } }"""
SAMPLE_SECONDS = 0.25
"""How often the fake's requests in flight are sampled."""
LOOK_SECONDS = 0.05
"""How often the ended episodes are counted (a count is one search, no record read)."""
QUANTILES = (0.1, 0.5, 0.9, 1.0)
OPENAI_NAME = "gpt-4o-mini"


@dataclass
class Batch:
    seconds: float = 0.0
    completed: int = 0
    failed: int = 0
    served: int = 0
    cpu: dict[str, float] = field(default_factory=dict)
    trace: list[tuple[float, int]] = field(default_factory=list)
    phases: dict[str, list[float]] = field(default_factory=dict)
    """Per episode, seconds from its start to each step (stored times)."""
    commands: dict[str, tuple[int, float]] = field(default_factory=dict)
    """Redis's calls and CPU seconds per command over the batch (INFO commandstats)."""


@dataclass
class Stack:
    """The processes of one repeat and how to reach them."""

    api_url: str
    fake_base: str
    pids: dict[str, int]
    http: httpx.AsyncClient
    redis: redis.Redis


async def graphql(http: httpx.AsyncClient, url: str, query: str, variables: dict[str, Any]) -> Any:
    response = await http.post(f"{url}/graphql", json={"query": query, "variables": variables})
    body = response.json()
    if response.status_code != 200 or "errors" in body:
        raise RuntimeError(f"{response.status_code}: {body}")
    return body["data"]


async def start(stack: Stack, inputs: list[dict[str, Any]], how: str) -> list[str]:
    """The episodes' ids once every start has been answered."""
    if how == "batch":
        made = (await graphql(stack.http, stack.api_url, START_MANY, {"inputs": inputs}))[
            "startSimulations"
        ]
        assert not made["userErrors"], made
        return [e["id"] for e in made["episodes"]]

    async def one(variables: dict[str, Any]) -> str:
        made = (await graphql(stack.http, stack.api_url, START_ONE, {"input": variables}))[
            "startSimulation"
        ]
        assert not made["userErrors"], made
        return str(made["episode"]["id"])

    return list(await asyncio.gather(*(one(i) for i in inputs)))


async def ended_stored(stack: Stack, tag: str) -> tuple[int, int]:
    """(completed, failed) of the tag's episodes, counted by a search in Redis (no records
    read: reading 200 of them every 0.25 s took the harness up to half a second a look)."""
    counts = []
    for status in (EpisodeStatus.COMPLETED, EpisodeStatus.FAILED):
        query = EpisodeLog.find((EpisodeLog.tag == tag) & (EpisodeLog.status == status))
        counts.append(await query.count())
    return counts[0], counts[1]


async def ended_polled(stack: Stack, tag: str) -> tuple[int, int]:
    """(completed, failed) of the tag's episodes, as the API counts them."""
    data = await graphql(stack.http, stack.api_url, ENDED_COUNT, {"tag": tag})
    return data["completed"]["totalCount"], data["failed"]["totalCount"]


async def follow(url: str, episode_id: str) -> str:
    """The last status an `episodeStatus` subscription sends before it completes."""
    ws_url = url.replace("http://", "ws://") + "/graphql"
    last = ""
    async with websockets.connect(
        ws_url,
        subprotocols=[websockets.Subprotocol("graphql-transport-ws")],
        open_timeout=60,
        ping_interval=None,
    ) as ws:
        await ws.send(json.dumps({"type": "connection_init"}))
        assert json.loads(await ws.recv())["type"] == "connection_ack"
        payload = {"query": FOLLOW, "variables": {"id": episode_id}}
        await ws.send(json.dumps({"type": "subscribe", "id": "1", "payload": payload}))
        async for raw in ws:
            message = json.loads(raw)
            if message["type"] == "complete":
                return last
            if message["type"] == "next":
                last = message["payload"]["data"]["episodeStatus"]["status"]
    return last


async def sample_fake(stack: Stack, began: float, trace: list[tuple[float, int]]) -> None:
    while True:
        stats = await fake_stats(stack)
        trace.append((time.perf_counter() - began, stats["in_flight"]))
        await asyncio.sleep(SAMPLE_SECONDS)


async def fake_stats(stack: Stack) -> dict[str, int]:
    response = await stack.http.get(stack.fake_base.removesuffix("/v1") + "/_fake/stats")
    stats: dict[str, int] = response.json()
    return stats


async def run_batch(
    stack: Stack, one: dict[str, Any], count: int, tag: str, how: str, wait: str
) -> Batch:
    """Start `count` episodes tagged `tag`, wait until each has ended; time, CPU and the fake's
    trace."""
    batch = Batch()
    inputs = [{**one, "tag": tag}] * count
    cpu = {name: cpu_seconds(pid) for name, pid in stack.pids.items()}
    served = (await fake_stats(stack))["served"]
    commands = await command_stats(stack.redis)
    began, began_at = time.perf_counter(), time.time()
    sampler = asyncio.create_task(sample_fake(stack, began, batch.trace))
    try:
        ids = await start(stack, inputs, how)
        if wait == "subscribe":
            final = await asyncio.gather(*(follow(stack.api_url, i) for i in ids))
            batch.completed = sum(s == "COMPLETED" for s in final)
            batch.failed = len(final) - batch.completed
        else:
            read = ended_stored if wait == "store" else ended_polled
            batch.completed, batch.failed = await eventually(
                partial(read, stack, tag),
                lambda ended: sum(ended) >= count,
                timeout=600,
                interval=LOOK_SECONDS,
            )
        batch.seconds = time.perf_counter() - began
    finally:
        sampler.cancel()
    batch.served = (await fake_stats(stack))["served"] - served
    batch.cpu = {name: cpu_seconds(pid) - cpu[name] for name, pid in stack.pids.items()}
    batch.phases = await phases(tag, began_at)
    after = await command_stats(stack.redis)
    batch.commands = {
        name: (calls - commands.get(name, (0, 0.0))[0], cpu - commands.get(name, (0, 0.0))[1])
        for name, (calls, cpu) in after.items()
    }
    return batch


async def command_stats(client: redis.Redis) -> dict[str, tuple[int, float]]:
    """Per Redis command, its calls and CPU seconds so far."""
    stats = await client.info("commandstats")
    return {
        name.removeprefix("cmdstat_"): (int(v["calls"]), float(v["usec"]) / 1e6)
        for name, v in stats.items()
    }


async def phases(tag: str, began_at: float) -> dict[str, list[float]]:
    """Seconds from the batch's start to each episode's steps, from their stored times: when it
    was running, when it had its first turn and its last, when it was judged."""
    found: dict[str, list[float]] = {"running": [], "first turn": [], "last turn": []}
    found |= {"evaluating": [], "ended": []}
    for episode in await EpisodeLog.find(EpisodeLog.tag == tag).all():
        at = {change.status: change.at for change in episode.status_history}
        found["running"].append(at[EpisodeStatus.RUNNING] - began_at)
        found["first turn"].append(episode.turns[0].at - began_at)
        found["last turn"].append(episode.turns[-1].at - began_at)
        found["evaluating"].append(at[EpisodeStatus.EVALUATING] - began_at)
        found["ended"].append(max(at.values()) - began_at)
    return found


@contextmanager
def profiled(pid: int, out: str) -> Iterator[None]:
    """py-spy (installed apart: `pip install py-spy`) recording `pid` to `out` (folded
    stacks) for the block; nothing when `out` is empty."""
    if not out:
        yield
        return
    command = ["py-spy", "record", "-p", str(pid), "-o", out, "-f", "raw", "-r", "200"]
    spy = subprocess.Popen([*command, "--nonblocking"], stdout=subprocess.DEVNULL)
    time.sleep(1)  # attached
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)
        spy.wait(30)


async def one_repeat(
    episodes: int,
    turns: int,
    delay: float,
    how: str,
    wait: str,
    model_kind: str,
    profile: str,
    workers: int,
) -> tuple[Batch, Batch]:
    """Fresh processes; a warm-up episode, then one episode alone, then the batch."""
    async with bench_redis() as (redis_url, tmp, client):
        with fake_llm_process(free_port(), delay) as (base, fake_pid):
            env = parley_env(redis_url, tmp / "data", seed="false")
            env.pop("PARLEY_MODELS_FILE", None)
            if model_kind == "openai":
                env |= {"OPENAI_BASE_URL": base, "OPENAI_API_KEY": "bench"}
                model = OPENAI_NAME
            else:
                model = f"custom/fake@{base}"
            scenario, agents = await make_world("defaults")
            one = {
                "scenarioId": scenario,
                "agentIds": agents,
                "agentModels": [model],
                "judgeModel": model,
                "maxTurns": turns,
            }
            redis_pid = int((tmp / "redis.pid").read_text())
            limits = httpx.Limits(max_connections=None)
            with ExitStack() as running:
                api = running.enter_context(api_process(env, tmp / "api.log", "--no-worker"))
                started = [
                    running.enter_context(worker_process(env, tmp / f"worker{n}.log", None))
                    for n in range(workers)
                ]
                worker = started[0]
                async with httpx.AsyncClient(timeout=120, limits=limits) as http:
                    pids = {f"worker {n + 1}": w.pid for n, w in enumerate(started)}
                    if workers == 1:
                        pids = {"worker": worker.pid}
                    pids |= {
                        "api": api.pid,
                        "redis": redis_pid,
                        "fake": fake_pid,
                        "this harness": os.getpid(),
                    }
                    stack = Stack(api.url, base, pids, http, client)
                    await run_batch(stack, one, 1, "warm-up", how, wait)
                    single = await run_batch(stack, one, 1, "one", how, wait)
                    with profiled(worker.pid, profile):
                        many = await run_batch(stack, one, episodes, "batch", how, wait)
                    return single, many


def trace_line(trace: list[tuple[float, int]], points: int = 16) -> str:
    every = trace[-1][0] / points if trace else 1.0
    picked, next_at = [], 0.0
    for at, in_flight in trace:
        if at >= next_at:
            picked.append(f"{at:.1f}s {in_flight}")
            next_at = at + every
    return " | ".join(picked)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


async def main(
    episodes: int = 200,
    turns: Annotated[int, "maxTurns: calls per episode are turns + 2 (the judge's)"] = 5,
    delay: Annotated[float, "seconds the fake takes per call"] = 0.2,
    repeat: int = 3,
    start: Annotated[
        str, "batch (one startSimulations) or each (a startSimulation each)"
    ] = "batch",
    wait: Annotated[str, "store (Redis), poll (the API) or subscribe (episodeStatus)"] = "store",
    model: Annotated[str, "custom (custom/fake@url) or openai (OPENAI_BASE_URL)"] = "custom",
    profile: Annotated[str, "record the worker with py-spy over each batch to PROFILE-<run>"] = "",
    workers: Annotated[int, "parley worker processes (the default stack has one)"] = 1,
) -> None:
    print(
        f"{episodes} episodes of {turns} turns + 2 judge calls at {delay * 1000:.0f} ms; "
        f"start {start}, wait {wait}, model {model}, {workers} worker(s); load average {load()}"
    )
    ratios = []
    for n in range(repeat):
        out = f"{profile}-{n + 1}" if profile else ""
        single, many = await one_repeat(episodes, turns, delay, start, wait, model, out, workers)
        ratio = many.seconds / single.seconds
        ratios.append(ratio)
        cpu = ", ".join(f"{name} {seconds:.2f}" for name, seconds in many.cpu.items())
        print(
            f"run {n + 1}: one episode {single.seconds:.2f} s, {episodes} at once "
            f"{many.seconds:.2f} s (ratio {ratio:.2f}x), {many.completed} completed, "
            f"{many.failed} failed, {many.served} calls served"
        )
        print(f"  CPU seconds over the batch: {cpu}; load average {load()}")
        print(f"  in flight at the fake: {trace_line(many.trace)}")
        busiest = sorted(many.commands.items(), key=lambda item: -item[1][1])[:6]
        shown = ", ".join(f"{name} {calls} calls {cpu:.2f} s" for name, (calls, cpu) in busiest)
        print(f"  Redis's busiest commands: {shown}")
        for step, seconds in many.phases.items():
            ordered = sorted(seconds)
            cuts = [ordered[min(len(ordered) - 1, int(q * len(ordered)))] for q in QUANTILES]
            shown = " ".join(f"{c:.2f}" for c in cuts)
            print(f"  {step:>10} at (s from the start; 10/50/90/100th percentile): {shown}")
    spread = f"{min(ratios):.2f}-{max(ratios):.2f}x"
    print(f"ratio: median {statistics.median(ratios):.2f}x, range {spread}")


if __name__ == "__main__":
    run_main(main, __doc__)
