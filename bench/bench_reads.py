"""List queries over HTTP: a small page, and every record with every field in pages.

Run: python -m bench.bench_reads [--repeat N]
Starts an embedded Redis holding 1,000 episodes, agents, scenarios and relationships (half
written as Sotopia writes them, half as Parley does) and one `parley serve --no-worker` process.
Prints p50/p99 of one page of 50 selecting a few fields, per kind (episodes per writer), and the
total time to read all 1,000 records of a kind with every field, 50 per page: the first pass
(nothing read before), and the median of five more (finished answers may be reused then); and
the median of five in pages of 100, the largest the API gives, with the API process's CPU time
for each of those pages.
"""

import time
from pathlib import Path
from typing import Annotated, Any

import httpx

from bench.common import bench_redis, cpu_seconds, percentile, rss_mib, run_main
from bench.support.processes import api_process, parley_env
from bench.support.read_world import write_world
from parley.resolvers.pagination import MAX_PAGE_SIZE

PAGE = 50

EPISODE_FIELDS = """
  id status statusHistory { status at sequence attempt reason resumedFromTurn }
  attempt sequence progress { turn maxTurns } scenarioId agentIds agentModels judgeModel
  turnOrder evaluationDimensionListId tag
  turns { turn agentIndex speaker actionType argument to sequence at }
  messages rewards { agentIndex overall dimensions { dimension score } }
  reasoning error terminationReason generationStats createdAt startedAt finishedAt
"""
AGENT_FIELDS = """
  id name firstName lastName age occupation gender genderPronoun publicInfo bigFive moralValues
  schwartzPersonalValues personalityAndValues decisionMakingStyle secret mbti modelId tag
"""
SCENARIO_FIELDS = """
  id scenario agentGoals codename source relationship ageConstraint occupationConstraint tag
"""
RELATIONSHIP_FIELDS = "id relationship backgroundStory tag agentId otherAgentId"


def page_query(root: str, filter_type: str, fields: str, size: int = PAGE) -> str:
    return (
        f"query($after: String, $filter: {filter_type}) {{ {root}(first: {size}, after: $after, "
        f"filter: $filter) {{ totalCount pageInfo {{ hasNextPage endCursor }} "
        f"nodes {{ {fields} }} }} }}"
    )


SMALL = {
    "episodes": ("EpisodeFilter", "id status tag"),
    "agents": ("AgentFilter", "id name tag"),
    "scenarios": ("ScenarioFilter", "id codename tag"),
    "relationships": ("RelationshipFilter", "id relationship tag"),
}
FULL = {
    "episodes": ("EpisodeFilter", EPISODE_FIELDS),
    "agents": ("AgentFilter", AGENT_FIELDS),
    "scenarios": ("ScenarioFilter", SCENARIO_FIELDS),
    "relationships": ("RelationshipFilter", RELATIONSHIP_FIELDS),
}
TRIVIAL = "{ __typename }"
NESTED = page_query(
    "episodes",
    "EpisodeFilter",
    "id status agents { id name } scenario { id codename } rewards { agent { id } overall }",
)


async def post(http: httpx.AsyncClient, query: str, variables: dict[str, Any]) -> dict[str, Any]:
    response = await http.post("/graphql", json={"query": query, "variables": variables})
    body: dict[str, Any] = response.json()
    assert response.status_code == 200 and "errors" not in body, response.text[:500]
    return body


async def timed_page(
    http: httpx.AsyncClient, query: str, filter: dict[str, Any] | None, n: int
) -> list[float]:
    times = []
    for _ in range(n):
        began = time.perf_counter()
        await post(http, query, {"filter": filter})
        times.append(time.perf_counter() - began)
    return times


async def read_all(http: httpx.AsyncClient, root: str, query: str) -> tuple[float, int, int]:
    """Seconds to read every record of `root` page by page, how many, and the response bytes."""
    began = time.perf_counter()
    after: str | None = None
    count = size = 0
    while True:
        response = await http.post("/graphql", json={"query": query, "variables": {"after": after}})
        body = response.json()
        assert response.status_code == 200 and "errors" not in body, response.text[:500]
        size += len(response.content)
        connection = body["data"][root]
        count += len(connection["nodes"])
        if not connection["pageInfo"]["hasNextPage"]:
            break
        after = connection["pageInfo"]["endCursor"]
    return time.perf_counter() - began, count, size


def ms(values: list[float], q: float) -> str:
    return f"{percentile([v * 1000 for v in values], q):7.2f}"


async def main(repeat: Annotated[int, "requests per small page"] = 200) -> None:
    async with bench_redis() as (redis_url, tmp, client):
        await write_world(client)
        env = parley_env(redis_url, tmp / "data", seed="false")
        with api_process(env, Path(tmp) / "api.log", "--no-worker") as api:
            async with httpx.AsyncClient(base_url=api.url, timeout=60) as http:
                print(f"one page of {PAGE} ({repeat} requests each)      p50 ms   p99 ms")
                await timed_page(http, TRIVIAL, None, 10)
                times = await timed_page(http, TRIVIAL, None, repeat)
                print(f"  {'(a trivial query, for scale)':40} {ms(times, 50)}  {ms(times, 99)}")
                cases: list[tuple[str, str, dict[str, Any] | None]] = [
                    ("episodes by Sotopia  id status tag", "episodes", {"tag": "bench-sotopia"}),
                    ("episodes by Parley   id status tag", "episodes", {"tag": "bench-parley"}),
                    ("agents               id name tag", "agents", None),
                    ("scenarios            id codename tag", "scenarios", None),
                    ("relationships        id relationship tag", "relationships", None),
                ]
                for label, root, filter in cases:
                    query = page_query(root, *SMALL[root])
                    await timed_page(http, query, filter, 10)  # warm up
                    times = await timed_page(http, query, filter, repeat)
                    print(f"  {label:40} {ms(times, 50)}  {ms(times, 99)}")
                await timed_page(http, NESTED, None, 5)
                times = await timed_page(http, NESTED, None, max(20, repeat // 5))
                label = "episodes + agents, scenario, reward agents"
                print(f"  {label:40} {ms(times, 50)}  {ms(times, 99)}")
                print(f"API process RSS before the full reads: {rss_mib(api.pid):.0f} MiB")
                print(
                    f"all records, every field, {PAGE} per page: first pass, median of 5 more; "
                    f"then {MAX_PAGE_SIZE} per page (the largest), median of 5"
                )
                for root, (filter_type, fields) in FULL.items():
                    query = page_query(root, filter_type, fields)
                    first, count, size = await read_all(http, root, query)
                    passes = [await read_all(http, root, query) for _ in range(5)]
                    total = sorted(seconds for seconds, _, _ in passes)[2]
                    largest = page_query(root, filter_type, fields, MAX_PAGE_SIZE)
                    cpu = cpu_seconds(api.pid)
                    passes = [await read_all(http, root, largest) for _ in range(5)]
                    pages = 5 * -(-count // MAX_PAGE_SIZE)
                    per_page = (cpu_seconds(api.pid) - cpu) / pages
                    in_largest = sorted(seconds for seconds, _, _ in passes)[2]
                    print(
                        f"  {root:14} {count:5} records {size / 2**20:6.2f} MiB "
                        f"{first * 1000:8.1f} ms {total * 1000:8.1f} ms {in_largest * 1000:8.1f} ms"
                        f" (API CPU {per_page * 1000:.1f} ms a page)"
                    )
                print(f"API process RSS after: {rss_mib(api.pid):.0f} MiB")


if __name__ == "__main__":
    run_main(main, __doc__)
