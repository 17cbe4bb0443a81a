"""A study's agreement figures through the API: what `ratingStudy { agreement }` costs a client
and the server, computed afresh, asked again unchanged, and asked by several clients at once.

Run: python -m bench.bench_study_agreement [--episodes 500] [--raters 3] [--turns 20]
     [--repeat 5] [--clients 8]

Writes `episodes` completed episodes of two agents (each `turns` turns of about 300 characters,
scored by a judge panel of two runs) into an embedded Redis, starts one `parley serve
--no-worker`, makes a study of all of them with `raters` raters each rating every episode (Sotopia's
seven dimensions), and saves every rating through `saveRating`. Then, over HTTP:
- the first request (the server's first figures: imports scipy),
- after one more rating: the figures computed again, `repeat` times,
- nothing changed: the kept figures, `repeat` times, then `clients` requests at once and how
  long /healthz waits meanwhile (what the reads, tables and digest of a kept answer hold the
  server's event loop for),
- after one more rating, `clients` requests at once: their wall time, and the server's CPU
  seconds over them (one computation, or one per request).
Last, in this process, what reading the study's episodes costs: whole records (conversations
included) against the scores alone.
"""

import asyncio
import random
import statistics
import time
from pathlib import Path
from typing import Any

import httpx

from bench.common import bench_redis, cpu_seconds, run_main
from bench.support import people
from bench.support.processes import api_process, parley_env
from bench.support.simulation import make_world
from parley.client.study import RESULTS
from parley.engine.types import OVERALL_SCORE, SOTOPIA_DIMENSIONS, ActionType, JudgeRun
from parley.storage.models import EpisodeLog, EpisodeStatus, StoredTurn
from parley.storage.records import get_or_none
from parley.storage.studies import StudyStore

CREATE = """mutation($input: CreateRatingStudyInput!) {
  createRatingStudy(input: $input) { study { id } raterLinks { token } userErrors { message } }
}"""
SAVE = """mutation($input: SaveRatingInput!) {
  saveRating(input: $input) { stored userErrors { message } }
}"""
MODELS = ["model-a", "model-b", "model-c", "model-d"]
LINE = "I hear you, and I think we can split the difference on the ferry schedule this week. " * 4


def reward(rng: random.Random) -> tuple[float, dict[str, float]]:
    scores = {d.name: float(rng.randint(d.range_low, d.range_high)) for d in SOTOPIA_DIMENSIONS}
    overall = sum(scores.values()) / len(scores)
    return (overall, {**scores, OVERALL_SCORE: overall})


async def write_episodes(count: int, turns: int) -> list[str]:
    scenario, people = await make_world("bench-agreement")
    rng = random.Random(5)
    made = []
    for n in range(count):
        episode = EpisodeLog(
            environment=scenario,
            agents=people,
            tag="bench-agreement",
            models=["panel(MEAN): judge x2", MODELS[n % 4], MODELS[(n + 1) % 4]],
            status=EpisodeStatus.COMPLETED,
            turns=[
                StoredTurn(
                    turn=t,
                    agent_index=t % 2,
                    agent_name=f"Agent {t % 2}",
                    action_type=ActionType.SPEAK,
                    argument=LINE,
                    sequence=t + 2,
                )
                for t in range(turns)
            ],
            rewards=[reward(rng), reward(rng)],
            judge_runs=[
                JudgeRun(model="judge", repeat=r, rewards=[reward(rng), reward(rng)])
                for r in range(2)
            ],
            created_at=time.time(),
        )
        await episode.save()
        made.append(str(episode.pk))
    return made


async def post(http: httpx.AsyncClient, query: str, variables: dict[str, Any]) -> dict[str, Any]:
    response = await http.post("/graphql", json={"query": query, "variables": variables})
    body: dict[str, Any] = response.json()
    assert response.status_code == 200 and "errors" not in body, response.text[:500]
    data: dict[str, Any] = body["data"]
    return data


async def rate(
    http: httpx.AsyncClient,
    study: str,
    rater: int,
    token: str,
    position: int,
    seed: int,
    revision: int = 0,
) -> None:
    rng = random.Random(seed)
    scores = [
        (a, d.name, rng.randint(d.range_low, d.range_high))
        for a in range(2)
        for d in SOTOPIA_DIMENSIONS
    ]
    fields = people.rating(study, rater, token, position, scores, revision)
    saved = (await post(http, SAVE, {"input": fields}))["saveRating"]
    assert saved["stored"], saved


async def timed(http: httpx.AsyncClient, study: str) -> float:
    began = time.perf_counter()
    await post(http, RESULTS, {"id": study})
    return time.perf_counter() - began


async def healthz(http: httpx.AsyncClient) -> float:
    """How long the server takes to answer its health check: how free its event loop is."""
    began = time.perf_counter()
    response = await http.get("/healthz")
    assert response.status_code == 200, response.text
    return time.perf_counter() - began


def seconds(values: list[float]) -> str:
    return f"median {statistics.median(values):.2f} s, best {min(values):.2f} s (n={len(values)})"


async def main(
    episodes: int = 500, raters: int = 3, turns: int = 20, repeat: int = 5, clients: int = 8
) -> None:
    async with bench_redis() as (redis_url, tmp, client):
        ids = await write_episodes(episodes, turns)
        env = parley_env(redis_url, tmp / "data", seed="false")
        with api_process(env, Path(tmp) / "api.log", "--no-worker") as api:
            async with httpx.AsyncClient(base_url=api.url, timeout=300) as http:
                fields = {
                    "name": "bench",
                    "episodes": {"ids": ids},
                    "raters": raters,
                    "ratersPerEpisode": raters,
                }
                made = (await post(http, CREATE, {"input": fields}))["createRatingStudy"]
                assert not made["userErrors"], made
                study = made["study"]["id"]
                tokens = [link["token"] for link in made["raterLinks"]]
                began = time.perf_counter()
                last = episodes - 1  # rater 0's last episode: saved again for each change below
                for rater, token in enumerate(tokens):
                    positions = range(last if rater == 0 else episodes)
                    for start in range(0, len(positions), 16):
                        await asyncio.gather(
                            *(
                                rate(http, study, rater, token, p, rater * episodes + p)
                                for p in positions[start : start + 16]
                            )
                        )
                ratings = raters * episodes - 1
                print(
                    f"{episodes} episodes x 2 agents x {len(SOTOPIA_DIMENSIONS)} dimensions, "
                    f"{raters} raters: {ratings} ratings saved over HTTP in "
                    f"{time.perf_counter() - began:.1f} s"
                )
                print(f"first request (imports scipy): {await timed(http, study):.2f} s")
                changed = []
                for n in range(repeat):
                    await rate(http, study, 0, tokens[0], last, 10_000 + n, revision=n)
                    changed.append(await timed(http, study))
                print(f"after a new rating (computed again): {seconds(changed)}")
                kept = [await timed(http, study) for _ in range(repeat)]
                print(f"nothing changed (kept figures): {seconds(kept)}")
                began = time.perf_counter()
                asked = [asyncio.create_task(timed(http, study)) for _ in range(clients)]
                health = []
                while not all(request.done() for request in asked):
                    health.append(await healthz(http))
                await asyncio.gather(*asked)
                print(
                    f"{clients} clients at once, nothing changed: "
                    f"{time.perf_counter() - began:.2f} s wall; /healthz meanwhile "
                    f"{seconds(health)}, worst {max(health):.2f} s"
                )
                await rate(http, study, 0, tokens[0], last, 20_000, revision=repeat)
                cpu = cpu_seconds(api.pid)
                began = time.perf_counter()
                await asyncio.gather(*(timed(http, study) for _ in range(clients)))
                wall = time.perf_counter() - began
                used = cpu_seconds(api.pid) - cpu
                print(
                    f"{clients} clients at once after a new rating: {wall:.2f} s wall, "
                    f"{used:.2f} s of the server's CPU"
                )
        began = time.perf_counter()
        await asyncio.gather(*(get_or_none(EpisodeLog, pk) for pk in ids))
        whole = time.perf_counter() - began
        began = time.perf_counter()
        await StudyStore(client).scored_episodes(ids)
        scored = time.perf_counter() - began
        print(
            f"reading the {episodes} episodes in this process: whole records {whole:.2f} s, "
            f"scores alone {scored:.2f} s"
        )


if __name__ == "__main__":
    run_main(main, __doc__)
