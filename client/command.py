"""What the `parley experiment` and `parley study` commands share: their one-line failure, the
options that name the server, how they read a TOML file, and how they print figures and tables."""

import argparse
import asyncio
import os
import signal
import sys
import tomllib
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

DEFAULT_URL = "http://127.0.0.1:8000"
ERROR = 2
"""The exit status after a CommandError."""


class CommandError(RuntimeError):
    """A failure to report in one line and exit with status 2."""


def run_command(command: Coroutine[Any, Any, int]) -> int:
    """The command's exit status, or ERROR once its CommandError is printed (Ctrl-C raises
    KeyboardInterrupt, as `interruptible` says)."""
    try:
        return asyncio.run(interruptible(command))
    except CommandError as err:
        print(f"parley: {err}", file=sys.stderr, flush=True)
        return ERROR


async def interruptible(command: Coroutine[Any, Any, int]) -> int:
    """Run `command`; Ctrl-C cancels it and raises KeyboardInterrupt.

    The loop's own signal handler is used, not asyncio.run's: that one runs only once the
    main thread wakes, and the signal may reach another thread (the progress bar's), leaving
    the loop asleep until the server next sends something. The loop's handler wakes it through
    its wakeup fd, whichever thread the signal reaches."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    interrupted = False

    def interrupt() -> None:
        nonlocal interrupted
        interrupted = True
        task.cancel()

    loop.add_signal_handler(signal.SIGINT, interrupt)
    try:
        return await command
    except asyncio.CancelledError:
        if interrupted:
            raise KeyboardInterrupt from None
        raise
    finally:
        loop.remove_signal_handler(signal.SIGINT)


def read_toml(
    path: Path, keys: frozenset[str], unknown_keys: str = "unknown keys"
) -> dict[str, Any]:
    """A TOML file's tables, refused when it cannot be read or parsed or holds a top-level key
    not in `keys` (said as `unknown_keys`)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise CommandError(f"cannot read {path}: {err}") from None
    except tomllib.TOMLDecodeError as err:
        raise CommandError(f"{path} is not valid TOML: {err}") from None
    unknown = set(data) - keys
    if unknown:
        raise CommandError(f"{path}: {unknown_keys} {sorted(unknown)}")
    return data


def add_server_options(command: argparse.ArgumentParser) -> None:
    """--url and --token, from $PARLEY_URL and $PARLEY_TOKEN unless given."""
    command.add_argument(
        "--url",
        default=os.environ.get("PARLEY_URL", DEFAULT_URL),
        help="the Parley server: its address or its /graphql address (default $PARLEY_URL "
        f"or {DEFAULT_URL})",
    )
    command.add_argument(
        "--token",
        default=os.environ.get("PARLEY_TOKEN"),
        help="the server's access token, if it needs one (default $PARLEY_TOKEN)",
    )


def estimate(figure: dict[str, Any]) -> str:
    """A figure as `0.62 [0.41, 0.80]`, or why it has no estimate or interval."""
    if figure["estimate"] is None:
        return f"- ({figure['reason']})"
    if figure["low"] is None:
        return f"{figure['estimate']:.3f} ({figure['reason']})"
    return f"{figure['estimate']:.3f} [{figure['low']:.3f}, {figure['high']:.3f}]"


def console() -> "Console":
    """Where tables go: as wide as the terminal, or 200 columns into a pipe or a file."""
    from rich.console import Console

    return Console(width=None if os.isatty(1) else 200)
