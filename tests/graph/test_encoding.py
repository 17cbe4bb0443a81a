"""Responses holding reused answers are the bytes `json.dumps` gives, over real HTTP too, and a
record changed by another client is read at once."""

import json
from typing import Any

import httpx
import redis.asyncio as redis
from hypothesis import given
from hypothesis import strategies as st

from bench.support.read_world import write_world
from parley.graph.encoding import Encoded, encode
from parley.storage.models import EpisodeLog

WORLD = "encode"
SCALARS = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(), inner, max_size=4)
        | st.dictionaries(st.text(), inner, max_size=4).map(Encoded)
        | st.tuples(inner, inner)
    ),
    max_leaves=40,
)


def dumps(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


@given(VALUES)
def test_encode_is_json_dumps_at_any_depth(value: Any) -> None:
    assert encode(value) == dumps(value)


def test_an_encoded_answer_is_spliced_as_its_text() -> None:
    answer = Encoded({"id": "e1", "turns": [{"argument": "caf\u00e9 \U0001f600"}]})
    assert answer == {"id": "e1", "turns": [{"argument": "caf\u00e9 \U0001f600"}]}
    answer.text = '{"spliced":true}'  # what encode writes is the kept text, not a new encoding
    response = {"data": {"episodes": {"edges": [{"node": answer}], "nodes": [answer]}}}
    assert encode(response) == (
        '{"data":{"episodes":{"edges":[{"node":{"spliced":true}}],"nodes":[{"spliced":true}]}}}'
    )
    assert json.loads(dumps(response))["data"]["episodes"]["nodes"][0]["id"] == "e1"


def test_mappings_with_keys_json_would_convert_are_encoded_as_json_does() -> None:
    value = {"data": {1: "one", None: [Encoded({"a": 1.5})], "x": float("inf")}}
    assert encode(value) == dumps(value)


PAGE = """query { episodes(first: 4, filter: {tag: "encode-parley"}) {
  totalCount pageInfo { endCursor }
  edges { cursor node { id turns { argument } rewards { overall } } }
  nodes { id status turns { turn speaker argument at } messages generationStats }
} }"""


async def test_a_reused_page_is_the_same_bytes_and_follows_a_changed_record(
    api_url: str, redis_client: redis.Redis
) -> None:
    await write_world(redis_client, WORLD, episodes=8, agents=4, scenarios=2, relationships=2)
    async with httpx.AsyncClient(base_url=api_url, timeout=30) as http:

        async def page() -> httpx.Response:
            response = await http.post("/graphql", json={"query": PAGE})
            assert response.status_code == 200 and "errors" not in response.json()
            return response

        async def held_hits() -> int:
            metrics = (await http.get("/metrics")).json()
            assert metrics["documents_tracking"] is True
            hits: int = metrics["documents_held_hits"]
            return hits

        first = await page()
        hits = await held_hits()
        again = await page()
        assert await held_hits() == hits + 4  # the page's documents were not fetched again
        assert first.content == again.content
        assert first.text == dumps(first.json())
        nodes = first.json()["data"]["episodes"]["nodes"]
        assert len(nodes) == 4 and nodes[0]["turns"]
        key = EpisodeLog.make_primary_key(nodes[0]["id"])
        await redis_client.json().set(key, "$.turns[0].argument", "na\u00efve edit")
        changed = (await page()).json()["data"]["episodes"]
        assert changed["nodes"][0]["turns"][0]["argument"] == "na\u00efve edit"
        assert changed["edges"][0]["node"]["turns"][0]["argument"] == "na\u00efve edit"
        assert changed["nodes"][1:] == nodes[1:]
