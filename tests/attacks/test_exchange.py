"""POST /import takes JSON lines only: a body a web form or a plain `fetch` can send without a
preflight (text/plain, a form, no type at all) writes nothing, over real HTTP."""

import httpx
import pytest

from parley.graph.exchange import IMPORT_MEDIA_TYPES
from tests.support.tagged import agent_line, new_tag, tagged


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "text/plain;charset=UTF-8",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "text/csv",
        None,
    ],
)
async def test_an_import_that_is_not_json_lines_is_refused(
    api_url: str, content_type: str | None
) -> None:
    tag = new_tag("typed")
    headers = {"content-type": content_type} if content_type else {}
    async with httpx.AsyncClient(base_url=api_url, timeout=30) as http:
        response = await http.post("/import", content=agent_line(tag), headers=headers)
        assert response.status_code == 415, response.text
        error = response.json()["errors"][0]
        assert "application/x-ndjson" in error["message"]
        assert error["extensions"]["code"] == "UNSUPPORTED_MEDIA_TYPE"
        assert await tagged(api_url, tag) == 0


@pytest.mark.parametrize(
    "content_type",
    [
        "application/x-ndjson",
        "application/jsonl",
        "application/json",
        "application/JSONL; charset=utf-8",
        "application/x-jsonlines",
    ],
)
async def test_an_import_of_json_lines_is_served(api_url: str, content_type: str) -> None:
    assert content_type.split(";")[0].lower() in IMPORT_MEDIA_TYPES
    tag = new_tag("typed")
    async with httpx.AsyncClient(base_url=api_url, timeout=30) as http:
        response = await http.post(
            "/import", content=agent_line(tag), headers={"content-type": content_type}
        )
        assert response.status_code == 200, response.text
        assert response.json()["created"] == {"agents": 1}
        assert await tagged(api_url, tag) == 1
