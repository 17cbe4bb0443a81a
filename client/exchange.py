"""`parley export --url` and `parley import --url`: records in Sotopia's JSONL layout from and
into a running Parley, over its /export and /import (graph/exchange.py)."""

import json
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING

from parley.client.server_url import refusal, server_root
from parley.core.import_report import ImportReport
from parley.core.media_types import EXPORT_MEDIA_TYPES

if TYPE_CHECKING:
    import aiohttp

CHUNK_BYTES = 256 * 1024
"""Bytes of JSONL per request of an import (halved while the server answers 413)."""


class ExchangeError(RuntimeError):
    """The server could not be reached or refused the request: said in one line."""


async def remote_export(
    url: str, token: str | None, params: dict[str, str], sink: IO[bytes]
) -> None:
    """Write what the server at `url` exports for `params` to `sink`, as it comes."""
    import aiohttp

    url = server_root(url)
    try:
        async with (
            _session(token) as http,
            http.get(url + "/export", params=params) as response,
        ):
            if response.status != 200:
                raise ExchangeError(refusal(url, response.status, await response.text()))
            if response.content_type not in EXPORT_MEDIA_TYPES.values():
                raise ExchangeError(_not_parleys(url, response.status, await response.read()))
            async for chunk in response.content.iter_chunked(1 << 16):
                sink.write(chunk)
    except (aiohttp.ClientError, TimeoutError) as err:
        raise ExchangeError(f"{url}: {err or type(err).__name__}") from None


async def remote_import(url: str, token: str | None, source: IO[bytes]) -> ImportReport:
    """POST the file to /import in parts under the server's body limit, each whole lines; an
    empty file too, so that a wrong address or token is said whatever the file holds. The
    report numbers the lines of the whole file."""
    import aiohttp

    url = server_root(url)
    report = ImportReport()
    limit = CHUNK_BYTES
    try:
        async with _session(token) as http:
            pending: list[bytes] = []
            size = 0
            first = 0  # lines before the pending ones
            for line in _lines(source):
                if pending and size + len(line) > limit:
                    first, limit = await _post(http, url, pending, first, limit, report)
                    pending, size = [], 0
                pending.append(line)
                size += len(line)
            if pending or not first:
                await _post(http, url, pending, first, limit, report)
    except (aiohttp.ClientError, TimeoutError) as err:
        raise ExchangeError(f"{url}: {err or type(err).__name__}") from None
    return report


def _session(token: str | None) -> "aiohttp.ClientSession":
    import aiohttp

    headers = {"authorization": f"Bearer {token}"} if token else {}
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=300)
    return aiohttp.ClientSession(headers=headers, timeout=timeout)


def _lines(source: IO[bytes]) -> Iterator[bytes]:
    for line in source:
        yield line if line.endswith(b"\n") else line + b"\n"


async def _post(
    http: "aiohttp.ClientSession",
    url: str,
    lines: list[bytes],
    first: int,
    limit: int,
    report: ImportReport,
) -> tuple[int, int]:
    """Send `lines` (after `first` lines of the file), splitting them while the server says
    413; returns the lines sent so far and the part size that worked."""
    async with http.post(
        url + "/import",
        data=b"".join(lines),
        headers={"content-type": "application/x-ndjson"},
    ) as response:
        status, body = response.status, await response.read()
    if status == 413:
        if len(lines) == 1:
            report.refuse(first + 1, "the line is larger than the server accepts (HTTP 413)")
            return first + 1, limit
        half = len(lines) // 2
        first, limit = await _post(http, url, lines[:half], first, limit // 2, report)
        return await _post(http, url, lines[half:], first, limit, report)
    if status != 200:
        raise ExchangeError(refusal(url, status, body.decode(errors="replace")))
    try:
        answered = ImportReport.from_json(json.loads(body))
    except (ValueError, TypeError, KeyError):
        raise ExchangeError(_not_parleys(url, status, body)) from None
    report.add(answered, line_offset=first)
    return first + len(lines), limit


def _not_parleys(url: str, status: int, body: bytes) -> str:
    """What is said of an answer no Parley gives (a proxy's page, another service)."""
    return refusal(url, status, f"not an answer of Parley's: {body.decode(errors='replace')}")
