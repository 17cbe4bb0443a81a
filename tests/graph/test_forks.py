"""forkEpisode over real HTTP from a served app with its worker: a family of forks read back as
a tree, listed by parent, refused with coded errors, carried through an export and an import,
and made by `parley fork` with --follow."""

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.support.fake_llm import FakeLLM
from bench.support.processes import parley_env, run
from bench.support.simulation import make_world
from tests.support.server import graphql, serve

START = """
mutation($input: StartSimulationInput!) {
  startSimulation(input: $input) { episode { id } userErrors { message } }
}"""
FORK = """
mutation($input: ForkEpisodeInput!) {
  forkEpisode(input: $input) {
    episode { id status parentId forkedAtTurn }
    userErrors { field message code }
  }
}"""
FAMILY = """
query($id: ID!) {
  episode(id: $id) {
    id parentId forkedAtTurn agentModels
    parent { id }
    forks { id }
    family {
      id parentId forkedAtTurn agentModels
      forkChange {
        seatModels { seat model } injectMessage { text to } goals { seat goal }
        profiles { seat occupation secret age }
      }
      turns { turn speaker argument }
    }
  }
}"""
RESULTS = """
query($tag: String!) {
  episodeResults(filter: {tag: $tag}, groupBy: [MODEL]) { groups { model scored } }
}"""
FORKS_OF = """
query($parent: ID!) { episodes(filter: {parentId: $parent}) { nodes { id forkedAtTurn } } }"""


@pytest.fixture(scope="module")
async def served(
    redis_url: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[str, Path]]:
    directory = tmp_path_factory.mktemp("forks")
    async with serve(redis_url, directory, worker=True) as url:
        yield url, directory


async def ask(url: str, query: str, variables: dict[str, Any]) -> dict[str, Any]:
    return await graphql(url, query, variables)


async def finished(url: str, episode_id: str) -> None:
    query = "query($id: ID!) { episode(id: $id) { status error } }"
    async with asyncio.timeout(60):
        while True:
            episode = (await ask(url, query, {"id": episode_id}))["episode"]
            if episode["status"] == "COMPLETED":
                return
            assert episode["status"] not in ("FAILED", "CANCELLED"), episode
            await asyncio.sleep(0.05)


async def parent_episode(url: str, fake_llm: FakeLLM, tag: str) -> str:
    scenario, agents = await make_world(tag)
    fields = {
        "scenarioId": scenario,
        "agentIds": agents,
        "agentModels": [fake_llm.model_name("alpha")],
        "judgeModel": fake_llm.model_name("judge"),
        "maxTurns": 4,
        "tag": tag,
    }
    payload = (await ask(url, START, {"input": fields}))["startSimulation"]
    assert payload["userErrors"] == []
    episode_id: str = payload["episode"]["id"]
    await finished(url, episode_id)
    return episode_id


async def forked(url: str, request: dict[str, Any]) -> str:
    payload = (await ask(url, FORK, {"input": request}))["forkEpisode"]
    assert payload["userErrors"] == [], payload
    episode = payload["episode"]
    assert episode["status"] == "QUEUED"
    assert (episode["parentId"], episode["forkedAtTurn"]) == (
        request["episodeId"],
        request["atTurn"],
    )
    episode_id: str = episode["id"]
    await finished(url, episode_id)
    return episode_id


async def test_a_family_of_forks_reads_back_as_a_tree(
    served: tuple[str, Path], fake_llm: FakeLLM
) -> None:
    url, _ = served
    tag = f"forks-{uuid.uuid4().hex[:8]}"
    root = await parent_episode(url, fake_llm, tag)
    beta = fake_llm.model_name("beta")
    child = await forked(
        url,
        {
            "episodeId": root,
            "atTurn": 2,
            "seatModels": [{"seat": 1, "model": beta}],
            "injectMessage": {"text": "The restaurant closes early."},
        },
    )
    grandchild = await forked(url, {"episodeId": child, "atTurn": 3})
    sibling = await forked(
        url,
        {
            "episodeId": root,
            "atTurn": 1,
            "goals": [{"seat": 0, "goal": "Eat alone"}],
            "profiles": [{"seat": 1, "occupation": "Chef"}],
        },
    )

    read = (await ask(url, FAMILY, {"id": grandchild}))["episode"]
    assert read["parent"] == {"id": child} and read["forks"] == []
    family = read["family"]
    assert [e["id"] for e in family] == [root, child, grandchild, sibling]
    assert [e["parentId"] for e in family] == [None, root, child, root]
    assert [e["forkedAtTurn"] for e in family] == [None, 2, 3, 1]
    by_id = {e["id"]: e for e in family}
    alpha = fake_llm.model_name("alpha")
    assert by_id[child]["agentModels"] == [alpha, beta]
    assert by_id[grandchild]["agentModels"] == [alpha, beta]  # the fork's setup, unchanged
    assert by_id[child]["forkChange"] == {
        "seatModels": [{"seat": 1, "model": beta}],
        "injectMessage": {"text": "The restaurant closes early.", "to": []},
        "goals": [],
        "profiles": [],
    }
    assert by_id[sibling]["forkChange"]["goals"] == [{"seat": 0, "goal": "Eat alone"}]
    assert by_id[sibling]["forkChange"]["profiles"] == [
        {"seat": 1, "occupation": "Chef", "secret": None, "age": None}
    ]
    assert by_id[root]["forkChange"] is None
    assert by_id[child]["turns"][:2] == by_id[root]["turns"][:2]
    assert by_id[grandchild]["turns"][:3] == by_id[child]["turns"][:3]
    # Every member answers the same family, and a parent lists its own forks only.
    assert [e["id"] for e in (await ask(url, FAMILY, {"id": root}))["episode"]["family"]] == [
        root,
        child,
        grandchild,
        sibling,
    ]
    assert [e["id"] for e in (await ask(url, FAMILY, {"id": root}))["episode"]["forks"]] == [
        child,
        sibling,
    ]
    listed = (await ask(url, FORKS_OF, {"parent": root}))["episodes"]["nodes"]
    assert sorted((e["id"], e["forkedAtTurn"]) for e in listed) == sorted(
        [(child, 2), (sibling, 1)]
    )
    # Results count each fork as an episode of its own, with its own models.
    groups = (await ask(url, RESULTS, {"tag": tag}))["episodeResults"]["groups"]
    assert {g["model"]: g["scored"] for g in groups} == {alpha: 6, beta: 2}  # seat scores


async def test_bad_forks_get_coded_errors(served: tuple[str, Path], fake_llm: FakeLLM) -> None:
    url, _ = served
    tag = f"forks-{uuid.uuid4().hex[:8]}"
    root = await parent_episode(url, fake_llm, tag)
    beta = fake_llm.model_name("beta")
    cases = [
        ({"episodeId": "no-such-episode", "atTurn": 0}, ("input.episodeId", "NOT_FOUND")),
        ({"episodeId": root, "atTurn": 5}, ("input.atTurn", "INVALID")),
        (
            {"episodeId": root, "atTurn": 1, "seatModels": [{"seat": 0, "model": "nope/x"}]},
            ("input.seatModels.0.model", "INVALID"),
        ),
        (
            {"episodeId": root, "atTurn": 1, "seatModels": [{"seat": 7, "model": beta}]},
            ("input.seatModels.0.seat", "INVALID"),
        ),
        (
            {"episodeId": root, "atTurn": 1, "injectMessage": {"text": "hi", "to": ["Nobody"]}},
            ("input.injectMessage.to.0", "INVALID"),
        ),
        (
            {"episodeId": root, "atTurn": 1, "injectMessage": {"text": ""}},
            ("input.injectMessage.text", "INVALID"),
        ),
    ]
    for request, expected in cases:
        payload = (await ask(url, FORK, {"input": request}))["forkEpisode"]
        assert payload["episode"] is None
        assert [(".".join(e["field"]), e["code"]) for e in payload["userErrors"]] == [expected]
    forks = (await ask(url, FORKS_OF, {"parent": root}))["episodes"]["nodes"]
    assert forks == []


async def test_an_export_and_an_import_keep_the_links(
    served: tuple[str, Path], fake_llm: FakeLLM
) -> None:
    url, _ = served
    tag = f"forks-{uuid.uuid4().hex[:8]}"
    root = await parent_episode(url, fake_llm, tag)
    child = await forked(url, {"episodeId": root, "atTurn": 2})
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        exported = await http.get("/export", params={"kind": "episodes", "tag": tag})
        assert exported.status_code == 200
        lines = [json.loads(line) for line in exported.text.splitlines()]
        added = {line["episode_id"]: line["parley"] for line in lines}  # Parley's own fields
        assert added[child]["parent_id"] == root and added[child]["forked_at_turn"] == 2
        assert added[root]["parent_id"] == "" and added[root]["forked_at_turn"] is None
        for episode_id in (root, child):
            deleted = await ask(
                url,
                "mutation($id: ID!) { deleteEpisode(input: {id: $id}) { deletedId } }",
                {"id": episode_id},
            )
            assert deleted["deleteEpisode"]["deletedId"] == episode_id
        # A fork whose parent is neither imported nor stored comes in as it is: it names the
        # missing parent, has none to read, and is the root of its family.
        jsonl = {"content-type": "application/x-ndjson"}
        alone = "\n".join(json.dumps(line) for line in lines if line["episode_id"] == child)
        imported = await http.post("/import", content=alone + "\n", headers=jsonl)
        assert imported.status_code == 200, imported.text
        read = (await ask(url, FAMILY, {"id": child}))["episode"]
        assert (read["parentId"], read["parent"], read["forkedAtTurn"]) == (root, None, 2)
        assert [e["id"] for e in read["family"]] == [child]
        # The whole export: the fork is there already, and links once its parent is imported.
        imported = await http.post("/import", content=exported.text, headers=jsonl)
        assert imported.status_code == 200, imported.text
    read = (await ask(url, FAMILY, {"id": child}))["episode"]
    assert read["parent"] == {"id": root} and read["forkedAtTurn"] == 2
    assert [e["id"] for e in read["family"]] == [root, child]
    assert [e["id"] for e in (await ask(url, FAMILY, {"id": root}))["episode"]["forks"]] == [child]


async def test_parley_fork_prints_the_new_id_and_follows_it(
    served: tuple[str, Path], fake_llm: FakeLLM, redis_url: str, tmp_path: Path
) -> None:
    url, _ = served
    tag = f"forks-{uuid.uuid4().hex[:8]}"
    root = await parent_episode(url, fake_llm, tag)
    beta = fake_llm.model_name("beta")
    env = parley_env(redis_url, tmp_path)
    done = await run(
        "fork", root, "--at-turn", "3", "--seat-model", f"0={beta}", "--inject", "Rain starts.",
        "--follow", "--url", url, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    new_id = done.stdout.splitlines()[0]
    read = (await ask(url, FAMILY, {"id": new_id}))["episode"]
    assert read["parentId"] == root and read["forkedAtTurn"] == 3
    assert read["agentModels"][0] == beta
    assert f"episode {new_id}: completed" in done.stdout
    refused = await run("fork", root, "--at-turn", "9", "--url", url, env=env)
    assert refused.returncode == 2
    assert "input.atTurn" in refused.stderr and "INVALID" in refused.stderr
    bad = await run("fork", root, "--at-turn", "1", "--seat-model", "zero=x", "--url", url, env=env)
    assert bad.returncode == 2 and "SEAT=MODEL" in bad.stderr
