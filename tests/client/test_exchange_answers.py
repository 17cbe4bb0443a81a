"""`parley export|import --url` (client/exchange.py) pointed at an address that answers, over
real HTTP, what no Parley would (a proxy's sign-in page, a framework's error page, another
service's JSON): each is one line naming the address, and an export writes nothing of it.
Before, an import met such a 200 with a traceback, an export wrote the page into the file and
succeeded, and an error page of several lines was said in several lines."""

import asyncio
import io
from collections.abc import AsyncIterator

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from parley.client.exchange import ExchangeError, remote_export, remote_import
from parley.storage.embedded import free_port

ANSWERS = {
    "page": (200, "text/html", b"<html>\n<body>Sign in</body>\n</html>\n"),
    "other-json": (200, "application/json", b'{"created": 5}'),
    "json-list": (200, "application/json", b"[1, 2]"),
    "error-page": (502, "text/html", b"<html>\n<h1>Bad gateway</h1>\n</html>\n"),
}


async def answer(request: Request) -> Response:
    status, media_type, body = ANSWERS[request.path_params["kind"]]
    return Response(body, status_code=status, media_type=media_type)


@pytest.fixture(scope="module")
async def stand_in() -> AsyncIterator[str]:
    """A server answering every path under /<kind>/ with ANSWERS[kind]."""
    app = Starlette(routes=[Route("/{kind}/{path:path}", answer, methods=["GET", "POST"])])
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.02)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    await task


def one_line(error: ExchangeError, url: str) -> str:
    said = str(error)
    assert "\n" not in said and said.startswith(url), said
    return said


@pytest.mark.parametrize("kind", sorted(ANSWERS))
async def test_an_import_answered_by_something_else_is_one_line(stand_in: str, kind: str) -> None:
    url = f"{stand_in}/{kind}"
    with pytest.raises(ExchangeError) as refused:
        await remote_import(url, None, io.BytesIO(b'{"agent_id": "a1"}\n'))
    one_line(refused.value, url)


@pytest.mark.parametrize("kind", sorted(ANSWERS))
async def test_an_export_answered_by_something_else_writes_nothing(
    stand_in: str, kind: str
) -> None:
    url = f"{stand_in}/{kind}"
    sink = io.BytesIO()
    with pytest.raises(ExchangeError) as refused:
        await remote_export(url, None, {"kind": "agents"}, sink)
    one_line(refused.value, url)
    assert sink.getvalue() == b""
