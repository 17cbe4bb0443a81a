"""`parley study create` and `parley study status` as real processes against a real server with
an API token: a study made from a file and options, its links opening their raters' pages,
the status as the raters go (exit status 1 until every rating is in), a gold flag, and every
mistake said in one line with exit status 2."""

import json
import os
import re
import uuid
from pathlib import Path
from typing import Any

import pytest

from bench.support.people import rating
from bench.support.processes import run
from tests.support.server import graphql, serve
from tests.support.studies import SAVE, finished_episodes

pytestmark = pytest.mark.usefixtures("redis_client")  # binds the records the tests save
TOKEN = "cli-token"
RUBRIC = "query($id: ID!) { ratingStudy(id: $id) { rubric { name rangeLow } } }"


def study_file(path: Path, tag: str, gold: str) -> Path:
    path.write_text(
        f"""
name = "From a file"
raters = 2
rater_names = ["Ines", "Jo"]

[episodes]
tag = "{tag}"

[[gold]]
episode_id = "{gold}"
tolerance = 0
expected = [{{agent = 0, dimension = "goal", score = 10}}]
""",
        encoding="utf-8",
    )
    return path


async def rate_all(url: str, study: str, rater: int, token: str, episodes: int, goal: int) -> None:
    rubric = (await graphql(url, RUBRIC, {"id": study}, TOKEN))["ratingStudy"]["rubric"]
    for position in range(episodes):
        scores = [
            (a, d["name"], goal if d["name"] == "goal" else d["rangeLow"])
            for a in range(2)
            for d in rubric
        ]
        given = rating(study, rater, token, position, scores)
        saved = (await graphql(url, SAVE, {"input": given}, TOKEN))["saveRating"]
        assert saved["stored"], saved


async def test_a_study_made_from_the_command_line_is_followed_to_its_end(
    redis_url: str, tmp_path: Path
) -> None:
    tag = f"cli-{uuid.uuid4().hex[:8]}"
    await finished_episodes(tag, 2)
    (gold,) = await finished_episodes(f"{tag}-gold", 1)
    env = dict(os.environ)
    async with serve(redis_url, tmp_path / "data", tokens=TOKEN) as url:
        path = study_file(tmp_path / "study.toml", tag, gold)
        made = await run(
            "study",
            "create",
            str(path),
            "--raters-per-episode",
            "2",
            "--url",
            url,
            "--token",
            TOKEN,
            env=env,
        )
        assert made.returncode == 0, made.stderr
        links = re.findall(r"^  (\w+) \((\d+) episodes\): (\S+)$", made.stdout, re.MULTILINE)
        assert [(name, count) for name, count, _ in links] == [("Ines", "3"), ("Jo", "3")], (
            made.stdout
        )
        study = re.search(r"rating study (\S+) \(From a file\)", made.stdout)
        assert study is not None
        pk = study.group(1)
        tokens = []
        for rater, (_, _, address) in enumerate(links):
            assert address.startswith(f"{url}/#/rate/{pk}/{rater}?token=")
            tokens.append(address.split("token=", 1)[1])

        status = await run("study", "status", pk, "--url", url, "--token", TOKEN, env=env)
        assert status.returncode == 1, status.stderr  # ratings are missing
        assert "From a file: 0 of 6 ratings" in status.stdout and "Ines" in status.stdout

        await rate_all(url, pk, 0, tokens[0], 3, goal=10)
        await rate_all(url, pk, 1, tokens[1], 3, goal=3)
        done = await run("study", "status", pk, "--url", url, "--token", TOKEN, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "6 of 6 ratings" in done.stdout
        assert f"Jo is far off on gold episode {gold}: agent 1 goal 3 (expected 10)" in done.stdout
        assert "Ines is far off" not in done.stdout
        as_json = await run(
            "study", "status", pk, "--json", "--url", url, "--token", TOKEN, env=env
        )
        found: dict[str, Any] = json.loads(as_json.stdout)
        assert [(r["name"], r["rated"], r["goldFlagged"]) for r in found["raters"]] == [
            ("Ines", 3, 0),
            ("Jo", 3, 1),
        ]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["create", "--raters", "1", "--tag", "x"], "a study needs --name"),
        (["create", "--name", "n", "--raters", "1"], "--episodes, --experiment or --tag"),
        (
            ["create", "--name", "n", "--raters", "1", "--episodes", "no-such-episode"],
            "input.episodes: no episode with id 'no-such-episode' (NOT_FOUND)",
        ),
        (["create", "--name", "n", "--raters", "0", "--tag", "x"], "input.raters:"),
        (["status", "no-such-study"], "no rating study with id 'no-such-study'"),
        (["results", "no-such-study"], "no rating study with id 'no-such-study'"),
    ],
)
async def test_a_mistake_is_said_in_one_line_with_status_2(
    redis_url: str, tmp_path: Path, args: list[str], said: str
) -> None:
    async with serve(redis_url, tmp_path / "data", tokens=TOKEN) as url:
        done = await run("study", *args, "--url", url, "--token", TOKEN, env=dict(os.environ))
    assert done.returncode == 2 and said in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


async def test_a_study_file_with_an_unknown_key_or_no_token_is_refused(
    redis_url: str, tmp_path: Path
) -> None:
    path = tmp_path / "study.toml"
    path.write_text(
        'name = "x"\nraters = 1\ncolour = "blue"\n[episodes]\ntag = "x"\n', encoding="utf-8"
    )
    async with serve(redis_url, tmp_path / "data", tokens=TOKEN) as url:
        unknown = await run(
            "study", "create", str(path), "--url", url, "--token", TOKEN, env=dict(os.environ)
        )
        assert unknown.returncode == 2 and "unknown keys ['colour']" in unknown.stderr
        env = {k: v for k, v in os.environ.items() if k != "PARLEY_TOKEN"}
        locked = await run("study", "status", "any", "--url", url, env=env)
    assert locked.returncode == 2 and "answered 401" in locked.stderr, locked.stderr
