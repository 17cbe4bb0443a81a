"""Sotopia's own code reads what Parley writes: a rating study's ratings through Sotopia's
`AnnotationForEpisode.find()` (over the index Parley made for it), their raters through its
`Annotator.get()`, and the rated episodes through its `EpisodeLog.get()`.

Needs an interpreter with Sotopia installed, named by PARLEY_SOTOPIA_PYTHON (CI makes one with
`sotopia==0.1.5`); without it the test is skipped, unless PARLEY_REQUIRE_SOTOPIA=1 (as in CI)."""

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.server import GraphQLClient
from tests.support.studies import STUDY, rated_study

pytestmark = pytest.mark.usefixtures("redis_client")  # binds the records the tests save

# Run by Sotopia's interpreter: everything its classes read, as JSON.
READER = """
import json, sys
from sotopia.database import AnnotationForEpisode, Annotator, EpisodeLog

found = {}
for episode in json.loads(sys.argv[1]):
    log = EpisodeLog.get(episode)
    ratings = AnnotationForEpisode.find(AnnotationForEpisode.episode == episode).all()
    found[episode] = {
        "agents": log.agents,
        "environment": log.environment,
        "ratings": sorted(
            (
                {
                    "pk": r.pk,
                    "annotator": r.annotator_id,
                    "name": Annotator.get(r.annotator_id).name,
                    "rewards": r.rewards,
                    "reasoning": r.reasoning,
                }
                for r in ratings
            ),
            key=lambda r: r["pk"],
        ),
    }
print(json.dumps(found))
"""
EPISODE = """
query($id: ID!) { episode(id: $id) { scenarioId agents { id } } }"""
EPISODES = 2


def sotopia_python() -> str:
    python = os.environ.get("PARLEY_SOTOPIA_PYTHON", "")
    if not python or not Path(python).exists():
        reason = "no interpreter with Sotopia (PARLEY_SOTOPIA_PYTHON)"
        if os.environ.get("PARLEY_REQUIRE_SOTOPIA") == "1":
            pytest.fail(f"{reason}, and PARLEY_REQUIRE_SOTOPIA=1 requires it")
        pytest.skip(reason)
    return python


async def test_sotopia_reads_a_studys_ratings_and_episodes(
    gql: GraphQLClient, redis_url: str
) -> None:
    python = sotopia_python()
    study, episodes, _, _ = await rated_study(gql, EPISODES, raters=2)
    read = await asyncio.to_thread(
        subprocess.run,
        [python, "-c", READER, json.dumps(episodes)],
        env={**os.environ, "REDIS_OM_URL": redis_url},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert read.returncode == 0, read.stderr
    found: dict[str, Any] = json.loads(read.stdout.strip().splitlines()[-1])

    stored = (await gql.data(STUDY, {"id": study}))["ratingStudy"]
    assert sorted(found) == sorted(episodes)
    for episode in episodes:
        record = (await gql.data(EPISODE, {"id": episode}))["episode"]
        assert found[episode]["agents"] == [a["id"] for a in record["agents"]]
        assert found[episode]["environment"] == record["scenarioId"]
        ratings = [r for r in stored["ratings"] if r["episodeId"] == episode]
        assert len(found[episode]["ratings"]) == len(ratings) == 2
        for rating in ratings:
            (seen,) = [r for r in found[episode]["ratings"] if r["pk"] == rating["annotationId"]]
            (rater,) = [r for r in stored["raters"] if r["rater"] == rating["rater"]]
            assert (seen["annotator"], seen["name"]) == (rater["annotatorId"], rater["name"])
            for score in rating["scores"]:
                _, dimensions = seen["rewards"][score["agent"]]
                assert dimensions[score["dimension"]] == score["score"]
            assert seen["reasoning"] == rating["reasoning"]
