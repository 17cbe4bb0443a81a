"""The HTTP side of an OpenAI-compatible chat completion: one POST, its errors classified.

Every backend Parley talks to (OpenAI, vLLM, Ollama, llama.cpp's server, the embedded model)
speaks the same `POST {base_url}/chat/completions` JSON API. This client sends exactly that over
one aiohttp session per endpoint and leaves retries to the caller. It replaced the openai SDK on
the hot path: with 200 calls in flight the SDK spent about four times the CPU per call
(`bench/bench_chat_client.py`), which decided whether one worker keeps up.
"""

import asyncio
from dataclasses import dataclass
from typing import Any, Literal

import aiohttp

ErrorKind = Literal["timeout", "connection", "rate_limited", "server", "client"]


@dataclass
class ChatError(Exception):
    kind: ErrorKind
    message: str
    status: int | None = None
    retry_after: float | None = None

    def __str__(self) -> str:
        return self.message


class ChatClient:
    def __init__(self, base_url: str, api_key: str, timeout: float) -> None:
        self.base_url = base_url.rstrip("/")
        self._url = f"{self.base_url}/chat/completions"
        self._headers = {"Authorization": f"Bearer {api_key}"}
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            connector = aiohttp.TCPConnector(limit=0, ttl_dns_cache=300)
            self._session = aiohttp.ClientSession(
                connector=connector, headers=self._headers, timeout=self._timeout
            )
        return self._session

    async def create(self, body: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        """The decoded JSON answer, or ChatError saying what went wrong; `timeout` (seconds)
        replaces the client's own for this request."""
        limit = self._timeout if timeout is None else aiohttp.ClientTimeout(total=timeout)
        try:
            async with self._open().post(self._url, json=body, timeout=limit) as response:
                if response.status >= 400:
                    raise _status_error(response.status, await response.text(), response)
                data = await response.json(content_type=None)
        except TimeoutError:
            seconds = limit.total
            raise ChatError("timeout", f"request timed out after {seconds:g} s") from None
        except aiohttp.ClientError as err:
            raise ChatError("connection", f"connection failed: {err}") from None
        except ValueError:
            raise ChatError("server", "answer is not JSON") from None
        if not isinstance(data, dict):
            raise ChatError("server", "answer is not a JSON object")
        return data

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            await asyncio.sleep(0)  # let the connector close its sockets


def _status_error(status: int, text: str, response: aiohttp.ClientResponse) -> ChatError:
    message = f"HTTP {status}: {text[:300]}"
    if status == 429:
        return ChatError("rate_limited", message, status, _retry_after(response))
    if status >= 500:
        return ChatError("server", message, status)
    return ChatError("client", message, status)


def _retry_after(response: aiohttp.ClientResponse) -> float | None:
    """Seconds from `retry-after-ms` (as OpenAI sends) or `Retry-After` (seconds)."""
    try:
        return float(response.headers["retry-after-ms"]) / 1000
    except (KeyError, ValueError):
        pass
    try:
        return float(response.headers.get("retry-after", ""))
    except ValueError:
        return None
