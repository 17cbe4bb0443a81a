"""Logs that follow an episode: every line carries what it is about.

`about(episode=..., attempt=..., worker=..., request=...)` sets those fields for everything the
current task logs (and the tasks it starts), so `grep <episode id>` over the API's and the
workers' logs gives the episode's whole life. Lines are plain text (`... episode=01J.. attempt=2`)
or, with PARLEY_LOG_FORMAT=json, one JSON object each (python-json-logger).
"""

import contextlib
import logging
import sys
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Literal

from pythonjsonlogger.json import JsonFormatter

LogFormat = Literal["plain", "json"]
FIELDS = ("episode", "attempt", "worker", "request")
_context: ContextVar[dict[str, str]] = ContextVar("parley_log_context", default={})  # noqa: B039


@contextlib.contextmanager
def about(**fields: object) -> Iterator[None]:
    """Add `fields` to every log line of the current task while the block runs."""
    token = _context.set({**_context.get(), **{k: str(v) for k, v in fields.items()}})
    try:
        yield
    finally:
        _context.reset(token)


def current() -> dict[str, str]:
    return dict(_context.get())


class WithContext(logging.Filter):
    """Copies the current task's fields onto each record (as attributes a formatter reads)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in _context.get().items():
            if not hasattr(record, key):
                setattr(record, key, value)
        return True


class PlainFormatter(logging.Formatter):
    """`time LEVEL logger message key=value ...` for the episode fields a record has."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = [f"{k}={getattr(record, k)}" for k in FIELDS if hasattr(record, k)]
        return " ".join([line, *fields]) if fields else line


def configure(log_format: LogFormat = "plain", level: int = logging.INFO) -> None:
    """One handler on the root logger (stderr), for Parley's loggers and uvicorn's."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(WithContext())
    if log_format == "json":
        handler.setFormatter(
            JsonFormatter(
                "%(asctime)s %(levelname)s %(name)s %(message)s",
                rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
            )
        )
    else:
        handler.setFormatter(PlainFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
