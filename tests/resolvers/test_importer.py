"""Import lines Python's JSON parser cannot or must not read whole: nested 5,000 levels deep
(a RecursionError, HTTP 500, before), deeper than the 64 levels any JSON a client sends may
nest, and an integer of more digits than Python converts. Each is an invalid line, listed with
its reason; the good lines beside it are written."""

import json

import httpx

from parley.resolvers.client_json import MAX_DEPTH
from tests.support import sotopia_records as sotopia

JSON_LINES = {"content-type": "application/x-ndjson"}


def deep(levels: int) -> str:
    """An agent line whose `extra` field nests `levels` deep in all."""
    return '{"agent_id": "deep", "first_name": "D", "last_name": "E", "x": ' + (
        "[" * (levels - 1) + "]" * (levels - 1) + "}"
    )


async def test_lines_nested_too_deep_are_invalid_and_the_others_written(api_url: str) -> None:
    agent = json.loads(sotopia.with_ids("IM")[0])
    lines = [
        deep(5_000),
        deep(MAX_DEPTH + 1),
        '{"agent_id": "huge", "age": ' + "9" * 5_000 + "}",
        json.dumps(agent),
    ]
    async with httpx.AsyncClient(base_url=api_url, timeout=30) as http:
        response = await http.post("/import", content="\n".join(lines) + "\n", headers=JSON_LINES)
    assert response.status_code == 200, response.text
    report = response.json()
    reasons = {p["line"]: p["reason"] for p in report["problems"]}
    assert reasons[1] == reasons[2] == f"JSON nested deeper than {MAX_DEPTH} levels"
    assert reasons[3].startswith("not valid JSON") and "4300" in reasons[3]
    assert report["invalid"] == 3
    assert report["created"] == {"agents": 1}


async def test_a_line_with_a_lone_surrogate_is_invalid_and_the_others_written(
    api_url: str,
) -> None:
    """A lone surrogate (the JSON escape `\\ud800`) in a free-text field of an episode line
    (experiment_tag, reasoning, raw_rewards_prompt, and most of its `parley` fields; a
    scenario's `parley.action_instruction`) passed validation and failed when the batch was
    written: HTTP 500 with no report, and the good lines of that part of the file were lost
    with it."""
    lines = [json.loads(line) for line in sotopia.with_ids("SU")]
    [episode] = [line for line in lines if "episode_id" in line]
    episode["experiment_tag"] = "split \ud800 pair"
    body = "\n".join(json.dumps(line) for line in lines) + "\n"
    async with httpx.AsyncClient(base_url=api_url, timeout=30) as http:
        response = await http.post("/import", content=body, headers=JSON_LINES)
    assert response.status_code == 200, response.text
    report = response.json()
    assert report["invalid"] == 1, report
    assert [p["line"] for p in report["problems"]] == [lines.index(episode) + 1], report
    assert sum(report["created"].values()) == len(lines) - 1, report


async def test_a_lone_surrogate_in_any_line_of_any_kind_is_invalid(api_url: str) -> None:
    """In a field kept as it is (no limit checks it), in a key, in a dimension list's name, as
    an escape or as the three bytes Python's JSON parser decodes to one (`surrogatepass`):
    each such line is invalid with the reason, and the line beside them is written."""
    good, bad, scenario = [
        line
        for line in map(json.loads, sotopia.with_ids("SW"))
        if "agent_id" in line or "env_id" in line
    ]
    marker = "@split@"
    dimensions = {
        "dimension_list_id": "split-dimensions",
        "name": f"split {marker}",
        "dimensions": [{"name": "warmth", "description": "", "range_low": 0, "range_high": 10}],
    }
    lines = [
        json.dumps(good).encode(),
        json.dumps({**bad, "hobby": "split \ud800"}).encode(),
        json.dumps({**bad, "\udfff": 1}).encode(),
        json.dumps({**scenario, "codename": "a\udbff"}).encode(),
        json.dumps(dimensions).encode().replace(marker.encode(), b"\xed\xa0\x80"),
        json.dumps({**bad, "hobby": marker}).encode().replace(marker.encode(), b"\xed\xb0\x80"),
    ]
    async with httpx.AsyncClient(base_url=api_url, timeout=30) as http:
        response = await http.post("/import", content=b"\n".join(lines) + b"\n", headers=JSON_LINES)
    assert response.status_code == 200, response.text
    report = response.json()
    assert [p["line"] for p in report["problems"]] == [2, 3, 4, 5, 6], report
    assert all("lone surrogate" in p["reason"] for p in report["problems"]), report
    assert report["created"] == {"agents": 1}, report
