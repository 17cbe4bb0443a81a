"""Writes a refusal must not make, counted afterwards: an agent carrying a tag of the test's own,
sent as a mutation or as a line to import, and how many agents carry that tag."""

import json
import uuid

from tests.support.server import graphql

CREATE_TAGGED_AGENT = """
mutation($tag: String!) {
  createAgent(input: {firstName: "Mallory", lastName: "Tagged", tag: $tag}) { agent { id } }
}"""
COUNT_TAGGED = "query($tag: String) { agents(filter: {tag: $tag}) { totalCount } }"


def new_tag(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def agent_line(tag: str) -> bytes:
    """A line of an import file: one agent with the tag."""
    line = {
        "agent_id": new_tag("tagged"),
        "first_name": "Mallory",
        "last_name": "Tagged",
        "parley": {"tag": tag},
    }
    return json.dumps(line).encode() + b"\n"


async def tagged(base_url: str, tag: str, token: str | None = None) -> int:
    """How many agents carry the tag."""
    data = await graphql(base_url, COUNT_TAGGED, {"tag": tag}, token)
    count: int = data["agents"]["totalCount"]
    return count
