"""/export and /import over real HTTP: Sotopia's layout, idempotence, bad lines, tokens, limits."""

import csv
import io
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from parley.resolvers import sotopia_format as fmt
from tests.support import sotopia_records as sotopia
from tests.support.server import GraphQLClient, serve

JSONL = "application/x-ndjson"
EPISODE = """
query($id: ID!) {
  episode(id: $id) {
    status tag scenario { codename } agents { name }
    turns { turn speaker actionType argument to }
    rewards { overall dimensions { dimension score } }
  }
}"""


async def post_import(http: httpx.AsyncClient, lines: list[str]) -> dict[str, Any]:
    response = await http.post(
        "/import", content="\n".join(lines) + "\n", headers={"content-type": JSONL}
    )
    assert response.status_code == 200, response.text
    report: dict[str, Any] = response.json()
    return report


def ids(suffix: str) -> dict[str, str]:
    return {
        name: doc["pk"][:-2] + suffix
        for name, (_, doc) in zip("ANSRE", sotopia.RECORDS, strict=True)
    }


async def test_a_sotopia_written_file_imports_once_and_is_browsable(gql: GraphQLClient) -> None:
    lines = sotopia.with_ids("H1")
    report = await post_import(gql.http, lines)
    assert report == {
        "created": {"agents": 2, "scenarios": 1, "relationships": 1, "episodes": 1},
        "skipped": {},
        "invalid": 0,
        "problems": [],
    }
    again = await post_import(gql.http, lines)
    assert again["created"] == {} and again["invalid"] == 0
    assert again["skipped"] == {"agents": 2, "scenarios": 1, "relationships": 1, "episodes": 1}

    episode = (await gql.data(EPISODE, {"id": ids("H1")["E"]}))["episode"]
    assert episode["status"] == "COMPLETED"
    assert episode["tag"] == sotopia.EPISODE["tag"]
    assert episode["scenario"] == {"codename": "last_ferry"}
    assert [a["name"] for a in episode["agents"]] == ["Nora Lindqvist", "Emil Brandt"]
    turns = [
        (t["turn"], t["speaker"], t["actionType"], t["argument"], t["to"]) for t in episode["turns"]
    ]
    assert turns == sotopia.EXPECTED_TURNS
    assert episode["rewards"][1]["overall"] == 3.0
    assert {"dimension": "goal", "score": 12.0} in episode["rewards"][1]["dimensions"]
    pair = await gql.data(
        "query($a: ID!, $b: ID!) { relationshipBetween(agentId: $a, otherAgentId: $b) "
        "{ relationship backgroundStory } }",
        {"a": ids("H1")["N"], "b": ids("H1")["A"]},
    )
    assert pair["relationshipBetween"]["relationship"] == "ACQUAINTANCE"


async def test_an_export_has_sotopias_layout_and_reads_back(gql: GraphQLClient) -> None:
    lines = sotopia.with_ids("H2")
    await post_import(gql.http, [line.replace("ferry_gpt-4", "export-h2") for line in lines])
    response = await gql.http.get(
        "/export", params={"kind": "episodes", "tag": "export-h2_gpt-4_v0.0.1_clean"}
    )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/x-ndjson")
    exported = [json.loads(line) for line in response.text.splitlines()]
    assert len(exported) == 1
    line = exported[0]
    original = json.loads(lines[-1])
    assert list(line)[: len(original)] == list(original)  # Sotopia's fields, in its order
    for field in ("raw_messages", "raw_rewards", "agent_ids", "environment_id", "scenario"):
        assert line[field] == original[field], field
    assert line["agents_background"] == original["agents_background"]
    assert line["social_goals"] == original["social_goals"]
    assert line["social_interactions"].startswith(
        'Nora Lindqvist said: "We are full, Emil. I cannot take you."\n\n'
        "Emil Brandt: [non-verbal communication] holds up the sample cooler"
    )
    assert line["parley"]["status"] == "COMPLETED"

    response = await gql.http.get(
        "/export",
        params={"kind": "episodes", "format": "csv", "tag": "export-h2_gpt-4_v0.0.1_clean"},
    )
    assert response.headers["content-type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.text)))
    assert len(rows) == 1 and list(rows[0]) == list(fmt.CSV_COLUMNS)
    assert rows[0]["episode_id"] == ids("H2")["E"]
    assert json.loads(rows[0]["raw_messages"]) == original["raw_messages"]
    assert rows[0]["status"] == "COMPLETED"


async def test_bad_lines_write_nothing_and_say_why(gql: GraphQLClient, unchanged: Any) -> None:
    agent, _, scenario, relationship, episode = (json.loads(x) for x in sotopia.with_ids("H3"))
    lines = [
        '{"agent_id": "x", "first_name": ',
        json.dumps({"combo_id": "c", "env_id": "e", "agent_ids": ["a", "b"]}),
        json.dumps({"name": "what is this"}),
        json.dumps({**agent, "age": "old"}),
        json.dumps({**agent, "agent_id": "has spaces"}),
        json.dumps({**scenario, "relationship": "rivals"}),
        json.dumps({**scenario, "agent_goals": ["only one"]}),
        json.dumps({k: v for k, v in episode.items() if k != "raw_messages"}),
        json.dumps({**episode, "raw_rewards": [1.0]}),
        json.dumps({**episode, "raw_messages": "not turns"}),
        json.dumps({**episode, "parley": {"status": "RUNNING"}}),
        json.dumps(relationship),
        "[1, 2]",
        json.dumps(
            {
                "dimension_list_id": "H3-dims",
                "name": "H3 warmth",
                "dimensions": [{"name": "warmth", "range_low": 5, "range_high": 0}],
            }
        ),
    ]
    async with unchanged():
        report = await post_import(gql.http, ["", *lines])
    assert report["created"] == {} and report["skipped"] == {}
    assert report["invalid"] == len(lines)
    reasons = {p["line"]: p["reason"] for p in report["problems"]}
    assert sorted(reasons) == list(range(2, len(lines) + 2))
    assert reasons[2].startswith("not valid JSON")
    assert "combo_id" in reasons[3]
    assert reasons[4].startswith("unknown kind of record")
    assert "age" in reasons[5]
    assert "agent_id 'has spaces' is not an id" in reasons[6]
    assert "relationship 'rivals'" in reasons[7]
    assert "agent_goals" in reasons[8]
    assert reasons[9] == "missing field 'raw_messages'"
    assert reasons[10] == "raw_rewards has 1 entries for 2 agents"
    assert "messages" in reasons[11]
    assert "RUNNING" in reasons[12] and "only finished episodes" in reasons[12]
    assert "not stored" in reasons[13] and "import the agents first" in reasons[13]
    assert reasons[14] == "not a JSON object"
    assert "range_low (5) must be below range_high (0)" in reasons[15]


async def test_a_good_line_beside_a_bad_one_is_written(gql: GraphQLClient) -> None:
    agent = json.loads(sotopia.with_ids("H4")[0])
    report = await post_import(
        gql.http, [json.dumps(agent), json.dumps({**agent, "agent_id": "H4-b", "age": -1})]
    )
    assert report["created"] == {"agents": 1} and report["invalid"] == 1
    assert report["problems"][0]["line"] == 2
    found = await gql.data("query($id: ID!) { agent(id: $id) { name } }", {"id": agent["agent_id"]})
    assert found["agent"] == {"name": "Nora Lindqvist"}
    assert (await gql.data('{ agent(id: "H4-b") { name } }'))["agent"] is None


async def test_a_dimension_list_is_exported_and_imported_with_its_dimensions(
    gql: GraphQLClient,
) -> None:
    created = await gql.data(
        """mutation($input: CreateEvaluationDimensionListInput!) {
          createEvaluationDimensionList(input: $input) { evaluationDimensionList { id } }
        }""",
        {
            "input": {
                "name": "H8 candour",
                "dimensions": [
                    {
                        "name": "candour",
                        "description": "Says it plainly",
                        "rangeLow": 0,
                        "rangeHigh": 10,
                    }
                ],
            }
        },
    )
    list_id = created["createEvaluationDimensionList"]["evaluationDimensionList"]["id"]
    response = await gql.http.get("/export", params={"kind": "dimension_lists"})
    assert response.status_code == 200, response.text
    lines = [json.loads(x) for x in response.text.splitlines()]
    [line] = [x for x in lines if x["dimension_list_id"] == list_id]
    assert line == {
        "dimension_list_id": list_id,
        "name": "H8 candour",
        "dimensions": [
            {"name": "candour", "description": "Says it plainly", "range_low": 0, "range_high": 10}
        ],
    }
    again = await post_import(gql.http, [json.dumps(line)])
    assert again["skipped"] == {"dimension_lists": 1} and again["invalid"] == 0
    moved = {**line, "dimension_list_id": "H8-copy", "name": "H8 candour copy"}
    report = await post_import(gql.http, [json.dumps(moved)])
    assert report["created"] == {"dimension_lists": 1}, report
    found = await gql.data(
        "{ evaluationDimensionLists { id name dimensions { name rangeLow rangeHigh } } }"
    )
    [copy] = [x for x in found["evaluationDimensionLists"] if x["id"] == "H8-copy"]
    assert copy["dimensions"] == [{"name": "candour", "rangeLow": 0, "rangeHigh": 10}]


async def test_null_fields_read_as_their_defaults(gql: GraphQLClient) -> None:
    agent, _, scenario, *_ = (json.loads(x) for x in sotopia.with_ids("H7"))
    lines = [
        json.dumps({**agent, "mbti": None, "public_info": None}),
        json.dumps({**scenario, "source": None, "age_constraint": None}),
    ]
    report = await post_import(gql.http, lines)
    assert report["created"] == {"agents": 1, "scenarios": 1}, report
    found = await gql.data(
        "query($a: ID!, $s: ID!) { agent(id: $a) { mbti publicInfo } "
        "scenario(id: $s) { source ageConstraint } }",
        {"a": agent["agent_id"], "s": scenario["env_id"]},
    )
    assert found == {
        "agent": {"mbti": "", "publicInfo": ""},
        "scenario": {"source": "", "ageConstraint": None},
    }


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"kind": "ghosts"}, "unknown kind"),
        ({"kind": "all", "format": "csv"}, "CSV holds episodes only"),
        ({"format": "xml"}, "format must be jsonl or csv"),
        ({"status": "DONE"}, "unknown status"),
        ({"colour": "red"}, "unknown parameter colour"),
    ],
)
async def test_a_bad_export_request_is_refused(
    gql: GraphQLClient, params: dict[str, str], message: str
) -> None:
    response = await gql.http.get("/export", params=params)
    assert response.status_code == 400
    assert message in response.json()["errors"][0]["message"]


async def test_export_and_import_need_the_token(
    redis_url: str, tmp_path: Path, unchanged: Any
) -> None:
    lines = sotopia.with_ids("H5")
    async with (
        serve(redis_url, tmp_path, tokens="exchange-token") as url,
        httpx.AsyncClient(base_url=url, timeout=30) as http,
    ):
        async with unchanged():
            refused = await http.post("/import", content="\n".join(lines))
            assert refused.status_code == 401
            assert (await http.get("/export")).status_code == 401
            wrong = {"authorization": "Bearer nope"}
            assert (await http.get("/export", headers=wrong)).status_code == 401
            browser = {"accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
            assert (await http.get("/export", headers=browser)).status_code == 401
        http.headers["authorization"] = "Bearer exchange-token"
        assert (await post_import(http, lines))["created"]["episodes"] == 1
        response = await http.get("/export", params={"kind": "agents"})
        assert response.status_code == 200
        exported = {json.loads(x)["agent_id"] for x in response.text.splitlines()}
        assert ids("H5")["A"] in exported and ids("H5")["N"] in exported


async def test_an_import_over_the_body_limit_is_refused(
    redis_url: str, tmp_path: Path, unchanged: Any
) -> None:
    lines = sotopia.with_ids("H6")
    async with (
        serve(redis_url, tmp_path, max_body_bytes=2000) as url,
        httpx.AsyncClient(base_url=url, timeout=30) as http,
        unchanged(),
    ):
        response = await http.post("/import", content="\n".join(lines))
    assert response.status_code == 413
    assert "over the limit of 2000 bytes" in response.text
