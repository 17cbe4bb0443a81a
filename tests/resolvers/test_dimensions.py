"""Evaluation dimension lists."""

import uuid
from typing import Any

import pytest

from tests.support.server import GraphQLClient

CREATE = """
mutation($input: CreateEvaluationDimensionListInput!) {
  createEvaluationDimensionList(input: $input) {
    evaluationDimensionList { id name dimensions { id name description rangeLow rangeHigh } }
    userErrors { field message code }
  }
}"""
DELETE = """
mutation($id: ID!) {
  deleteEvaluationDimensionList(input: {id: $id}) { deletedId userErrors { code } }
}"""
LISTS = "{ evaluationDimensionLists { id name dimensions { name } } }"
DIMS = [
    {"name": "warmth", "description": "How warm", "rangeLow": 0, "rangeHigh": 5},
    {"name": "candour", "rangeLow": -3, "rangeHigh": 3},
]


async def test_create_list_delete(gql: GraphQLClient, redis_client: Any) -> None:
    made = (await gql.data(CREATE, {"input": {"name": "tone", "dimensions": DIMS}}))[
        "createEvaluationDimensionList"
    ]
    assert made["userErrors"] == []
    created = made["evaluationDimensionList"]
    assert [d["name"] for d in created["dimensions"]] == ["warmth", "candour"]
    assert created["dimensions"][1]["rangeLow"] == -3

    listed = (await gql.data(LISTS))["evaluationDimensionLists"]
    assert {
        "id": created["id"],
        "name": "tone",
        "dimensions": [{"name": "warmth"}, {"name": "candour"}],
    } in listed

    dim_key = (
        ":sotopia.database.evaluation_dimensions.CustomEvaluationDimension:"
        + created["dimensions"][0]["id"]
    )
    assert await redis_client.exists(dim_key)
    removed = await gql.data(DELETE, {"id": created["id"]})
    assert removed["deleteEvaluationDimensionList"]["deletedId"] == created["id"]
    assert not await redis_client.exists(dim_key)


@pytest.mark.parametrize(
    ("dimensions", "path", "needle"),
    [
        ([{"name": "x", "rangeLow": 5, "rangeHigh": 5}], ["input", "dimensions", "0"], "below"),
        ([{"name": "x", "rangeLow": 6, "rangeHigh": 1}], ["input", "dimensions", "0"], "below"),
        ([], ["input", "dimensions"], "at least 1"),
        ([{"name": "", "rangeLow": 0, "rangeHigh": 1}], ["input", "dimensions", "0", "name"], ""),
        ([*DIMS, DIMS[0]], ["input"], "unique"),
        *(
            (
                [{"name": name, "rangeLow": 0, "rangeHigh": 1}],
                ["input", "dimensions", "0", "name"],
                words,
            )
            for name, words in [
                ("a\x00b", "cannot contain NUL or a lone surrogate"),
                ("a\ud800", "must be text (UTF-8)"),  # refused as the request is read
                (" overall ", "'overall' is reserved for the overall score"),
                ("overall_score", "'overall_score' is reserved for the overall score"),
            ]
        ),
    ],
)
async def test_bad_lists_write_nothing(
    gql: GraphQLClient, unchanged: Any, dimensions: list[Any], path: list[str], needle: str
) -> None:
    async with unchanged():
        payload = (await gql.data(CREATE, {"input": {"name": "bad", "dimensions": dimensions}}))[
            "createEvaluationDimensionList"
        ]
    assert payload["evaluationDimensionList"] is None
    assert (
        payload["userErrors"][0]["field"] == path and needle in payload["userErrors"][0]["message"]
    )


async def test_duplicate_name_and_unknown_id(gql: GraphQLClient, unchanged: Any) -> None:
    await gql.data(CREATE, {"input": {"name": "dup-list", "dimensions": DIMS}})
    async with unchanged():
        again = await gql.data(CREATE, {"input": {"name": "dup-list", "dimensions": DIMS}})
        missing = await gql.data(DELETE, {"id": "nope"})
    assert again["createEvaluationDimensionList"]["userErrors"][0]["code"] == "CONFLICT"
    assert missing["deleteEvaluationDimensionList"]["userErrors"][0]["code"] == "NOT_FOUND"


async def test_a_dimension_named_overall_is_refused_and_writes_nothing(
    gql: GraphQLClient,
) -> None:
    """`overall` is the name results give the mean of a seat's dimensions, listed first. A list
    with a dimension of that name was stored and judged: its scores (2 of 10, beside a "tone"
    of 8) then vanished from `episodeResults`, whose one "overall" was the mean, 5."""
    dimensions = [
        {"name": "overall", "description": "How it went overall", "rangeLow": 0, "rangeHigh": 10},
        {"name": "tone", "description": "Tone", "rangeLow": 0, "rangeHigh": 10},
    ]
    name = f"overall-{uuid.uuid4().hex[:8]}"
    payload = (await gql.data(CREATE, {"input": {"name": name, "dimensions": dimensions}}))[
        "createEvaluationDimensionList"
    ]
    stored = [d["name"] for d in (await gql.data(LISTS))["evaluationDimensionLists"]]
    assert [(e["field"], e["code"]) for e in payload["userErrors"]] == [
        (["input", "dimensions", "0", "name"], "INVALID")
    ], payload
    assert payload["evaluationDimensionList"] is None and name not in stored
