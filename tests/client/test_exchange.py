"""`parley export|import --url`'s side (client/exchange.py) against a real server: a file sent
in parts under the server's body limit comes back as one report numbered in the file's lines,
and every refusal is one line of words."""

import io
import json
from pathlib import Path

import pytest
import redis.asyncio as redis

from parley.client.exchange import ExchangeError, remote_export, remote_import
from parley.core.errors import BadArgument
from parley.core.import_report import Problem
from parley.resolvers import exporter
from tests.support import sotopia_records as sotopia
from tests.support.server import serve

LIMIT = 4000
"""The server's body limit here: a few profile lines fit in a request, the episode line not."""


async def test_a_file_sent_in_parts_is_reported_in_its_own_line_numbers(
    redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    """`redis_client` binds the record models to the session's Redis, as the app does."""
    nora, emil, scenario, relationship, episode = sotopia.with_ids("E1")
    assert len(episode.encode()) > LIMIT > len(nora.encode()) + len(emil.encode())
    lines = ['{"broken": ', nora, emil, scenario, relationship, episode, "[1, 2]"]
    source = io.BytesIO("\n".join(lines).encode())  # no newline after the last line
    async with serve(redis_url, tmp_path / "api", max_body_bytes=LIMIT) as url:
        report = await remote_import(url + "/graphql", None, source)
    assert report.created == {"agents": 2, "scenarios": 1, "relationships": 1}
    assert report.invalid == 3
    [broken, large, last] = report.problems
    assert broken == Problem(1, broken.reason) and "not valid JSON" in broken.reason
    assert large == Problem(6, "the line is larger than the server accepts (HTTP 413)")
    assert last.line == 7

    async with serve(redis_url, tmp_path / "api2") as url:
        again = await remote_import(url, None, io.BytesIO(episode.encode()))
        sink = io.BytesIO()
        agent = json.loads(nora)["agent_id"]
        await remote_export(url, None, {"kind": "episodes", "agent": agent}, sink)
    assert again.created == {"episodes": 1} and again.invalid == 0
    [exported] = sink.getvalue().decode().splitlines()
    assert json.loads(exported)["episode_id"] == json.loads(episode)["episode_id"]


async def test_a_missing_token_is_said_even_for_an_empty_file(
    redis_url: str, tmp_path: Path
) -> None:
    async with serve(redis_url, tmp_path / "api", tokens="right") as url:
        with pytest.raises(ExchangeError, match=r"401.*--token") as refused:
            await remote_import(url, None, io.BytesIO(b""))
        with pytest.raises(ExchangeError, match=r"401.*--token"):
            await remote_export(url, "wrong", {}, io.BytesIO())
        sink = io.BytesIO()
        await remote_export(url, "right", {"kind": "episodes", "tag": "none-such"}, sink)
    assert '{"errors"' not in str(refused.value)


async def test_a_refused_export_is_said_in_the_servers_words(
    redis_url: str, tmp_path: Path
) -> None:
    params = {"kind": "bogus"}
    with pytest.raises(BadArgument) as local:
        exporter.request(params)
    sink = io.BytesIO()
    async with serve(redis_url, tmp_path / "api") as url:
        with pytest.raises(ExchangeError) as remote:
            await remote_export(url, None, params, sink)
    assert str(remote.value) == str(local.value)
    assert sink.getvalue() == b""


async def test_an_address_nothing_answers_is_named() -> None:
    with pytest.raises(ExchangeError, match=r"^http://127\.0\.0\.1:1: "):
        await remote_export("127.0.0.1:1", None, {}, io.BytesIO())
    with pytest.raises(ExchangeError, match=r"^http://127\.0\.0\.1:1: "):
        await remote_import("http://127.0.0.1:1/graphql", None, io.BytesIO(b"{}\n"))
